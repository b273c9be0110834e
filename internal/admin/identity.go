package admin

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Identity is who an admin request comes from, as its credential proves
// it — never as the request says.
type Identity struct {
	// Method is how it was proven: "unix" (the kernel's peer credentials
	// on the socket), "token" (a bearer token) or "cert" (a verified
	// client certificate).
	Method string
	// Name is the Unix user name (or "uid=N" when the uid has no name),
	// the token's name, or the certificate's name that is on the list.
	Name string
	// ReadOnly: the credential may only read (access.go).
	ReadOnly bool
}

// String is what a drain's "by", the log and the audit trail record:
// "unix:root", "token:prometheus", "cert:ops-alice".
func (id Identity) String() string { return id.Method + ":" + id.Name }

// conn is what the server learnt about a connection when it was accepted.
type conn struct {
	unix bool // a Unix socket connection: peer credentials below
	uid  uint32
	pid  int32
	user string // the uid's name, or "uid=N"
	err  error  // peer credentials could not be read
}

type connKey struct{}
type identityKey struct{}

// connContext records a connection's kind and, on the Unix socket, the
// peer's credentials (SO_PEERCRED: the uid of the process that
// connected, as the kernel saw it at connect).
func connContext(ctx context.Context, c net.Conn) context.Context {
	ci := &conn{}
	if uc, ok := c.(*net.UnixConn); ok {
		ci.unix = true
		ci.err = errors.New("no peer credentials")
		if raw, err := uc.SyscallConn(); err == nil {
			cerr := raw.Control(func(fd uintptr) {
				cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
				if err != nil {
					ci.err = fmt.Errorf("SO_PEERCRED: %w", err)
					return
				}
				ci.uid, ci.pid, ci.err = cred.Uid, cred.Pid, nil
			})
			if cerr != nil {
				ci.err = cerr
			}
		}
		if ci.err == nil {
			ci.user = userName(ci.uid)
		}
	}
	return context.WithValue(ctx, connKey{}, ci)
}

func connOf(ctx context.Context) *conn {
	if ci, ok := ctx.Value(connKey{}).(*conn); ok {
		return ci
	}
	return &conn{}
}

// IdentityFrom returns the identity the server proved for a request
// (handlers behind authentication only).
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// userName is the name of uid, or "uid=N" when it has none.
func userName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		return sanitize(u.Username)
	}
	return "uid=" + strconv.FormatUint(uint64(uid), 10)
}

// defaultPeerAllowed admits root and this process's own user: the socket's
// mode already keeps everyone else out, and this holds even if somebody
// loosens it.
func defaultPeerAllowed(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

// authError is a refused credential: the status to answer and a reason
// for the log (never containing a secret).
type authError struct {
	status int
	reason string
}

func (e *authError) Error() string { return e.reason }

// authenticate proves who r comes from:
//   - on the Unix socket, the peer's uid (admitted by peerAllowed);
//   - over TCP, a bearer token if the request carries an Authorization
//     header (a wrong one is refused even with a good certificate), else
//     a browser's session cookie (read-only, login.go), else a client
//     certificate verified against the client CA whose name is on one of
//     the lists.
func (s *Server) authenticate(r *http.Request) (Identity, error) {
	ci := connOf(r.Context())
	if ci.unix {
		if ci.err != nil {
			return Identity{}, &authError{http.StatusForbidden, "unix peer: " + ci.err.Error()}
		}
		if !s.peerAllowed(ci.uid) {
			return Identity{}, &authError{http.StatusForbidden, fmt.Sprintf("unix peer uid %d (%s) may not use the admin socket", ci.uid, ci.user)}
		}
		return Identity{Method: "unix", Name: ci.user}, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, secret, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") || secret == "" {
			return Identity{}, &authError{http.StatusUnauthorized, "authorization is not a bearer token"}
		}
		tok, ok := s.o.Tokens.Lookup(strings.TrimSpace(secret))
		if !ok {
			return Identity{}, &authError{http.StatusUnauthorized, "unknown bearer token"}
		}
		return Identity{Method: "token", Name: tok.Name, ReadOnly: tok.ReadOnly}, nil
	}
	if c, err := r.Cookie(cookieName); err == nil && c.Value != "" {
		// A browser's token (login.go): it only ever reads, whatever the
		// token may do elsewhere.
		tok, ok := s.o.Tokens.Lookup(c.Value)
		if !ok {
			return Identity{}, &authError{http.StatusUnauthorized, "unknown token in the session cookie (log in again)"}
		}
		return Identity{Method: "token", Name: tok.Name, ReadOnly: true}, nil
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return s.certs.identify(r.TLS.VerifiedChains[0][0])
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		return Identity{}, &authError{http.StatusUnauthorized, "client certificate not verified"}
	}
	return Identity{}, &authError{http.StatusUnauthorized, "no credentials"}
}

// certNames are the client certificates that may use the API, by name
// (gateway.admin_client_names, admin_readonly_client_names): chaining to
// the client CA is not enough.
type certNames struct {
	admin, readOnly map[string]bool // lower-case names; "*" for any
}

func newCertNames(admin, readOnly []string) certNames {
	set := func(list []string) map[string]bool {
		m := map[string]bool{}
		for _, n := range list {
			m[strings.ToLower(n)] = true
		}
		return m
	}
	return certNames{admin: set(admin), readOnly: set(readOnly)}
}

// certCandidates are the names a certificate goes by: its subject common
// name, then its DNS and e-mail subject alternative names. Names that
// could not be shown in a log as they are do not count.
func certCandidates(c *x509.Certificate) []string {
	var out []string
	for _, n := range append(append([]string{c.Subject.CommonName}, c.DNSNames...), c.EmailAddresses...) {
		if n != "" && len(n) <= 64 && sanitize(n) == n {
			out = append(out, n)
		}
	}
	return out
}

// identify finds a verified client certificate on the lists: a full
// admin's name first, then a read-only one.
func (cn certNames) identify(c *x509.Certificate) (Identity, error) {
	names := certCandidates(c)
	if len(names) == 0 {
		return Identity{}, &authError{http.StatusUnauthorized, "client certificate has no usable name"}
	}
	for _, l := range []struct {
		set      map[string]bool
		readOnly bool
	}{{cn.admin, false}, {cn.readOnly, true}} {
		for _, n := range names {
			if l.set[strings.ToLower(n)] || l.set["*"] {
				return Identity{Method: "cert", Name: n, ReadOnly: l.readOnly}, nil
			}
		}
	}
	return Identity{}, &authError{http.StatusForbidden, fmt.Sprintf("client certificate %q is not on admin_client_names or admin_readonly_client_names", names[0])}
}

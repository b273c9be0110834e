package ca

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

// Options are how a CA mints.
type Options struct {
	// Gateway names this gateway in key IDs.
	Gateway string
	// Validity is the certificate lifetime.
	Validity time.Duration
	// SourceAddresses, when set, are every certificate's source-address
	// instead of the address each login's node connection comes from: for
	// a NAT between the gateways and the nodes, where the node sees
	// another address than the gateway's own.
	SourceAddresses []string
}

// CA mints backend login certificates.
type CA struct {
	auth        Authority
	gateway     string
	validity    time.Duration
	fixedSource string // Options.SourceAddresses, joined; "" to use Login.Source
	now         func() time.Time
	rand        io.Reader
}

// New returns a CA signing with a.
func New(a Authority, o Options) *CA {
	return &CA{
		auth:        a,
		gateway:     o.Gateway,
		validity:    o.Validity,
		fixedSource: strings.Join(o.SourceAddresses, ","),
		now:         time.Now,
		rand:        rand.Reader,
	}
}

// PublicKey is the CA key login nodes list in TrustedUserCAKeys.
func (c *CA) PublicKey() ssh.PublicKey { return c.auth.PublicKey() }

// Kind is where the CA key lives: "file" or "kms".
func (c *CA) Kind() string { return c.auth.Kind() }

// Close releases what the CA key holds (a KMS client's idle connections),
// once nothing signs with this CA any more: after a reload, say.
func (c *CA) Close() {
	if cl, ok := c.auth.(interface{ Close() }); ok {
		cl.Close()
	}
}

// BackDate is how far before the gateway's now a certificate is valid
// from: how far the gateway's clock may be ahead of a login node's. Wide,
// because it costs nothing: the key is made for this one login and never
// leaves the gateway's memory, so a certificate valid "before" it existed
// lets nobody in earlier (the same reasoning as ssh-keygen's -V with a
// start well in the past). A gateway whose clock is behind a node's has
// only the lifetime (backend.cert_validity) as tolerance: that end bounds
// what a stolen certificate is worth and stays short.
const BackDate = time.Hour

// Login is what one backend certificate is for.
type Login struct {
	// Principal is the Unix user on the login node.
	Principal string
	// User is the directory identity (usually equal to Principal).
	User string
	// Session is the gateway's session ID, for correlating node logs (sshd
	// logs the key ID) with the audit trail.
	Session string
	Rights  policy.Rights
	// Source is this gateway's own address on the TCP connection to the
	// node — the client address sshd sees — and so the certificate's
	// source-address, unless Options.SourceAddresses says otherwise.
	Source netip.Addr
}

var (
	// ErrBadPrincipal rejects principals that could confuse sshd's
	// matching.
	ErrBadPrincipal = errors.New("invalid certificate principal")
	// ErrNoSource: no certificate is minted without a source-address.
	ErrNoSource = errors.New("no source address for the certificate")
	// ErrUnavailable: the CA key did not sign (a KMS outage or timeout).
	// No node will take the login until it signs again.
	ErrUnavailable = errors.New("user CA unavailable")
)

// Sign returns a signer for a fresh ephemeral key certified for one login.
// The key never leaves memory and dies with the session. ctx bounds a
// remote CA key's signature.
func (c *CA) Sign(ctx context.Context, l Login) (ssh.Signer, error) {
	if l.Principal == "" || strings.ContainsAny(l.Principal, ", \t\r\n\x00*?") {
		return nil, fmt.Errorf("%w: %q", ErrBadPrincipal, l.Principal)
	}
	source := c.fixedSource
	if source == "" {
		if !l.Source.IsValid() || l.Source.IsUnspecified() {
			return nil, fmt.Errorf("%w (login node connection's local address %v)", ErrNoSource, l.Source)
		}
		source = l.Source.Unmap().WithZone("").String()
	}
	// ECDSA P-256, not ed25519, for the node's sshd: see GenerateCAKeyFile.
	priv, err := ecdsa.GenerateKey(elliptic.P256(), c.rand)
	if err != nil {
		return nil, fmt.Errorf("generate session key: %w", err)
	}
	keySigner, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	serial, err := newSerial(c.rand)
	if err != nil {
		return nil, err
	}
	now := c.now()
	cert := &ssh.Certificate{
		Key:             keySigner.PublicKey(),
		Serial:          serial,
		CertType:        ssh.UserCert,
		KeyId:           KeyID(c.gateway, l.Session, l.User),
		ValidPrincipals: []string{l.Principal},
		ValidAfter:      uint64(now.Add(-BackDate).Unix()),
		ValidBefore:     uint64(now.Add(c.validity).Unix()),
		Permissions: ssh.Permissions{
			CriticalOptions: map[string]string{"source-address": source},
			Extensions:      extensions(l.Rights),
		},
	}
	start := time.Now()
	err = cert.SignCert(c.rand, c.auth.Signer(ctx))
	observeSign(c.auth.Kind(), time.Since(start), err)
	if err != nil {
		if ctx.Err() != nil { // the login was abandoned meanwhile
			return nil, fmt.Errorf("sign certificate: %w", ctx.Err())
		}
		return nil, fmt.Errorf("%w: %s key, after %v: %w", ErrUnavailable, c.auth.Kind(),
			time.Since(start).Round(time.Millisecond), err)
	}
	return ssh.NewCertSigner(cert, keySigner)
}

// newSerial is a random, non-zero serial. Random rather than, say, a
// gateway index in the high bits: gateways need no coordination (an
// autoscaled or re-imaged gateway has no index to be given, and two with
// the same one would collide silently), nothing survives a restart that
// could repeat, and serials reveal nothing about the login rate. Two
// serials of the 64-bit space are equal with probability 2^-64, a
// million certificates with about 3·10^-8. sshd scopes serials to the CA
// key (KRL "serial:" lines follow the CA), so with a CA per gateway they
// need only be unique within one gateway's; the key ID and the CA
// fingerprint, not the serial, say which gateway minted a login. Zero is
// never used: a KRL cannot revoke serial 0.
func newSerial(r io.Reader) (uint64, error) {
	var b [8]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, fmt.Errorf("certificate serial: %w", err)
		}
		if s := binary.BigEndian.Uint64(b[:]); s != 0 {
			return s, nil
		}
	}
}

// KeyID is a certificate's key ID, "frontdoor user=U session=S
// gateway=G": sshd logs it on every login ("Accepted certificate ID ..."),
// so a node's log names the gateway and the session of the audit trail.
// Each value keeps only characters that cannot end the field or forge
// another in a log line (letters, digits, . _ @ + -; others become '?'),
// at most 64 of them.
func KeyID(gateway, session, user string) string {
	return fmt.Sprintf("frontdoor user=%s session=%s gateway=%s", keyIDValue(user), keyIDValue(session), keyIDValue(gateway))
}

func keyIDValue(s string) string {
	if s == "" {
		return "-"
	}
	var b strings.Builder
	for n, r := range []rune(s) {
		if n == 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._@+-", r):
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// extensions grants on the node exactly what the policy grants at the
// gateway, so the node enforces it too.
func extensions(r policy.Rights) map[string]string {
	ext := map[string]string{"permit-pty": "", "permit-user-rc": ""}
	if r.Agent {
		ext["permit-agent-forwarding"] = ""
	}
	if r.X11 {
		ext["permit-X11-forwarding"] = ""
	}
	// OpenSSH has one switch for all port forwarding (TCP and Unix sockets,
	// both directions); the gateway enforces the finer split itself.
	if r.Local || r.Remote || r.StreamLocal {
		ext["permit-port-forwarding"] = ""
	}
	return ext
}

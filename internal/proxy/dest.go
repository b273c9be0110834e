package proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Where may a forward lead? Host names, addresses and socket paths in
// forwarding requests come from the client (or, for the forwarded-*
// channels, from the node) and end up in sshd's connect(2), bind(2) and
// logs. The gateway checks their form itself, whatever the policy allows
// and whatever today's OpenSSH would say: a host name with a NUL, a line
// end or other control characters, a port out of range, a socket path
// that is empty, too long for a socket address or carries control
// characters, or a payload with bytes left over, is refused with
// "administratively prohibited" and never reaches the node.
//
//   - direct-tcpip (ssh -L, -D): host, port 1-65535, originator address
//     and port (RFC 4254 7.2);
//   - direct-streamlocal@openssh.com (ssh -L to a socket): socket path,
//     reserved string and uint32 (OpenSSH PROTOCOL 2.4);
//   - tcpip-forward and cancel-tcpip-forward (ssh -R): bind address ("",
//     "*", "localhost", a host or an address), port 0-65535 (RFC 4254 7.1);
//   - streamlocal-forward@openssh.com and its cancel (ssh -R to a socket):
//     socket path;
//   - forwarded-tcpip and forwarded-streamlocal@openssh.com, from the
//     node: the same fields, as sshd reports them.

// errBadDestination is wrapped by every refusal of a malformed destination.
var errBadDestination = errors.New("malformed forwarding destination")

// maxHostLen bounds a host name (DNS: 253, plus room for an IPv6 zone).
const maxHostLen = 255

// maxSocketPath is the longest Unix socket path Linux binds (sun_path less
// its NUL).
const maxSocketPath = 107

// Payloads of the forwarding channels and requests.
type (
	tcpipOpen struct { // direct-tcpip, forwarded-tcpip
		Host       string
		Port       uint32
		OriginHost string
		OriginPort uint32
	}
	directStreamOpen struct {
		Path      string
		Reserved  string
		Reserved2 uint32
	}
	forwardedStreamOpen struct {
		Path     string
		Reserved string
	}
	tcpipForward struct {
		Addr string
		Port uint32
	}
	streamForward struct {
		Path string
	}
)

func badDest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadDestination, fmt.Sprintf(format, args...))
}

// checkChannel checks the destination of a forwarding channel open (t,
// extra); other channel types pass.
func checkChannel(t string, extra []byte) error {
	switch t {
	case chanDirectTCPIP, chanForwardedTCPIP:
		var m tcpipOpen
		if err := ssh.Unmarshal(extra, &m); err != nil {
			return badDest("%s payload: %v", t, err)
		}
		if err := checkHost(m.Host, t == chanForwardedTCPIP); err != nil {
			return err
		}
		if m.Port > 65535 || t == chanDirectTCPIP && m.Port == 0 {
			return badDest("port %d", m.Port)
		}
		if err := checkHost(m.OriginHost, true); err != nil {
			return fmt.Errorf("originator: %w", err)
		}
		if m.OriginPort > 65535 {
			return badDest("originator port %d", m.OriginPort)
		}
	case chanDirectStream:
		var m directStreamOpen
		if err := ssh.Unmarshal(extra, &m); err != nil {
			return badDest("%s payload: %v", t, err)
		}
		return checkPath(m.Path)
	case chanForwardedStream:
		var m forwardedStreamOpen
		if err := ssh.Unmarshal(extra, &m); err != nil {
			return badDest("%s payload: %v", t, err)
		}
		return checkPath(m.Path)
	}
	return nil
}

// checkGlobal checks the bind address of a remote forwarding request (t,
// payload); other requests pass.
func checkGlobal(t string, payload []byte) error {
	switch t {
	case reqTCPIPForward, reqCancelTCPIP:
		var m tcpipForward
		if err := ssh.Unmarshal(payload, &m); err != nil {
			return badDest("%s payload: %v", t, err)
		}
		if m.Port > 65535 {
			return badDest("port %d", m.Port)
		}
		return checkHost(m.Addr, true)
	case reqStreamForward, reqCancelStream:
		var m streamForward
		if err := ssh.Unmarshal(payload, &m); err != nil {
			return badDest("%s payload: %v", t, err)
		}
		return checkPath(m.Path)
	}
	return nil
}

// checkHost accepts an IP address (IPv6 optionally in brackets, with a
// zone), or a DNS name: dot-separated labels of letters, digits, '-' and
// '_', 1 to 63 bytes, none starting with '-', an optional final dot.
// bind also accepts "" and "*" (every address), as a bind address or an
// originator may be.
func checkHost(h string, bind bool) error {
	if bind && (h == "" || h == "*") {
		return nil
	}
	if h == "" || len(h) > maxHostLen {
		return badDest("host name of %d bytes", len(h))
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c <= ' ' || c >= 0x7f {
			return badDest("host name %q: byte %#02x", h, c)
		}
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		if a, err := netip.ParseAddr(h[1 : len(h)-1]); err == nil && a.Is6() {
			return nil
		}
		return badDest("host name %q: not an IPv6 address in brackets", h)
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return nil
	}
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' {
			return badDest("host name %q: label %q", h, l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return badDest("host name %q: %q", h, c)
			}
		}
	}
	return nil
}

// checkPath accepts a socket path: 1 to maxSocketPath bytes, no NUL or
// other control character.
func checkPath(p string) error {
	if p == "" || len(p) > maxSocketPath {
		return badDest("socket path of %d bytes", len(p))
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < ' ' || c == 0x7f {
			return badDest("socket path %q: byte %#02x", p, c)
		}
	}
	return nil
}

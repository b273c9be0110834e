package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// loginVia connects from local address from, writes prefix, then tries an
// SSH login as alice (whose key is valid; no node is up, so a proven login
// ends with a banner). It returns the banner seen.
func (tg *testGateway) loginVia(t *testing.T, from, prefix string) (string, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", tg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if prefix != "" {
		if _, err := io.WriteString(c, prefix); err != nil {
			t.Fatal(err)
		}
	}
	var banner strings.Builder
	_, _, _, err = ssh.NewClientConn(c, tg.addr, &ssh.ClientConfig{
		User: "alice", Auth: []ssh.AuthMethod{ssh.PublicKeys(tg.userKey)},
		HostKeyCallback: ssh.FixedHostKey(tg.hostKey),
		BannerCallback:  func(m string) error { banner.WriteString(m); return nil },
	})
	return banner.String(), err
}

// srcOfLastAuth is the src of the newest auth event in the audit file.
func (tg *testGateway) srcOfLastAuth(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(tg.audit)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var ev struct{ Type, Src string }
		if json.Unmarshal([]byte(lines[i]), &ev) == nil && ev.Type == "auth" {
			return ev.Src
		}
	}
	t.Fatalf("no auth event in %s", b)
	return ""
}

func TestProxyProtocol(t *testing.T) {
	tg := startTestGateway(t, `[{name: login1, addr: "127.0.0.1:1", pool: general}]`, `proxy_protocol_from: ["127.0.0.1/32"]`)

	// A trusted balancer's header names the client.
	if banner, _ := tg.loginVia(t, "127.0.0.1", "PROXY TCP4 203.0.113.7 127.0.0.1 5555 22\r\n"); !strings.Contains(banner, "no login node") {
		t.Fatalf("trusted PROXY v1 login: banner %q", banner)
	}
	if src := tg.srcOfLastAuth(t); src != "203.0.113.7:5555" {
		t.Fatalf("audit src = %q, want the PROXY source", src)
	}

	// From the trusted address, a header is required.
	if _, err := tg.loginVia(t, "127.0.0.1", ""); err == nil {
		t.Fatal("trusted source without a PROXY header was served")
	}
	// Garbage instead of a header: refused, nothing served.
	if _, err := tg.loginVia(t, "127.0.0.1", "PROXY TCP4 999.1.1.1 x y z\r\n"); err == nil {
		t.Fatal("malformed PROXY header was accepted")
	}

	// An untrusted client's PROXY line is never believed.
	_, err := tg.loginVia(t, "127.0.0.2", "PROXY TCP4 198.51.100.1 127.0.0.1 4444 22\r\n")
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("untrusted login hung: %v", err)
	}
	if src := tg.srcOfLastAuth(t); !strings.HasPrefix(src, "127.0.0.2:") {
		t.Fatalf("audit src = %q: an untrusted PROXY header was believed", src)
	}
}

func FuzzProxyHeader(f *testing.F) {
	f.Add([]byte("PROXY TCP4 203.0.113.7 127.0.0.1 5555 22\r\n"))
	f.Add([]byte("PROXY UNKNOWN\r\n"))
	f.Add([]byte("\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c\x7f\x00\x00\x01\x7f\x00\x00\x01\x00\x01\x00\x02"))
	f.Add([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
	f.Fuzz(func(t *testing.T, prefix []byte) {
		server, client := net.Pipe()
		defer client.Close()
		ln := &oneConnListener{c: server, addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222}}
		pl := withProxyProtocol(ln, proxyTestTrusted)
		go func() {
			client.SetDeadline(time.Now().Add(time.Second))
			client.Write(prefix)
			client.Close()
		}()
		c, err := pl.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if err := checkProxyHeader(c); err != nil {
			return
		}
		// Accepted: the address must come from a well-formed header.
		if !strings.HasPrefix(string(prefix), "PROXY ") && !strings.HasPrefix(string(prefix), "\r\n\r\n\x00\r\nQUIT\n") {
			t.Fatalf("accepted without a header: %q", prefix)
		}
	})
}

// proxyTestTrusted trusts the pipe's fake remote address.
var proxyTestTrusted = mustPrefixes("127.0.0.1/32")

type oneConnListener struct {
	c    net.Conn
	addr net.Addr
	done bool
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if l.done {
		return nil, net.ErrClosed
	}
	l.done = true
	return addrConn{l.c, l.addr}, nil
}
func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.addr }

// addrConn gives a pipe a TCP remote address, as the policy needs one.
type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

func mustPrefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

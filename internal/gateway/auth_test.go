package gateway

import (
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// meta is the ssh.ConnMetadata of one userauth request.
type meta struct{ user string }

func (m meta) User() string          { return m.user }
func (m meta) SessionID() []byte     { return []byte("session") }
func (m meta) ClientVersion() []byte { return []byte("SSH-2.0-test") }
func (m meta) ServerVersion() []byte { return []byte(ServerVersion) }
func (m meta) RemoteAddr() net.Addr  { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 5000} }
func (m meta) LocalAddr() net.Addr   { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 22} }

// testConn is the auth state of one client connection to tg, driven by
// calling the callbacks in the order a (hostile) client chooses.
func testConn(t *testing.T, tg *testGateway) *conn {
	t.Helper()
	return testConnFrom(t, tg, meta{}.RemoteAddr())
}

// testConnFrom is testConn for a client at from.
func testConnFrom(t *testing.T, tg *testGateway, from net.Addr) *conn {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	c := newConn(tg.gw.closing, tg.gw, tg.gw.set.Load(), addrConn{a, from})
	t.Cleanup(c.abort)
	return c
}

// authUsers returns the users of every auth event in the audit file.
func authUsers(t *testing.T, path string) []string {
	t.Helper()
	b, _ := os.ReadFile(path)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev struct{ Type, User, Result, Reason string }
		if json.Unmarshal([]byte(line), &ev) == nil && (ev.Type == "auth" || ev.Type == "backend") {
			out = append(out, ev.User+":"+ev.Result)
		}
	}
	return out
}

// The attack of the issue that made this design: bob queries his own key
// as bob, sends "none" as alice, then signs as bob. x/crypto calls only
// VerifiedPublicKeyCallback for the signed request (its cache holds bob's
// query); the login must be bob's, never alice's.
func TestQueryNoneSignLandsAsKeyOwner(t *testing.T) {
	tg := startTestGateway(t, `[{name: login1, addr: "127.0.0.1:1", pool: general}]`)
	c := testConn(t, tg)
	bob := tg.bobKey.PublicKey()
	perms, err := c.authPublicKey(meta{"bob"}, bob)
	if err != nil || perms.Extensions[extPrincipal] != "bob" {
		t.Fatalf("query for bob's own key: %v %v", perms, err)
	}
	c.authNone(meta{"alice"})
	_, err = c.authVerifiedKey(meta{"bob"}, bob, perms, "ssh-ed25519")
	// No node answers in this test, so the login ends in a refusal; what
	// matters is whose login it was.
	if err == nil || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("signed request: %v", err)
	}
	for _, u := range authUsers(t, tg.audit) {
		if strings.HasPrefix(u, "alice") {
			t.Fatalf("a login for alice was attempted with bob's key: %v", authUsers(t, tg.audit))
		}
	}
	if us := authUsers(t, tg.audit); len(us) == 0 || !strings.HasPrefix(us[len(us)-1], "bob:") {
		t.Fatalf("audit %v, want bob's login last", us)
	}
}

// Permissions made for one (user, key) never serve another user name,
// and a key is always checked against the account the request names.
func TestSignedRequestBoundToItsQuery(t *testing.T) {
	tg := startTestGateway(t, `[{name: login1, addr: "127.0.0.1:1", pool: general}]`)
	bob := tg.bobKey.PublicKey()
	tests := []struct {
		name   string
		run    func(c *conn) error
		reason string
	}{
		{"bob's query, alice's signature", func(c *conn) error {
			perms, _ := c.authPublicKey(meta{"bob"}, bob)
			_, err := c.authVerifiedKey(meta{"alice"}, bob, perms, "ssh-ed25519")
			return err
		}, "does not match its query"},
		{"forged permissions naming alice", func(c *conn) error {
			perms := &ssh.Permissions{Extensions: map[string]string{extTyped: "alice", extPrincipal: "alice", extKeyFP: ssh.FingerprintSHA256(bob)}}
			_, err := c.authVerifiedKey(meta{"alice"}, bob, perms, "ssh-ed25519")
			return err
		}, "key not authorized"},
		{"permissions for another key", func(c *conn) error {
			perms, _ := c.authPublicKey(meta{"alice"}, tg.userKey.PublicKey())
			_, err := c.authVerifiedKey(meta{"alice"}, bob, perms, "ssh-ed25519")
			return err
		}, "does not match its query"},
		{"no permissions", func(c *conn) error {
			_, err := c.authVerifiedKey(meta{"bob"}, bob, nil, "ssh-ed25519")
			return err
		}, "does not match its query"},
		{"alice+node typed, bob's key", func(c *conn) error {
			_, err := c.authPublicKey(meta{"alice+login1"}, bob)
			return err
		}, "key not authorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConn(t, tg)
			if err := tt.run(c); err == nil {
				t.Fatal("accepted")
			}
			if c.result != nil {
				t.Fatalf("a login result exists: %+v", c.result)
			}
			b, _ := os.ReadFile(tg.audit)
			if !strings.Contains(string(b), tt.reason) {
				t.Fatalf("audit has no %q:\n%s", tt.reason, b)
			}
		})
	}
}

// A request for another user discards the dial started for the previous
// one.
func TestNameChangeDiscardsSpeculation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never speaks SSH
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tg := startTestGateway(t, `[{name: login1, addr: "`+ln.Addr().String()+`", pool: general}]`)
	c := testConn(t, tg)
	if _, err := c.authPublicKey(meta{"bob"}, tg.bobKey.PublicKey()); err != nil {
		t.Fatal(err)
	}
	if c.spec == nil || c.spec.principal != "bob" {
		t.Fatalf("no speculative dial for bob: %+v", c.spec)
	}
	c.authNone(meta{"alice"})
	if c.spec != nil {
		t.Fatalf("dial for bob survived a request as alice: %+v", c.spec)
	}
}

package adversarial_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
)

// Forwarding destinations with NUL or control characters, and other
// malformed ones, are refused by the gateway itself (issue 21), whatever
// the policy allows (here forward_to: any, every forwarding right) and
// whatever the node's sshd would say. A raw client, logged in as bob, asks
// for each; the well-formed ones beside them go through.
func TestMalformedForwardingRefused(t *testing.T) {
	g := newGateway(t, gwOptions{Rules: []policy.Rule{{Name: ruleName, Groups: []string{group}, Pools: []string{pool},
		ForwardTo: []string{policy.ForwardToAny}}}})
	rc := dialRaw(t, g, "")
	userauth(t, rc)
	expect(t, "query", send(t, rc, "query", rawssh.PublicKeyQuery(bobName, bob.pub, "")), rawssh.ReplyPKOK)
	expect(t, "sign", send(t, rc, "sign", signed(t, rc, bobName, bob)), rawssh.ReplySuccess)
	cl, err := rc.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	type tcpip struct {
		Host       string
		Port       uint32
		OriginHost string
		OriginPort uint32
	}
	type stream struct {
		Path      string
		Reserved  string
		Reserved2 uint32
	}
	// A login node's sshd, as -L reaches it.
	host, port, _ := net.SplitHostPort(nodes[0].Addr)
	p, _ := strconv.Atoi(port)
	ch, reqs, err := cl.OpenChannel("direct-tcpip", rawssh.Marshal(tcpip{host, uint32(p), "127.0.0.1", 40000}))
	if err != nil {
		t.Fatalf("well-formed direct-tcpip: %v", err)
	}
	go rawssh.DiscardRequests(reqs)
	ch.Close()
	for _, c := range []struct {
		name, typ string
		payload   []byte
	}{
		{"NUL in the host", "direct-tcpip", rawssh.Marshal(tcpip{"localhost\x00.evil.example", 22, "127.0.0.1", 40000})},
		{"line end in the host", "direct-tcpip", rawssh.Marshal(tcpip{"localhost\r\nX-Injected: 1", 22, "127.0.0.1", 40000})},
		{"escape sequence in the host", "direct-tcpip", rawssh.Marshal(tcpip{"\x1b[2Jlocalhost", 22, "127.0.0.1", 40000})},
		{"port 0", "direct-tcpip", rawssh.Marshal(tcpip{"localhost", 0, "127.0.0.1", 40000})},
		{"control character in the originator", "direct-tcpip", rawssh.Marshal(tcpip{"localhost", 22, "127.0.0.1\n", 40000})},
		{"bytes after the payload", "direct-tcpip", append(rawssh.Marshal(tcpip{"localhost", 22, "127.0.0.1", 40000}), 0, 0)},
		{"NUL in a socket path", "direct-streamlocal@openssh.com", rawssh.Marshal(stream{"/run/sshd.pid\x00", "", 0})},
		{"abstract socket", "direct-streamlocal@openssh.com", rawssh.Marshal(stream{"\x00abstract", "", 0})},
	} {
		_, _, err := cl.OpenChannel(c.typ, c.payload)
		var oe *rawssh.OpenChannelError
		if !errors.As(err, &oe) || oe.Reason != rawssh.Prohibited || !strings.Contains(oe.Message, "malformed") {
			t.Errorf("%s (%s): %v, want refused as malformed", c.name, c.typ, err)
		}
	}

	type bind struct {
		Addr string
		Port uint32
	}
	if ok, _, err := cl.SendRequest("tcpip-forward", true, rawssh.Marshal(bind{"localhost", 0})); err != nil || !ok {
		t.Fatalf("well-formed tcpip-forward: %v %v", ok, err)
	}
	for _, c := range []struct {
		name, typ string
		payload   []byte
	}{
		{"NUL in the bind address", "tcpip-forward", rawssh.Marshal(bind{"localhost\x00", 0})},
		{"line end in the bind address", "tcpip-forward", rawssh.Marshal(bind{"0.0.0.0\n", 8080})},
		{"cancel with a control character", "cancel-tcpip-forward", rawssh.Marshal(bind{"local\x07host", 0})},
		{"port 70000", "tcpip-forward", rawssh.Marshal(bind{"localhost", 70000})},
		{"socket path with a NUL", "streamlocal-forward@openssh.com", rawssh.Marshal(struct{ Path string }{"/tmp/adv\x00.sock"})},
		{"socket path with a line end", "streamlocal-forward@openssh.com", rawssh.Marshal(struct{ Path string }{"/tmp/adv\n.sock"})},
	} {
		if ok, _, err := cl.SendRequest(c.typ, true, c.payload); err != nil || ok {
			t.Errorf("%s (%s): ok %v, err %v, want refused", c.name, c.typ, ok, err)
		}
	}
	// The connection is still good: bob's session runs.
	s, err := cl.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if out, err := s.Output("id -un"); err != nil || strings.TrimSpace(string(out)) != bobName {
		t.Fatalf("id -un after the refusals: %q %v", out, err)
	}
}

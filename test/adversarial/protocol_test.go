package adversarial_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
)

// Messages out of order and names no client should send (issue 8's
// hostile client). Each is refused cleanly — a failure reply or the
// connection closed, never a login, never a crash — and the gateway goes
// on serving others: bob logs in after every case.
func TestOutOfOrderMessages(t *testing.T) {
	channelOpen := rawssh.Marshal(struct {
		Type          string `sshtype:"90"`
		PeersID       uint32
		PeersWindow   uint32
		MaxPacketSize uint32
	}{"session", 0, 1 << 21, 1 << 15})
	globalRequest := rawssh.Marshal(struct {
		Type      string `sshtype:"80"`
		WantReply bool
		Addr      string
		Port      uint32
	}{"tcpip-forward", true, "0.0.0.0", 2222})

	for _, tt := range []struct {
		name string
		run  func(t *testing.T, rc *rawssh.RawConn)
	}{
		{"channel open before the service request", func(t *testing.T, rc *rawssh.RawConn) {
			mustClose(t, rc, channelOpen)
		}},
		{"channel open during auth", func(t *testing.T, rc *rawssh.RawConn) {
			userauth(t, rc)
			expect(t, "query", send(t, rc, "query", rawssh.PublicKeyQuery(bobName, bob.pub, "")), rawssh.ReplyPKOK)
			mustClose(t, rc, channelOpen)
		}},
		{"global request during auth", func(t *testing.T, rc *rawssh.RawConn) {
			userauth(t, rc)
			mustClose(t, rc, globalRequest)
		}},
		{"userauth before the service request", func(t *testing.T, rc *rawssh.RawConn) {
			if r, err := rc.Auth(signed(t, rc, bobName, bob)); err == nil {
				t.Fatalf("got %s, want the connection closed", r.Kind)
			}
		}},
		{"service ssh-connection requested before userauth", func(t *testing.T, rc *rawssh.RawConn) {
			if err := rc.RequestService("ssh-connection"); err == nil {
				t.Fatal("ssh-connection accepted before authentication")
			}
		}},
		{"userauth for another service", func(t *testing.T, rc *rawssh.RawConn) {
			userauth(t, rc)
			req := signed(t, rc, bobName, bob)
			req.Service = "ssh-userauth"
			if r, err := rc.Auth(req); err == nil {
				t.Fatalf("service %q: got %s, want the connection closed", req.Service, r.Kind)
			}
		}},
		{"second KEXINIT between query and signature", func(t *testing.T, rc *rawssh.RawConn) {
			// A rekey is legal at any time; the login that follows must
			// still be bob's own, signed over the first session ID.
			userauth(t, rc)
			expect(t, "query", send(t, rc, "query", rawssh.PublicKeyQuery(bobName, bob.pub, "")), rawssh.ReplyPKOK)
			rc.Rekey()
			expect(t, "none alice", send(t, rc, "none alice", rawssh.NoneRequest(aliceName)), rawssh.ReplyFailure)
			rc.Rekey()
			expect(t, "sign", send(t, rc, "sign", signed(t, rc, bobName, bob)), rawssh.ReplySuccess)
			if got, _ := whoAmI(t, rc); got != bobName {
				t.Fatalf("after a rekey mid-auth the session is %q", got)
			}
		}},
		{"empty and NUL passwords (an LDAP bind without a password is anonymous)", func(t *testing.T, _ *rawssh.RawConn) {
			for _, p := range []string{"", "\x00", "\x00" + alice.password, " "} {
				rc := dialRaw(t, shared, "")
				userauth(t, rc)
				expect(t, "password "+strconv.Quote(p), send(t, rc, "password", rawssh.PasswordRequest(aliceName, p)), rawssh.ReplyFailure)
				r := send(t, rc, "kbd-int", rawssh.KeyboardInteractiveRequest(aliceName))
				expect(t, "kbd-int", r, rawssh.ReplyInfoRequest)
				r, err := rc.Respond(p)
				if err != nil {
					t.Fatal(err)
				}
				expect(t, "kbd-int answer "+strconv.Quote(p), r, rawssh.ReplyFailure)
				rc.Close()
			}
		}},
		{"keyboard-interactive challenge answered with bob's signed request", func(t *testing.T, rc *rawssh.RawConn) {
			// The signed request is swallowed as the answer; what follows
			// must still be bob's own login, not alice's.
			userauth(t, rc)
			expect(t, "query bob", send(t, rc, "query bob", rawssh.PublicKeyQuery(bobName, bob.pub, "")), rawssh.ReplyPKOK)
			expect(t, "kbd-int alice", send(t, rc, "kbd-int alice", rawssh.KeyboardInteractiveRequest(aliceName)), rawssh.ReplyInfoRequest)
			r, err := rc.Auth(signed(t, rc, bobName, bob))
			if err == nil && r.Kind == rawssh.ReplySuccess {
				t.Fatal("a signed request in place of a challenge answer logged in")
			}
			if err != nil {
				return // closed: refused cleanly
			}
			expect(t, "sign bob", send(t, rc, "sign bob", signed(t, rc, bobName, bob)), rawssh.ReplySuccess)
			if got, _ := whoAmI(t, rc); got != bobName {
				t.Fatalf("the session is %q", got)
			}
		}},
		{"huge user names", func(t *testing.T, rc *rawssh.RawConn) {
			userauth(t, rc)
			huge := strings.Repeat("a", 200<<10)
			for _, req := range []rawssh.AuthRequest{
				rawssh.NoneRequest(huge),
				rawssh.PublicKeyQuery(huge, bob.pub, ""),
				rawssh.PasswordRequest(huge, strings.Repeat("p", 40<<10)),
				rawssh.PublicKeyQuery(strings.Repeat("b", 257), bob.pub, ""),
				rawssh.PublicKeyQuery(bobName+"+"+strings.Repeat("n", 1000), bob.pub, ""),
			} {
				expect(t, "huge "+req.Method, send(t, rc, "huge "+req.Method, req), rawssh.ReplyFailure)
			}
		}},
		{"NUL and control characters in names", func(t *testing.T, _ *rawssh.RawConn) {
			// One connection per name: max_auth_tries counts refused
			// queries too.
			for _, name := range []string{
				bobName + "\x00", bobName + "\x00" + aliceName, aliceName + "\x00" + bobName,
				bobName + "\n", bobName + "\r\n" + `{"type":"auth","user":"` + aliceName + `","result":"ok"}`,
				"\x1b[2J" + bobName, bobName + "\x7f", bobName + "\u200b", bobName + "+login1\x00",
				bobName + "*", "*", bobName + ")(cn=*", "\xff\xfe",
			} {
				rc := dialRaw(t, shared, "")
				userauth(t, rc)
				r := send(t, rc, "query "+name, rawssh.PublicKeyQuery(name, bob.pub, ""))
				if r.Kind == rawssh.ReplyPKOK {
					// Accepted as bob's name: then it must at least be
					// bob, and say so.
					r = send(t, rc, "sign "+name, signed(t, rc, name, bob))
					if r.Kind == rawssh.ReplySuccess {
						got, _ := whoAmI(t, rc)
						t.Errorf("name %q with bob's key logged in as %q", name, got)
					}
				}
				rc.Close()
				if r.Kind != rawssh.ReplyFailure {
					t.Errorf("name %q with bob's key: %s, want refused", name, r.Kind)
				}
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc := dialRaw(t, shared, "")
			tt.run(t, rc)
			rc.Close()
			loginAs(t, shared, "", bob)
		})
	}

	// Nothing a client sent reaches the logs unescaped: every audit and
	// log line is one JSON object without raw control characters, and no
	// audited user name is longer than the gateway's bound.
	for _, p := range []string{shared.AuditFile(), strings.TrimSuffix(shared.AuditFile(), "audit.jsonl") + "gateway.log"} {
		checkLines(t, p)
	}
	for _, e := range audits(t, shared) {
		if len(e.User) > 300 {
			t.Errorf("audit: user name of %d bytes", len(e.User))
		}
		if e.Type == audit.TypeAuth && e.Result == "ok" && e.User != bobName && e.User != aliceName {
			t.Errorf("audit: login ok for %q", e.User)
		}
	}
}

// mustClose sends p and expects the gateway to end the connection.
func mustClose(t *testing.T, rc *rawssh.RawConn, p []byte) {
	t.Helper()
	if err := rc.WritePacket(p); err != nil {
		return // closed already
	}
	for {
		q, err := rc.ReadPacket()
		if err != nil {
			return
		}
		if len(q) > 0 && (q[0] == 91 || q[0] == 81 || q[0] == 52) { // open confirm, request success, auth success
			t.Fatalf("message %d answered with %d", p[0], q[0])
		}
	}
}

// checkLines checks that every line of a JSON-lines file is one object and
// carries no raw control characters.
func checkLines(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 4<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		var v map[string]any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Errorf("%s:%d: not one JSON object: %v", path, n, err)
		}
		if i := bytes.IndexFunc(line, func(r rune) bool { return unicode.IsControl(r) }); i >= 0 {
			t.Errorf("%s:%d: raw control character at %d", path, n, i)
		}
		if len(line) > 64<<10 {
			t.Errorf("%s:%d: %d bytes", path, n, len(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Errorf("%s: %v", path, err)
	}
}

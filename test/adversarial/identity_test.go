package adversarial_test

import (
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
)

// One login is one identity (issue 8, part 1). bob holds only bob's key
// (and knows alice's name and public key, which are no secret). Every
// sequence below either logs bob in as bob — the node's `id -un` says
// adv-bob and the audit log agrees — or is refused; none ever reaches
// alice's account.
//
// The original attack: x/crypto caches the last accepted (user, key)
// query and does not ask PublicKeyCallback again for a matching signed
// request, while the gateway took the identity from the latest request's
// name. query(bob) / none(alice) / sign(bob) then logged bob in as alice.
func TestOneLoginOneIdentity(t *testing.T) {
	type step struct {
		name string
		req  func(rc *rawssh.RawConn) rawssh.AuthRequest
		want rawssh.ReplyKind
		// answer, for a keyboard-interactive step, is sent in reply to
		// the challenge; the reply to it must be want.
		answer *string
	}
	query := func(user string, a *actor) func(*rawssh.RawConn) rawssh.AuthRequest {
		return func(*rawssh.RawConn) rawssh.AuthRequest { return rawssh.PublicKeyQuery(user, a.pub, "") }
	}
	sign := func(user string, a *actor) func(*rawssh.RawConn) rawssh.AuthRequest {
		return func(rc *rawssh.RawConn) rawssh.AuthRequest {
			req, err := rc.PublicKeySigned(user, a.signer, "")
			if err != nil {
				t.Fatal(err)
			}
			return req
		}
	}
	none := func(user string) func(*rawssh.RawConn) rawssh.AuthRequest {
		return func(*rawssh.RawConn) rawssh.AuthRequest { return rawssh.NoneRequest(user) }
	}
	password := func(user, p string) func(*rawssh.RawConn) rawssh.AuthRequest {
		return func(*rawssh.RawConn) rawssh.AuthRequest { return rawssh.PasswordRequest(user, p) }
	}
	kbdint := func(user string) func(*rawssh.RawConn) rawssh.AuthRequest {
		return func(*rawssh.RawConn) rawssh.AuthRequest { return rawssh.KeyboardInteractiveRequest(user) }
	}
	// signedFor signs for one user and names another in the request.
	signedFor := func(signUser, sendUser string, a *actor) func(*rawssh.RawConn) rawssh.AuthRequest {
		return func(rc *rawssh.RawConn) rawssh.AuthRequest {
			req := sign(signUser, a)(rc)
			req.User = sendUser
			return req
		}
	}
	// withKey sends a's signature over a request naming other's public
	// key: a forgery.
	withKey := func(user string, a, other *actor) func(*rawssh.RawConn) rawssh.AuthRequest {
		return func(rc *rawssh.RawConn) rawssh.AuthRequest {
			req := sign(user, a)(rc)
			good := sign(user, other)(rc) // same layout, other's key
			// Payload: bool, string algo, string key, string sig.
			// Keep other's key, put a's signature in.
			req.Payload = append(good.Payload[:len(good.Payload)-sigLen(good.Payload)], req.Payload[len(req.Payload)-sigLen(req.Payload):]...)
			return req
		}
	}
	wrong := "Wrong-Passw0rd!"
	A, B := aliceName, bobName
	for _, tt := range []struct {
		name  string
		steps []step
		// ok: the last step logs in (as bob); else everything is refused.
		ok bool
	}{
		{"query(bob)/none(alice)/sign(bob)", []step{
			{"query bob", query(B, bob), rawssh.ReplyPKOK, nil},
			{"none alice", none(A), rawssh.ReplyFailure, nil},
			{"sign bob", sign(B, bob), rawssh.ReplySuccess, nil},
		}, true},
		{"none(alice)/query(bob)/none(alice)/sign(bob)", []step{
			{"none alice", none(A), rawssh.ReplyFailure, nil},
			{"query bob", query(B, bob), rawssh.ReplyPKOK, nil},
			{"none alice", none(A), rawssh.ReplyFailure, nil},
			{"none alice+login2", none(A + "+login2"), rawssh.ReplyFailure, nil},
			{"sign bob", sign(B, bob), rawssh.ReplySuccess, nil},
		}, true},
		{"query(bob)/password(alice)/sign(bob)", []step{
			{"query bob", query(B, bob), rawssh.ReplyPKOK, nil},
			{"password alice", password(A, wrong), rawssh.ReplyFailure, nil},
			{"sign bob", sign(B, bob), rawssh.ReplySuccess, nil},
		}, true},
		{"query(bob)/keyboard-interactive(alice)/sign(bob)", []step{
			{"query bob", query(B, bob), rawssh.ReplyPKOK, nil},
			{"kbd-int alice", kbdint(A), rawssh.ReplyFailure, &wrong},
			{"sign bob", sign(B, bob), rawssh.ReplySuccess, nil},
		}, true},
		{"query(alice, bob's key)/sign(bob)", []step{
			{"query alice with bob's key", query(A, bob), rawssh.ReplyFailure, nil},
			{"sign bob", sign(B, bob), rawssh.ReplySuccess, nil},
		}, true},
		{"query(alice, alice's public key)/query(bob)/none(alice)/sign(bob)", []step{
			// Alice's public key is public: the query is accepted and
			// cached by x/crypto, but nobody can sign for it.
			{"query alice with her key", query(A, alice), rawssh.ReplyPKOK, nil},
			{"query bob", query(B, bob), rawssh.ReplyPKOK, nil},
			{"none alice", none(A), rawssh.ReplyFailure, nil},
			{"sign bob", sign(B, bob), rawssh.ReplySuccess, nil},
		}, true},
		{"query(bob)/query(alice, alice's key)/sign(bob)", []step{
			{"query bob", query(B, bob), rawssh.ReplyPKOK, nil},
			{"query alice with her key", query(A, alice), rawssh.ReplyPKOK, nil},
			{"sign bob", sign(B, bob), rawssh.ReplySuccess, nil},
		}, true},
		{"query(bob+login1)/sign(bob+login2)", []step{
			{"query bob+login1", query(B+"+login1", bob), rawssh.ReplyPKOK, nil},
			{"none alice+login1", none(A + "+login1"), rawssh.ReplyFailure, nil},
			{"sign bob+login2", sign(B+"+login2", bob), rawssh.ReplySuccess, nil},
		}, true},
		{"signed as alice with bob's key", []step{
			{"query bob", query(B, bob), rawssh.ReplyPKOK, nil},
			{"sign alice with bob's key", sign(A, bob), rawssh.ReplyFailure, nil},
		}, false},
		{"query(alice, alice's key)/sign(alice, bob's key)", []step{
			{"query alice with her key", query(A, alice), rawssh.ReplyPKOK, nil},
			{"sign alice with bob's key", sign(A, bob), rawssh.ReplyFailure, nil},
		}, false},
		{"signature over bob, request names alice", []step{
			{"query bob", query(B, bob), rawssh.ReplyPKOK, nil},
			{"query alice with bob's key", query(A, bob), rawssh.ReplyFailure, nil},
			{"sign(bob) sent as alice", signedFor(B, A, bob), closed, nil},
		}, false},
		{"bob's signature on alice's public key", []step{
			{"query alice with her key", query(A, alice), rawssh.ReplyPKOK, nil},
			{"forged sign alice", withKey(A, bob, alice), closed, nil},
		}, false},
		{"user change after a refusal and a PK_OK", []step{
			{"password alice", password(A, wrong), rawssh.ReplyFailure, nil},
			{"query bob", query(B, bob), rawssh.ReplyPKOK, nil},
			{"kbd-int alice", kbdint(A), rawssh.ReplyFailure, &wrong},
			{"none alice", none(A), rawssh.ReplyFailure, nil},
			{"sign bob as alice+login1", signedFor(B, A+"+login1", bob), closed, nil},
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(audits(t, shared))
			rc := dialRaw(t, shared, "")
			userauth(t, rc)
			for _, s := range tt.steps {
				if s.want == closed {
					// x/crypto ends the connection on a signature that
					// does not verify.
					if r, err := rc.Auth(s.req(rc)); err == nil {
						t.Fatalf("%s: got %s, want the connection closed", s.name, r.Kind)
					}
					break
				}
				r := send(t, rc, s.name, s.req(rc))
				if s.answer != nil {
					expect(t, s.name, r, rawssh.ReplyInfoRequest)
					if len(r.Info.Prompts) != 1 {
						t.Fatalf("%s: %d prompts", s.name, len(r.Info.Prompts))
					}
					var err error
					if r, err = rc.Respond(*s.answer); err != nil {
						t.Fatalf("%s: respond: %v", s.name, err)
					}
				}
				for _, b := range r.Banners {
					if strings.Contains(b, aliceName) {
						t.Errorf("%s: banner names alice: %q", s.name, b)
					}
				}
				expect(t, s.name, r, s.want)
			}
			if !tt.ok {
				// Refused: nobody was logged in meanwhile (tests do
				// not run in parallel; the events are written before
				// the client is answered). The end of an earlier
				// sequence's session may be recorded meanwhile: an end
				// logs nobody in.
				evs := audits(t, shared)[before:]
				for _, e := range evs {
					if e.Result == "ok" && e.Type != "session.end" {
						t.Errorf("audit: %s %q ok during a refused sequence:\n%s", e.Type, e.User, dump(evs))
					}
				}
				return
			}
			got, session := whoAmI(t, rc)
			if got != bobName {
				t.Fatalf("bob, holding only bob's key, is %q on the node", got)
			}
			evs := sessionEvents(t, shared, session)
			oks := 0
			for _, e := range evs {
				if e.Result != "ok" {
					continue
				}
				if e.User != bobName {
					t.Errorf("audit: %s for %q with result ok, want only %s:\n%s", e.Type, e.User, bobName, dump(evs))
				}
				if e.Type == audit.TypeAuth {
					oks++
					if e.KeyFP != rawssh.FingerprintSHA256(bob.pub) {
						t.Errorf("audit: login ok with key %s, bob's is %s", e.KeyFP, rawssh.FingerprintSHA256(bob.pub))
					}
				}
			}
			if oks != 1 {
				t.Errorf("audit: %d successful auth events in the session, want 1:\n%s", oks, dump(evs))
			}
		})
	}
	// The gateway still serves bob, and no sequence ever logged anyone
	// in as alice.
	loginAs(t, shared, "", bob)
	for _, e := range audits(t, shared) {
		if e.User == aliceName && e.Result == "ok" {
			t.Errorf("audit: alice logged in: %+v", e)
		}
	}
}

// closed is a step's outcome when the server must end the connection.
const closed rawssh.ReplyKind = -1

// sigLen is the length of the last field (string sig) of a signed
// publickey payload: bool, string algo, string key, string sig.
func sigLen(p []byte) int {
	rest := p[1:]
	for range 2 {
		n := int(rest[0])<<24 | int(rest[1])<<16 | int(rest[2])<<8 | int(rest[3])
		rest = rest[4+n:]
	}
	return len(rest)
}

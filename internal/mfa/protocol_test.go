package mfa

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"
)

// The client's side of the RADIUS state machine against a server that
// misbehaves on purpose: an adversary on the network (forged or stray
// datagrams) and an authentic server that breaks the protocol.

var testSecret = []byte("s3cret-for-tests")

// adversary is a UDP server answering each request with what answer
// returns (any number of datagrams, in order).
type adversary struct {
	pc   net.PacketConn
	reqs chan []byte
}

func newAdversary(t *testing.T, answer func(req []byte) [][]byte) *adversary {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &adversary{pc: pc, reqs: make(chan []byte, 16)}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			req := bytes.Clone(buf[:n])
			select {
			case a.reqs <- req:
			default:
			}
			for _, d := range answer(req) {
				pc.WriteTo(d, from)
			}
		}
	}()
	return a
}

func (a *adversary) addr() string { return a.pc.LocalAddr().String() }

// response builds a response to req: code, attributes, and a
// Message-Authenticator (first) when withMA; then mutate may spoil it.
func response(t *testing.T, req []byte, code radius.Code, withMA bool, attrs func(p *radius.Packet)) []byte {
	t.Helper()
	p := &radius.Packet{Code: code, Identifier: req[1], Secret: testSecret}
	copy(p.Authenticator[:], req[4:20])
	if withMA {
		p.Add(rfc2869.MessageAuthenticator_Type, make([]byte, 16))
	}
	if attrs != nil {
		attrs(p)
	}
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if withMA {
		m := hmac.New(md5.New, testSecret)
		m.Write(b) // authenticator field = request authenticator, MA zero
		m.Sum(b[22:22:38])
	}
	signResponse(b, req)
	return b
}

// signResponse writes b's Response Authenticator for req.
func signResponse(b, req []byte) {
	h := md5.New()
	h.Write(b[:4])
	h.Write(req[4:20])
	h.Write(b[20:])
	h.Write(testSecret)
	h.Sum(b[4:4:20])
}

func testClient(servers ...string) *Client {
	cfg := DefaultConfig()
	cfg.Servers = servers
	cfg.Timeout = 1500 * time.Millisecond
	cfg.Retransmit = 500 * time.Millisecond
	return newClient(cfg, testSecret)
}

func TestRequestCarriesSignedMessageAuthenticatorFirst(t *testing.T) {
	c := testClient("127.0.0.1:1")
	req, err := c.request("alice", "123456", "192.0.2.7:50000", []byte("st"))
	if err != nil {
		t.Fatal(err)
	}
	if req[0] != byte(radius.CodeAccessRequest) || req[20] != 80 || req[21] != 18 {
		t.Fatalf("request does not start with a Message-Authenticator: % x", req[:22])
	}
	cp := bytes.Clone(req)
	clear(cp[22:38])
	m := hmac.New(md5.New, testSecret)
	m.Write(cp)
	if !hmac.Equal(m.Sum(nil), req[22:38]) {
		t.Fatal("Message-Authenticator does not verify")
	}
	p, err := radius.Parse(req, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if pw := rfc2865.UserPassword_GetString(p); pw != "123456" {
		t.Errorf("User-Password decrypts to %q", pw)
	}
	if bytes.Contains(req, []byte("123456")) {
		t.Error("the code travels in clear")
	}
	if got := rfc2865.CallingStationID_GetString(p); got != "192.0.2.7" {
		t.Errorf("Calling-Station-Id %q", got)
	}
	if got := rfc2865.State_Get(p); string(got) != "st" {
		t.Errorf("State %q", got)
	}
	if _, err := c.request("alice", strings.Repeat("1", 129), "", nil); !errors.Is(err, ErrAnswerTooLong) {
		t.Errorf("a 129-byte answer: %v", err)
	}
}

// Forged and stray datagrams are dropped without ending the wait: the
// real answer that follows them is taken.
func TestForgedResponsesAreDroppedAndTheRealOneTaken(t *testing.T) {
	a := newAdversary(t, func(req []byte) [][]byte {
		good := response(t, req, radius.CodeAccessAccept, true, nil)
		wrongID := bytes.Clone(good)
		wrongID[1]++
		wrongAuth := bytes.Clone(good)
		wrongAuth[5] ^= 1
		wrongMA := response(t, req, radius.CodeAccessAccept, true, nil)
		wrongMA[30] ^= 1 // inside the MA value, signed over again
		signResponse(wrongMA, req)
		noMA := response(t, req, radius.CodeAccessAccept, false, nil)
		short := good[:19]
		return [][]byte{wrongID, wrongAuth, wrongMA, noMA, short, good}
	})
	r, err := testClient(a.addr()).Start(context.Background(), "alice", "123456", "")
	if err != nil || r.Outcome != Accept {
		t.Fatalf("got %v, %v; want accept after the forgeries", r.Outcome, err)
	}
}

func TestOnlyForgeriesTimeOut(t *testing.T) {
	for name, spoil := range map[string]func(req, good []byte) []byte{
		"wrong authenticator": func(_, g []byte) []byte { g[4] ^= 0xff; return g },
		"wrong identifier":    func(_, g []byte) []byte { g[1]++; return g },
		"no message-authenticator": func(req, _ []byte) []byte {
			return response(t, req, radius.CodeAccessAccept, false, nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			a := newAdversary(t, func(req []byte) [][]byte {
				return [][]byte{spoil(req, response(t, req, radius.CodeAccessAccept, true, nil))}
			})
			start := time.Now()
			_, err := testClient(a.addr()).Start(context.Background(), "alice", "123456", "")
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if !strings.Contains(err.Error(), "dropped") {
				t.Errorf("the error does not say what was dropped: %v", err)
			}
			if d := time.Since(start); d < time.Second {
				t.Errorf("gave up after %v, before the timeout", d)
			}
		})
	}
}

// An authentic response with a code no Access-Request may get, or a
// challenge without State, ends the exchange with a protocol error.
func TestAuthenticButWrongAnswers(t *testing.T) {
	for name, build := range map[string]func(req []byte) []byte{
		"accounting response": func(req []byte) []byte { return response(t, req, radius.CodeAccountingResponse, true, nil) },
		"access request":      func(req []byte) []byte { return response(t, req, radius.CodeAccessRequest, true, nil) },
		"challenge without state": func(req []byte) []byte {
			return response(t, req, radius.CodeAccessChallenge, true, func(p *radius.Packet) {
				rfc2865.ReplyMessage_SetString(p, "Code: ")
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			a := newAdversary(t, func(req []byte) [][]byte { return [][]byte{build(req)} })
			_, err := testClient(a.addr()).Start(context.Background(), "alice", "123456", "")
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a ProtocolError", err)
			}
		})
	}
}

// A challenge's State goes back unchanged, to the server that sent it, and
// only for the same user.
func TestChallengeStateRoundTrip(t *testing.T) {
	state := []byte("opaque-state-\x00\xff")
	a := newAdversary(t, func(req []byte) [][]byte {
		p, _ := radius.Parse(req, testSecret)
		st := rfc2865.State_Get(p)
		switch {
		case st == nil:
			return [][]byte{response(t, req, radius.CodeAccessChallenge, true, func(p *radius.Packet) {
				rfc2865.State_Set(p, state)
				rfc2865.ReplyMessage_SetString(p, "Enter the code \x1b[31mnow\x1b[0m: ")
				rfc2869.Prompt_Set(p, rfc2869.Prompt_Value_Echo)
			})}
		case bytes.Equal(st, state) && rfc2865.UserPassword_GetString(p) == "654321":
			return [][]byte{response(t, req, radius.CodeAccessAccept, true, nil)}
		}
		return [][]byte{response(t, req, radius.CodeAccessReject, true, nil)}
	})
	c := testClient(a.addr())
	ctx := context.Background()
	r, err := c.Start(ctx, "alice", "push", "")
	if err != nil || r.Outcome != Challenge {
		t.Fatalf("start: %v %v", r.Outcome, err)
	}
	if strings.Contains(r.Message, "\x1b") || !strings.Contains(r.Message, "Enter the code") || !r.Echo {
		t.Errorf("challenge message %q echo %v", r.Message, r.Echo)
	}
	if _, err := c.Continue(ctx, r, "bob", "654321", ""); err == nil {
		t.Error("another user answered alice's challenge")
	}
	if _, err := c.Continue(ctx, Reply{Outcome: Challenge, Server: a.addr(), user: "alice"}, "alice", "654321", ""); err == nil {
		t.Error("a challenge without State was continued")
	}
	got, err := c.Continue(ctx, r, "alice", "654321", "")
	if err != nil || got.Outcome != Accept {
		t.Fatalf("continue: %v %v", got.Outcome, err)
	}
	wrong, err := c.Continue(ctx, r, "alice", "000000", "")
	if err != nil || wrong.Outcome != Reject {
		t.Fatalf("wrong code: %v %v", wrong.Outcome, err)
	}
}

// A server that refuses (nothing listens) is passed over at once; one that
// does not answer is tried last for dead_time.
func TestFailover(t *testing.T) {
	good := newAdversary(t, func(req []byte) [][]byte { return [][]byte{response(t, req, radius.CodeAccessAccept, true, nil)} })
	silent := newAdversary(t, func([]byte) [][]byte { return nil })
	closed, _ := net.ListenPacket("udp", "127.0.0.1:0")
	refused := closed.LocalAddr().String()
	closed.Close()

	c := testClient(refused, silent.addr(), good.addr())
	start := time.Now()
	r, err := c.Start(context.Background(), "alice", "123456", "")
	if err != nil || r.Outcome != Accept || r.Server != good.addr() {
		t.Fatalf("got %+v, %v", r, err)
	}
	if d := time.Since(start); d < time.Second || d > 4*time.Second {
		t.Errorf("first login took %v: want about one timeout (the silent server)", d)
	}
	start = time.Now()
	if _, err := c.Start(context.Background(), "alice", "123456", ""); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("second login took %v: the silent server was not passed over", d)
	}
}

// FuzzCheckResponse: no datagram makes the check panic, and whatever it
// accepts is a well-formed answer to the request.
func FuzzCheckResponse(f *testing.F) {
	c := testClient("127.0.0.1:1")
	req, _ := c.request("alice", "123456", "", nil)
	t := &testing.T{}
	f.Add(response(t, req, radius.CodeAccessAccept, true, nil))
	f.Add(response(t, req, radius.CodeAccessChallenge, true, func(p *radius.Packet) { rfc2865.State_Set(p, []byte("x")) }))
	f.Add([]byte{2, 0, 0, 20})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := checkResponse(b, req, testSecret, true)
		if err != nil {
			return
		}
		if n := int(binary.BigEndian.Uint16(b[2:4])); n > len(b) || p.Identifier != req[1] {
			t.Fatalf("accepted a malformed response % x", b)
		}
	})
}

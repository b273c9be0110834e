// Package mfa checks a second factor with RADIUS, the one protocol that
// Duo's Authentication Proxy, Microsoft's NPS extension for Entra MFA,
// privacyIDEA and FreeRADIUS all speak.
//
// One check is a short exchange (RFC 2865): an Access-Request carrying the
// user's answer (a code, or "push") as User-Password; the server answers
// Access-Accept, Access-Reject, or Access-Challenge with a prompt and an
// opaque State, which the next request (the answer to that prompt) must
// carry back to the same server.
//
// The network between the gateway and the server is hostile. Every
// request carries a Message-Authenticator (HMAC-MD5, RFC 3579), first
// among its attributes (BlastRADIUS, CVE-2024-3596). A response is taken
// only if it answers this request's Identifier, its Response Authenticator
// proves the shared secret over this request's authenticator, its
// Message-Authenticator (required by default) verifies, and its code is one
// an Access-Request may get. Anything else is dropped and the wait goes on
// (a forged datagram must not cut off the real answer); an authentic
// response with an impossible code or a challenge without State fails the
// exchange. A challenge's State never comes from the SSH client: the
// gateway holds it (Reply) and only the same user's next answer sends it
// back.
//
// The package does not log; the secret is in no error and no String().
package mfa

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"layeh.com/radius"
	"layeh.com/radius/rfc2865"
	"layeh.com/radius/rfc2869"
)

// Outcome is what a server decided.
type Outcome int

// Outcomes of one exchange.
const (
	Reject Outcome = iota
	Accept
	Challenge
)

func (o Outcome) String() string {
	switch o {
	case Accept:
		return "accept"
	case Challenge:
		return "challenge"
	}
	return "reject"
}

// Reply is a server's answer. For a Challenge, Message is the prompt to
// show and the Reply carries what Continue needs (the server and its
// State), out of the client's reach.
type Reply struct {
	Outcome Outcome
	// Message is the server's Reply-Message(s), joined; a challenge's
	// prompt. May be empty.
	Message string
	// Echo says the answer to a challenge may be shown as typed (Prompt
	// attribute, RFC 2869).
	Echo bool
	// Server answered this exchange.
	Server string

	user  string
	state []byte
}

// ErrUnavailable is returned when no server gave a usable answer.
var ErrUnavailable = errors.New("mfa: no RADIUS server answered")

// ProtocolError is an authentic response that breaks the protocol, or a
// reason responses were dropped.
type ProtocolError struct {
	Server string
	Reason string
}

func (e *ProtocolError) Error() string { return "mfa: RADIUS server " + e.Server + ": " + e.Reason }

// Client talks to the configured servers. Safe for concurrent use.
type Client struct {
	cfg    Config
	secret []byte
	now    func() time.Time

	mu   sync.Mutex           // mu protects the following
	dead map[string]time.Time // server → tried last until
}

// New builds a client from a validated configuration, reading the secret.
func New(cfg Config) (*Client, error) {
	secret, err := readSecret(cfg.SecretFile)
	if err != nil {
		return nil, err
	}
	return newClient(cfg, secret), nil
}

func newClient(cfg Config, secret []byte) *Client {
	return &Client{cfg: cfg, secret: secret, now: time.Now, dead: map[string]time.Time{}}
}

// Config is the configuration the client was built with.
func (c *Client) Config() Config { return c.cfg }

// Start sends user's first answer, to the first server that answers
// (servers that recently did not are tried last). src is the SSH
// client's address (Calling-Station-Id).
func (c *Client) Start(ctx context.Context, user, answer, src string) (Reply, error) {
	var errs []error
	for _, s := range c.order() {
		r, err := c.exchange(ctx, s, user, answer, src, nil)
		if err == nil {
			c.mark(s, true)
			return r, nil
		}
		if ctx.Err() != nil {
			return Reply{}, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		}
		c.mark(s, false)
		errs = append(errs, err)
	}
	return Reply{}, fmt.Errorf("%w: %w", ErrUnavailable, errors.Join(errs...))
}

// Continue answers the challenge prev to the server that sent it. user
// must be the user prev was for.
func (c *Client) Continue(ctx context.Context, prev Reply, user, answer, src string) (Reply, error) {
	if prev.Outcome != Challenge || len(prev.state) == 0 || prev.Server == "" {
		return Reply{}, errors.New("mfa: Continue needs a challenge")
	}
	if prev.user != user {
		return Reply{}, errors.New("mfa: a challenge is answered only for the user it was sent for")
	}
	r, err := c.exchange(ctx, prev.Server, user, answer, src, prev.state)
	if err != nil {
		return Reply{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return r, nil
}

// order is the servers to try: the ones not recently silent first, each
// group in configured order.
func (c *Client) order() []string {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var alive, dead []string
	for _, s := range c.cfg.Servers {
		if until, ok := c.dead[s]; ok && now.Before(until) {
			dead = append(dead, s)
		} else {
			alive = append(alive, s)
		}
	}
	return append(alive, dead...)
}

func (c *Client) mark(server string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		delete(c.dead, server)
	} else {
		c.dead[server] = c.now().Add(c.cfg.DeadTime)
	}
}

// maxAnswer is the longest User-Password RFC 2865 allows.
const maxAnswer = 128

// ErrAnswerTooLong is an answer RADIUS cannot carry; it counts as wrong.
var ErrAnswerTooLong = errors.New("mfa: answer longer than 128 bytes")

// request builds the wire form of an Access-Request with the
// Message-Authenticator as its first attribute, signed.
func (c *Client) request(user, answer, src string, state []byte) ([]byte, error) {
	if len(answer) > maxAnswer {
		return nil, ErrAnswerTooLong
	}
	p := radius.New(radius.CodeAccessRequest, c.secret)
	p.Add(rfc2869.MessageAuthenticator_Type, make([]byte, md5.Size))
	if err := rfc2865.UserName_SetString(p, user); err != nil {
		return nil, fmt.Errorf("mfa: user name: %w", err)
	}
	if err := rfc2865.UserPassword_SetString(p, answer); err != nil {
		return nil, fmt.Errorf("mfa: answer: %w", err)
	}
	rfc2865.NASIdentifier_SetString(p, c.cfg.NASIdentifier)
	rfc2865.NASPortType_Set(p, rfc2865.NASPortType_Value_Virtual)
	if host, _, err := net.SplitHostPort(src); err == nil {
		rfc2865.CallingStationID_SetString(p, host)
	}
	if state != nil {
		rfc2865.State_Set(p, state)
	}
	wire, err := p.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("mfa: encode request: %w", err)
	}
	if wire[20] != byte(rfc2869.MessageAuthenticator_Type) || wire[21] != 18 {
		return nil, errors.New("mfa: internal: Message-Authenticator is not the first attribute")
	}
	m := hmac.New(md5.New, c.secret)
	m.Write(wire)
	m.Sum(wire[22:22:38])
	return wire, nil
}

// errDropped marks a datagram that is not an answer to this request.
var errDropped = errors.New("dropped")

// checkResponse verifies resp as the answer to req (both wire form): see
// the package doc. An error wrapping errDropped means "not our answer,
// keep waiting"; any other error means the authentic answer is unusable.
func checkResponse(resp, req, secret []byte, requireMA bool) (*radius.Packet, error) {
	if len(resp) < 20 {
		return nil, fmt.Errorf("%w: %d bytes", errDropped, len(resp))
	}
	n := int(binary.BigEndian.Uint16(resp[2:4]))
	if n < 20 || n > len(resp) || n > radius.MaxPacketLength {
		return nil, fmt.Errorf("%w: length field %d of a %d-byte datagram", errDropped, n, len(resp))
	}
	resp = resp[:n]
	if resp[1] != req[1] {
		return nil, fmt.Errorf("%w: identifier %d, want %d", errDropped, resp[1], req[1])
	}
	h := md5.New()
	h.Write(resp[:4])
	h.Write(req[4:20])
	h.Write(resp[20:])
	h.Write(secret)
	if !hmac.Equal(h.Sum(nil), resp[4:20]) {
		return nil, fmt.Errorf("%w: wrong Response Authenticator (wrong secret, or forged)", errDropped)
	}
	attrs, err := radius.ParseAttributes(resp[20:])
	if err != nil {
		return nil, fmt.Errorf("%w: malformed attributes: %v", errDropped, err)
	}
	var ma []byte
	count := 0
	off := 20
	for off < len(resp) {
		t, l := resp[off], int(resp[off+1])
		if radius.Type(t) == rfc2869.MessageAuthenticator_Type {
			count++
			if l != 18 {
				return nil, fmt.Errorf("%w: Message-Authenticator of %d bytes", errDropped, l-2)
			}
			ma = resp[off+2 : off+18]
			// The HMAC is over the response with the request's
			// authenticator in place and this value zeroed.
			cp := bytes.Clone(resp)
			copy(cp[4:20], req[4:20])
			clear(cp[off+2 : off+18])
			m := hmac.New(md5.New, secret)
			m.Write(cp)
			if !hmac.Equal(m.Sum(nil), ma) {
				return nil, fmt.Errorf("%w: wrong Message-Authenticator", errDropped)
			}
		}
		off += l
	}
	switch {
	case count > 1:
		return nil, fmt.Errorf("%w: %d Message-Authenticators", errDropped, count)
	case count == 0 && requireMA:
		return nil, fmt.Errorf("%w: no Message-Authenticator (mfa.require_message_authenticator)", errDropped)
	}
	p := &radius.Packet{Code: radius.Code(resp[0]), Identifier: resp[1], Secret: secret, Attributes: attrs}
	copy(p.Authenticator[:], resp[4:20])
	switch p.Code {
	case radius.CodeAccessAccept, radius.CodeAccessReject, radius.CodeAccessChallenge:
	default:
		return nil, fmt.Errorf("%s is not an answer to an Access-Request", p.Code)
	}
	return p, nil
}

// exchange sends one request to server and waits, retransmitting, for
// its answer, at most Timeout.
func (c *Client) exchange(ctx context.Context, server, user, answer, src string, state []byte) (Reply, error) {
	req, err := c.request(user, answer, src, state)
	if err != nil {
		return Reply{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "udp", server)
	if err != nil {
		return Reply{}, &ProtocolError{Server: server, Reason: err.Error()}
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	deadline, _ := ctx.Deadline()
	var lastDrop error
	buf := make([]byte, radius.MaxPacketLength+1)
	for {
		if _, err := nc.Write(req); err != nil {
			return Reply{}, &ProtocolError{Server: server, Reason: err.Error()}
		}
		resend := c.now().Add(c.cfg.Retransmit)
		if resend.After(deadline) {
			resend = deadline
		}
		for {
			nc.SetReadDeadline(resend)
			n, err := nc.Read(buf)
			switch {
			case err != nil && ctx.Err() != nil:
				why := "no answer within " + c.cfg.Timeout.String()
				if lastDrop != nil {
					why += "; dropped: " + strings.TrimPrefix(lastDrop.Error(), errDropped.Error()+": ")
				}
				return Reply{}, &ProtocolError{Server: server, Reason: why}
			case err != nil && errors.Is(err, syscall.ECONNREFUSED):
				// ICMP port unreachable: nothing listens there; the
				// next server need not wait for a timeout.
				return Reply{}, &ProtocolError{Server: server, Reason: "connection refused: no RADIUS server listens there"}
			case err != nil && isTimeout(err):
			case err != nil:
				return Reply{}, &ProtocolError{Server: server, Reason: err.Error()}
			}
			if err != nil {
				break // retransmit
			}
			p, err := checkResponse(buf[:n], req, c.secret, c.cfg.RequireMessageAuthenticator)
			if errors.Is(err, errDropped) {
				lastDrop = err
				continue
			}
			if err != nil {
				return Reply{}, &ProtocolError{Server: server, Reason: err.Error()}
			}
			return c.reply(server, user, p)
		}
	}
}

func (c *Client) reply(server, user string, p *radius.Packet) (Reply, error) {
	msgs, _ := rfc2865.ReplyMessage_GetStrings(p)
	r := Reply{Server: server, Message: sanitize(strings.Join(msgs, "\n")), user: user}
	switch p.Code {
	case radius.CodeAccessAccept:
		r.Outcome = Accept
	case radius.CodeAccessReject:
		r.Outcome = Reject
	case radius.CodeAccessChallenge:
		r.Outcome = Challenge
		st, err := rfc2865.State_Lookup(p)
		if err != nil || len(st) == 0 {
			return Reply{}, &ProtocolError{Server: server, Reason: "Access-Challenge without State"}
		}
		r.state = bytes.Clone(st)
		if pr, err := rfc2869.Prompt_Lookup(p); err == nil {
			r.Echo = pr == rfc2869.Prompt_Value_Echo
		}
	}
	return r, nil
}

// sanitize keeps a server's message printable for a terminal: no escape
// sequences reach the user's screen.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || (r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0)) {
			return r
		}
		return -1
	}, s)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

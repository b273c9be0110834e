// This file is not part of golang.org/x/crypto/ssh: it is the one API the
// frontdoor adversarial suite adds to its copy (see README.md).

package ssh

import (
	"errors"
	"fmt"
	"io"
	"net"
)

// RawConn is a client connection that stopped after the key exchange, so
// that its user authentication can be driven one message at a time: any
// user, service, method and payload, in any order, even ones a
// well-behaved client never sends. A RawConn is not safe for concurrent
// use.
type RawConn struct {
	conn *connection
	t    *handshakeTransport // conn.transport
	rand io.Reader
	// pending is the method of the request whose reply is awaited: reply
	// number 60 is PK_OK after a publickey query and INFO_REQUEST after
	// keyboard-interactive.
	pending string
	authed  bool
}

// NewRawConn runs the version and key exchange on nc (verifying the host
// key with config.HostKeyCallback) and returns before anything else is
// sent, not even the ssh-userauth service request. config.User and
// config.Auth are not used. On error nc is closed.
func NewRawConn(nc net.Conn, addr string, config *ClientConfig) (*RawConn, error) {
	full := *config
	full.SetDefaults()
	if full.HostKeyCallback == nil {
		nc.Close()
		return nil, errors.New("ssh: must specify HostKeyCallback")
	}
	c := &connection{sshConn: sshConn{conn: nc, user: full.User}}
	if full.ClientVersion != "" {
		c.clientVersion = []byte(full.ClientVersion)
	} else {
		c.clientVersion = []byte(packageVersion)
	}
	var err error
	if c.serverVersion, err = exchangeVersions(nc, c.clientVersion); err != nil {
		nc.Close()
		return nil, fmt.Errorf("ssh: version exchange: %w", err)
	}
	t := newClientTransport(newTransport(nc, full.Rand, true), c.clientVersion, c.serverVersion, &full, addr, nc.RemoteAddr())
	c.transport = t
	if err := t.waitSession(); err != nil {
		nc.Close()
		return nil, fmt.Errorf("ssh: key exchange: %w", err)
	}
	c.sessionID = c.transport.getSessionID()
	return &RawConn{conn: c, t: t, rand: full.Rand}, nil
}

// SessionID is the exchange hash of the first key exchange, which
// public-key signatures cover.
func (r *RawConn) SessionID() []byte { return r.conn.sessionID }

// Close closes the connection.
func (r *RawConn) Close() error { return r.conn.sshConn.conn.Close() }

// RequestService sends SSH_MSG_SERVICE_REQUEST for name and waits for the
// accept (skipping an SSH_MSG_EXT_INFO).
func (r *RawConn) RequestService(name string) error {
	if err := r.conn.transport.writePacket(Marshal(&serviceRequestMsg{name})); err != nil {
		return err
	}
	for {
		p, err := r.conn.transport.readPacket()
		if err != nil {
			return err
		}
		if len(p) > 0 && p[0] == msgExtInfo {
			continue
		}
		var accept serviceAcceptMsg
		if err := Unmarshal(p, &accept); err != nil {
			return err
		}
		if accept.Service != name {
			return fmt.Errorf("ssh: server accepted service %q, asked for %q", accept.Service, name)
		}
		return nil
	}
}

// WritePacket sends one packet (message number first) as is, out of any
// order. Only KEXINIT and NEWKEYS are refused (see Rekey).
func (r *RawConn) WritePacket(p []byte) error { return r.conn.transport.writePacket(p) }

// ReadPacket reads the next packet from the server.
func (r *RawConn) ReadPacket() ([]byte, error) { return r.conn.transport.readPacket() }

// Rekey starts a new key exchange (a second KEXINIT) now, in whatever
// state the authentication is; the exchange runs in the background as the
// next packets are read and written.
func (r *RawConn) Rekey() { r.t.requestKeyExchange() }

// AuthRequest is one SSH_MSG_USERAUTH_REQUEST. Payload is the
// method-specific part after the method name, exactly as sent.
type AuthRequest struct {
	User    string
	Service string // "" means ssh-connection
	Method  string
	Payload []byte
}

// NoneRequest is method "none" for user.
func NoneRequest(user string) AuthRequest {
	return AuthRequest{User: user, Method: "none"}
}

// PasswordRequest is method "password" (no password change) for user.
func PasswordRequest(user, password string) AuthRequest {
	return AuthRequest{User: user, Method: "password", Payload: Marshal(struct {
		Change   bool
		Password string
	}{false, password})}
}

// PublicKeyQuery asks whether user may use pub, without a signature. algo
// "" is the key's type.
func PublicKeyQuery(user string, pub PublicKey, algo string) AuthRequest {
	if algo == "" {
		algo = pub.Type()
	}
	return AuthRequest{User: user, Method: "publickey", Payload: Marshal(struct {
		HasSig bool
		Algo   string
		PubKey []byte
	}{false, algo, pub.Marshal()})}
}

// PublicKeySigned is a signed publickey request for user with signer's
// key, the signature computed over this connection's session ID for
// exactly (user, ssh-connection, algo, key), as RFC 4252 section 7 has it.
// Changing the returned request's User makes the signature cover another
// user than the one the request names. algo "" is the key's type.
func (r *RawConn) PublicKeySigned(user string, signer Signer, algo string) (AuthRequest, error) {
	pub := signer.PublicKey()
	if algo == "" {
		algo = pub.Type()
	}
	data := buildDataSignedForAuth(r.SessionID(), userAuthRequestMsg{User: user, Service: serviceSSH, Method: "publickey"}, algo, pub.Marshal())
	var sig *Signature
	var err error
	if as, ok := signer.(AlgorithmSigner); ok {
		sig, err = as.SignWithAlgorithm(r.rand, data, underlyingAlgo(algo))
	} else {
		sig, err = signer.Sign(r.rand, data)
	}
	if err != nil {
		return AuthRequest{}, err
	}
	return AuthRequest{User: user, Method: "publickey", Payload: Marshal(struct {
		HasSig bool
		Algo   string
		PubKey []byte
		Sig    []byte
	}{true, algo, pub.Marshal(), Marshal(sig)})}, nil
}

// KeyboardInteractiveRequest starts method "keyboard-interactive" for
// user (no language, no submethods).
func KeyboardInteractiveRequest(user string) AuthRequest {
	return AuthRequest{User: user, Method: "keyboard-interactive", Payload: Marshal(struct {
		Language, Submethods string
	}{})}
}

// ReplyKind is what the server answered an authentication message with.
type ReplyKind int

const (
	ReplyFailure     ReplyKind = iota // SSH_MSG_USERAUTH_FAILURE
	ReplySuccess                      // SSH_MSG_USERAUTH_SUCCESS
	ReplyPKOK                         // SSH_MSG_USERAUTH_PK_OK
	ReplyInfoRequest                  // SSH_MSG_USERAUTH_INFO_REQUEST
)

func (k ReplyKind) String() string {
	switch k {
	case ReplyFailure:
		return "failure"
	case ReplySuccess:
		return "success"
	case ReplyPKOK:
		return "pk-ok"
	case ReplyInfoRequest:
		return "info-request"
	}
	return fmt.Sprintf("reply(%d)", int(k))
}

// AuthReply is the server's answer to one authentication message.
type AuthReply struct {
	Kind ReplyKind
	// Methods and PartialSuccess are the failure message's fields.
	Methods        []string
	PartialSuccess bool
	// Banners are the SSH_MSG_USERAUTH_BANNER messages that came first.
	Banners []string
	// PKOKAlgo and PKOKKey are PK_OK's fields.
	PKOKAlgo string
	PKOKKey  []byte
	// Info is the INFO_REQUEST's content.
	Info *InfoRequest
}

// InfoRequest is a keyboard-interactive challenge.
type InfoRequest struct {
	Name, Instruction string
	Prompts           []string
	Echos             []bool
}

// Auth sends req and reads the server's reply.
func (r *RawConn) Auth(req AuthRequest) (*AuthReply, error) {
	if req.Service == "" {
		req.Service = serviceSSH
	}
	if err := r.conn.transport.writePacket(Marshal(&userAuthRequestMsg{User: req.User, Service: req.Service, Method: req.Method, Payload: req.Payload})); err != nil {
		return nil, err
	}
	r.pending = req.Method
	return r.readReply()
}

// Respond answers a keyboard-interactive challenge (INFO_RESPONSE) and
// reads the server's reply.
func (r *RawConn) Respond(answers ...string) (*AuthReply, error) {
	n := 1 + 4
	for _, a := range answers {
		n += stringLength(len(a))
	}
	p := make([]byte, n)
	p[0] = msgUserAuthInfoResponse
	rest := marshalUint32(p[1:], uint32(len(answers)))
	for _, a := range answers {
		rest = marshalString(rest, []byte(a))
	}
	if err := r.conn.transport.writePacket(p); err != nil {
		return nil, err
	}
	r.pending = "keyboard-interactive"
	return r.readReply()
}

func (r *RawConn) readReply() (*AuthReply, error) {
	var out AuthReply
	for {
		p, err := r.conn.transport.readPacket()
		if err != nil {
			return nil, err
		}
		if len(p) == 0 {
			return nil, errors.New("ssh: empty packet")
		}
		switch p[0] {
		case msgExtInfo:
			continue
		case msgUserAuthBanner:
			var m userAuthBannerMsg
			if err := Unmarshal(p, &m); err != nil {
				return nil, err
			}
			out.Banners = append(out.Banners, m.Message)
			continue
		case msgUserAuthFailure:
			var m userAuthFailureMsg
			if err := Unmarshal(p, &m); err != nil {
				return nil, err
			}
			out.Kind, out.Methods, out.PartialSuccess = ReplyFailure, m.Methods, m.PartialSuccess
		case msgUserAuthSuccess:
			out.Kind = ReplySuccess
			r.authed = true
		case msgUserAuthPubKeyOk: // == msgUserAuthInfoRequest
			if r.pending == "keyboard-interactive" {
				info, err := parseInfoRequest(p)
				if err != nil {
					return nil, err
				}
				out.Kind, out.Info = ReplyInfoRequest, info
				break
			}
			var m userAuthPubKeyOkMsg
			if err := Unmarshal(p, &m); err != nil {
				return nil, err
			}
			out.Kind, out.PKOKAlgo, out.PKOKKey = ReplyPKOK, m.Algo, m.PubKey
		default:
			return nil, fmt.Errorf("ssh: unexpected message %d in reply to a %s request", p[0], r.pending)
		}
		return &out, nil
	}
}

func parseInfoRequest(p []byte) (*InfoRequest, error) {
	var m userAuthInfoRequestMsg
	if err := Unmarshal(p, &m); err != nil {
		return nil, err
	}
	info := &InfoRequest{Name: m.Name, Instruction: m.Instruction}
	rest := m.Prompts
	for i := 0; i < int(m.NumPrompts); i++ {
		prompt, r, ok := parseString(rest)
		if !ok || len(r) == 0 {
			return nil, errors.New("ssh: prompt format error")
		}
		info.Prompts = append(info.Prompts, string(prompt))
		info.Echos = append(info.Echos, r[0] != 0)
		rest = r[1:]
	}
	if len(rest) != 0 {
		return nil, errors.New("ssh: extra data after keyboard-interactive prompts")
	}
	return info, nil
}

// Client turns a connection whose authentication succeeded into a Client
// (sessions, channels). Call it once.
func (r *RawConn) Client() (*Client, error) {
	if !r.authed {
		return nil, errors.New("ssh: not authenticated")
	}
	r.conn.mux = newMux(r.conn.transport)
	return NewClient(r.conn, r.conn.mux.incomingChannels, r.conn.mux.incomingRequests), nil
}

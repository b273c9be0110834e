package gateway

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

// One client connection from accept to a relayed session: its state, and
// the gateway as it sees it. The authentication callbacks are in auth.go,
// the backend login they end in is in login.go.

// server is the gateway as one connection sees it: only what the
// authentication callbacks and the backend login use. *Gateway implements
// it; tests can stand in for it.
type server interface {
	// identify looks name up in the directory for a client from srcKey,
	// through the lookup gate (lookupgate.go).
	identify(ctx context.Context, srcKey, name string) (directory.Identity, error)
	// stale is what the directory's cache last knew of name, without
	// asking it (directory.Staler; false when it does not cache).
	stale(name string) (directory.Identity, bool)
	// directoryOffline reports that the directory is unreachable now
	// (directory.Offliner; false when it cannot say).
	directoryOffline() bool
	// checkPassword verifies a password through the bans and the throttle
	// (throttle.go). account is the resolved account name, or "" when the
	// name is unknown. On failure reason is the audit reason.
	checkPassword(ctx context.Context, srcKey, account, name, pw string) (id directory.Identity, reason string, err error)
	// background runs f on a goroutine the gateway waits for when it
	// closes (a password check that outlives its refusal).
	background(f func())
	// decide runs the login decision for id over the current view of the
	// nodes; prefer names a node a connection is already open to.
	decide(id directory.Identity, explicit, prefer string) (login.Input, login.Outcome)
	// guess is the node a login will most likely use, before its user is
	// known.
	guess() (node.Node, bool)
	// speculative takes a place for a node connection opened before a
	// client from srcKey proved anything.
	speculative(node, srcKey string) (release func(), ok bool)
	// reserveSession takes one of user's session slots (max 0: no cap).
	reserveSession(user string, max int) (release func(), ok bool)
	// nodeFailed reports a login to n that failed with err.
	nodeFailed(n node.Node, user string, err error)
	// record writes an audit event.
	record(audit.Event)
	// limited counts a stranger's request refused by a limit (a metric
	// label: kex, lookup_rate, lookup_queue).
	limited(reason string)
	// mfaUnlocked, mfaUnlock and mfaGate are the second factor's
	// (mfa.go): the shared unlocks, and the throttle its answers pass.
	mfaUnlocked(account, fp string) (login.Unlock, bool)
	mfaUnlock(account, fp string, u login.Unlock) error
	mfaGate(ctx context.Context, srcKey, account string, verify func(context.Context) (bool, error)) (reason string, err error)
}

// lookup is the directory's answer for one typed name on one connection,
// asked once, in the background, by the first request naming it.
type lookup struct {
	start time.Time     // when the first request named it
	done  chan struct{} // closed once ident and err are set
	ident directory.Identity
	err   error
	// refused is set once a key refusal for the name was sent: later
	// ones go at once (timing.go). Only the auth callbacks touch it.
	refused bool
}

// answered reports whether the lookup has ended, without waiting.
func (l *lookup) answered() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// conn is the authentication state of one client connection. x/crypto
// calls the auth callbacks one at a time from the connection's goroutine,
// so no locking is needed.
type conn struct {
	srv  server
	set  *settings // the configuration the connection was accepted under
	nc   net.Conn
	id   string
	src  string // client address host:port, as seen after PROXY protocol
	srcK string // SourceKey(src): the throttling and admission key
	// ctx bounds everything the login starts; cancelled by abort/take.
	ctx    context.Context
	cancel context.CancelFunc

	lookups map[string]*lookup // directory answers by typed name (before '+')
	kex     kexBudget          // key exchanges before authentication
	// pre is the speculative TCP connection (see preconn). It is set from
	// the first read of the client's bytes, hence atomic.
	pre  atomic.Pointer[preconn]
	spec *speculation // backend dial started ahead of the proof
	// result is set by the one callback whose credential verified and
	// whose backend login succeeded; nothing else writes it.
	result *loginResult
	// fatal is set when a proven user could not be served: later attempts
	// on the same connection are refused at once.
	fatal error
	// lastUser is the user name of the latest request (auth.go, rule 3).
	lastUser string
	// preauth sends banners during authentication (mfa.go).
	preauth ssh.ServerPreAuthConn
}

// ServerVersion is what the gateway announces to clients.
const ServerVersion = "SSH-2.0-frontdoor"

// Auth method names as they appear in audit events.
const (
	MethodPublicKey = "publickey"
	MethodPassword  = "password"
	MethodKbdInt    = "keyboard-interactive"
)

// Permission extensions the gateway sets. They travel from the query to
// the signed request (x/crypto's cache) and end in the ServerConn.
const (
	extPrincipal = "frontdoor-principal" // the account the credential belongs to
	extTyped     = "frontdoor-user"      // the user name exactly as sent
	extKeyFP     = "frontdoor-key-fp"    // SHA256 fingerprint of the public key
	extSession   = "frontdoor-session"   // session ID, once logged in
)

// errAuth is the error returned to x/crypto for any refused attempt. What
// the client sees is only "Permission denied"; the reason is audited.
var errAuth = errors.New("authentication failed")

// loginResult is a proven identity logged in to a node, waiting for the
// SSH handshake with the client to finish.
type loginResult struct {
	typed   string // user name as the client sent it
	ident   directory.Identity
	policy  policy.Decision
	method  string
	backend *backend
	slot    func() // releases the session slot
}

func (r *loginResult) close() {
	r.backend.close()
	r.slot()
}

// fatalf records a refusal for a proven user and returns the error that
// shows msg to the client. Later attempts on this connection fail at once.
func (c *conn) fatalf(msg string) error {
	c.fatal = errors.New(msg)
	return &ssh.BannerError{Err: errAuth, Message: fmt.Sprintf("frontdoor: %s (session %s)\r\n", msg, c.id)}
}

// attempt is one userauth request as far as it got.
type attempt struct {
	typed, name, node string
	method            string
	key               ssh.PublicKey
	ident             directory.Identity // set once resolved (key) or verified (password)
	rule              string
}

func (c *conn) auditAuth(a attempt, result, reason string) {
	ev := audit.Event{Type: audit.TypeAuth, Session: c.id, User: a.ident.Name,
		Src: c.src, Method: a.method, Node: a.node, Result: result, Reason: reason, Rule: a.rule}
	if ev.User == "" {
		ev.User = login.Sanitize(a.typed)
	}
	if a.key != nil {
		ev.KeyFP = ssh.FingerprintSHA256(a.key)
	}
	c.srv.record(ev)
}

// speculation is a backend dial started before the client proved its key,
// for exactly one (typed name, principal).
type speculation struct {
	typed, principal string
	dial             *pendingDial
	release          func() // returns the speculative budget
}

func (s *speculation) abort() {
	s.dial.abort()
	s.release()
}

// newConn starts the login of nc; closing ends it.
func newConn(closing context.Context, srv server, set *settings, nc net.Conn) *conn {
	ctx, cancel := context.WithTimeout(closing, set.cfg.Gateway.LoginGraceTime)
	src := nc.RemoteAddr().String()
	c := &conn{srv: srv, set: set, nc: nc, id: newSessionID(), src: src, srcK: SourceKey(src), ctx: ctx, cancel: cancel,
		lookups: map[string]*lookup{}}
	c.kex.over = func() { srv.limited("kex") }
	return c
}

// newSessionID returns a short random ID shared by logs, audit events and
// the backend certificate's key ID.
func newSessionID() string {
	var b [8]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// take hands the authenticated login over to the caller and lets go of
// everything else: an unused preconnection held for the session's life
// would count against that node's sshd MaxStartups.
func (c *conn) take() *loginResult {
	r := c.result
	c.result = nil
	c.release()
	return r
}

// abort releases everything the login holds that was not taken.
func (c *conn) abort() {
	if c.result != nil {
		c.result.close()
		c.result = nil
	}
	c.release()
}

func (c *conn) release() {
	if c.spec != nil {
		c.spec.abort()
		c.spec = nil
	}
	if pc := c.pre.Swap(nil); pc != nil {
		pc.release()
	}
	c.cancel()
}

// preconn is the preconnection, if any is held.
func (c *conn) preconn() *preconn { return c.pre.Load() }

// takePreconn returns the preconnection if it goes to t; the caller owns it.
func (c *conn) takePreconn(t node.Node) *preconn {
	pc := c.pre.Load()
	if pc == nil || pc.target != t || !c.pre.CompareAndSwap(pc, nil) {
		return nil
	}
	return pc
}

// preconnectOnHello wraps nc so that the preconnection to the likely node
// starts once the client has sent its SSH hello (hello.go): a port
// scanner, a silent connection or one sending noise costs no node
// anything.
func (c *conn) preconnectOnHello(nc net.Conn) net.Conn {
	return &helloConn{Conn: nc, fn: func() {
		t, ok := c.srv.guess()
		if !ok {
			return
		}
		release, ok := c.srv.speculative(t.Name, c.limitedSrc())
		if !ok {
			return
		}
		c.pre.Store(startPreconn(c.ctx, t, c.set.cfg.Backend.ConnectTimeout, release))
	}}
}

// limitedSrc is the source key per-source limits apply to, or "" for a
// source in admission_exempt.
func (c *conn) limitedSrc() string {
	if c.set.exemptSource(c.srcK) {
		return ""
	}
	return c.srcK
}

// refuseAfterFatal ends a connection that keeps trying after a proven user
// was refused: the banner with the reason has been delivered by now (the
// client answered it with a new attempt), so closing loses nothing.
func (c *conn) refuseAfterFatal() error {
	if c.fatal == nil {
		return nil
	}
	c.nc.Close()
	return fmt.Errorf("%w: %w", errAuth, c.fatal)
}

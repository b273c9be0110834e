package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// Is this credential good, and for whom? The rules every callback follows:
//
//  1. Each userauth request is judged on its own (user name, method,
//     credential). Nothing a callback learned about an earlier request is
//     trusted by a later one; per-connection state is caches of pure
//     lookups (name → identity) and work started ahead (a backend dial),
//     each tagged with the name and principal it was started for.
//  2. The identity that logs in is bound to the credential that verified:
//     a public key's owner (re-checked in VerifiedPublicKeyCallback
//     against the very (user, key) whose signature x/crypto verified, and
//     carried in ssh.Permissions), or the account whose password the
//     directory accepted.
//  3. A request naming another user than the previous one discards every
//     earlier partial result: the backend dial started ahead is aborted.
//  4. Refusals of strangers say nothing; a proven user who cannot be
//     served is told why once (a banner), and the connection then ends.
//
// x/crypto caches the last public-key query's (user, key) → Permissions
// and does not call PublicKeyCallback again for a signed request that
// matches it. Rule 2 is what makes that cache harmless: the signed
// request's user and key are exactly those the cached Permissions were
// made for, and verifiedPublicKey re-derives the identity from them.

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

// lookup is a cached directory answer for one typed name.
type lookup struct {
	ident directory.Identity
	err   error
}

// conn is the authentication state of one client connection. x/crypto
// calls the auth callbacks one at a time from the connection's goroutine,
// so no locking is needed.
type conn struct {
	g    *Gateway
	nc   net.Conn
	id   string
	src  string // client address host:port, as seen after PROXY protocol
	srcK string // SourceKey(src): the throttling and admission key
	// ctx bounds everything the login starts; cancelled by abort/take.
	ctx    context.Context
	cancel context.CancelFunc

	lookups map[string]lookup // directory answers by typed name (before '+')
	padded  map[string]bool   // names whose first key refusal was padded
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
	// lastUser is the user name of the latest request (rule 3).
	lastUser string
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

func newConn(g *Gateway, nc net.Conn) *conn {
	ctx, cancel := context.WithTimeout(g.closing, g.cfg.Gateway.LoginGraceTime)
	src := nc.RemoteAddr().String()
	return &conn{g: g, nc: nc, id: newSessionID(), src: src, srcK: SourceKey(src), ctx: ctx, cancel: cancel,
		lookups: map[string]lookup{}, padded: map[string]bool{}}
}

func (c *conn) serverConfig() *ssh.ServerConfig {
	gc := c.g.cfg.Gateway
	cfg := &ssh.ServerConfig{
		Config: ssh.Config{KeyExchanges: gc.KexAlgorithms, Ciphers: gc.Ciphers, MACs: gc.MACs},
		// Client keys: what OpenSSH accepts by default (no ssh-rsa with
		// SHA-1, no DSA).
		PublicKeyAuthAlgorithms: ssh.SupportedAlgorithms().PublicKeyAuths,
		MaxAuthTries:            gc.MaxAuthTries,
		// "none" is never accepted (none returns an error, always); it is
		// hooked only because it is the first message naming the user.
		NoClientAuth:                true,
		NoClientAuthCallback:        c.none,
		PublicKeyCallback:           c.publicKey,
		VerifiedPublicKeyCallback:   c.verifiedPublicKey,
		PasswordCallback:            c.password,
		KeyboardInteractiveCallback: c.keyboardInteractive,
		ServerVersion:               ServerVersion,
		// The key exchange is done: from here the client has auth_timeout
		// (counted from accept) to prove who it is.
		PreAuthConnCallback: func(ssh.ServerPreAuthConn) {
			c.nc.SetDeadline(c.acceptedAt().Add(gc.AuthTimeout))
		},
	}
	if b := gc.Banner; b != "" {
		cfg.BannerCallback = func(ssh.ConnMetadata) string { return b }
	}
	for _, k := range c.g.hostKeys {
		cfg.AddHostKey(k)
	}
	return cfg
}

// acceptedAt is when the connection was accepted (its login deadline minus
// the grace time).
func (c *conn) acceptedAt() time.Time {
	d, _ := c.ctx.Deadline()
	return d.Add(-c.g.cfg.Gateway.LoginGraceTime)
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
func (c *conn) takePreconn(t Target) *preconn {
	pc := c.pre.Load()
	if pc == nil || pc.target != t || !c.pre.CompareAndSwap(pc, nil) {
		return nil
	}
	return pc
}

// preconnectOnFirstBytes wraps nc so that the preconnection to the likely
// node starts when the client sends its first bytes (its SSH version):
// a port scanner or a silent connection costs no node anything.
func (c *conn) preconnectOnFirstBytes(nc net.Conn) net.Conn {
	return &firstRead{Conn: nc, fn: func() {
		t, ok := c.g.guess()
		if !ok {
			return
		}
		release, ok := c.g.spec.acquire(t.Name)
		if !ok {
			return
		}
		c.pre.Store(startPreconn(c.ctx, t, c.g.cfg.Backend.ConnectTimeout, release))
	}}
}

// firstRead calls fn once, when the first bytes arrive.
type firstRead struct {
	net.Conn
	once sync.Once
	fn   func()
}

func (f *firstRead) Read(p []byte) (int, error) {
	n, err := f.Conn.Read(p)
	if n > 0 {
		f.once.Do(f.fn)
	}
	return n, err
}

// newRequest applies rule 3: a request for another user than the previous
// one discards the work started for the previous one.
func (c *conn) newRequest(typed string) {
	if typed == c.lastUser {
		return
	}
	c.lastUser = typed
	if c.spec != nil && c.spec.typed != typed {
		c.spec.abort()
		c.spec = nil
	}
}

// resolve looks a typed name (before '+') up once per connection. The
// answer depends only on the name, so caching it cannot mix users up.
func (c *conn) resolve(name string) (directory.Identity, error) {
	if l, ok := c.lookups[name]; ok {
		return l.ident, l.err
	}
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	id, err := c.g.dir.Lookup(ctx, name)
	c.g.lookups.record(time.Since(start))
	if len(c.lookups) < 16 { // a client cycling names gains no memory
		c.lookups[name] = lookup{id, err}
	}
	return id, err
}

// none sees the user name the client announces first, and always fails.
// It warms the identity cache so the key query that follows is answered
// at once; it starts no work on any node.
func (c *conn) none(meta ssh.ConnMetadata) (*ssh.Permissions, error) {
	c.newRequest(meta.User())
	if c.fatal == nil {
		if name, _, err := SplitUser(meta.User()); err == nil {
			c.resolve(name)
		}
	}
	return nil, errAuth
}

// publicKey is the query stage: is this key one the user may use? A yes
// proves nothing yet; it only lets the backend dial start (within the
// speculative budget) so its connect and key exchange overlap the
// client's signature.
func (c *conn) publicKey(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	typed := meta.User()
	c.newRequest(typed)
	if err := c.refuseAfterFatal(); err != nil {
		return nil, err
	}
	a, ok := c.keyOwner(typed, key)
	if !ok {
		return nil, errAuth
	}
	c.speculate(a)
	return &ssh.Permissions{Extensions: map[string]string{
		extPrincipal: a.ident.Name, extTyped: typed, extKeyFP: ssh.FingerprintSHA256(key)}}, nil
}

// keyOwner resolves the account a request names and checks that key is
// one of its keys; a refusal is audited.
func (c *conn) keyOwner(typed string, key ssh.PublicKey) (attempt, bool) {
	start := time.Now()
	a := attempt{typed: typed, method: MethodPublicKey, key: key}
	if _, isCert := key.(*ssh.Certificate); isCert {
		c.auditAuth(a, "fail", "user certificates are not accepted")
		return a, false
	}
	name, node, err := SplitUser(typed)
	if err != nil {
		c.auditAuth(a, "fail", directory.Reason(err))
		return a, false
	}
	a.name, a.node = name, node
	id, err := c.resolve(name)
	if err != nil {
		c.padRefusal(name, start)
		c.auditAuth(a, "fail", directory.Reason(err))
		return a, false
	}
	a.ident = id
	if !hasKey(id.Keys, key) {
		c.padRefusal(name, start)
		c.auditAuth(a, "fail", "key not authorized")
		return a, false
	}
	return a, true
}

// padRefusal makes the first key refusal for name on this connection take
// the lookup floor (see timing.go); later ones are answered from the
// connection's cache for known and unknown names alike.
func (c *conn) padRefusal(name string, start time.Time) {
	if c.padded[name] || len(c.padded) >= 16 {
		return
	}
	c.padded[name] = true
	sleepUntil(c.ctx, start.Add(c.g.lookups.floor()))
}

// verifiedPublicKey runs once the client proved it holds key, as the user
// the request names. The identity is derived again from exactly that
// (user, key) — never from what an earlier request left behind — and must
// agree with the Permissions the query produced.
func (c *conn) verifiedPublicKey(meta ssh.ConnMetadata, key ssh.PublicKey, perms *ssh.Permissions, _ string) (*ssh.Permissions, error) {
	typed := meta.User()
	c.newRequest(typed)
	if err := c.refuseAfterFatal(); err != nil {
		return nil, err
	}
	if perms == nil || perms.Extensions[extTyped] != typed || perms.Extensions[extKeyFP] != ssh.FingerprintSHA256(key) {
		c.auditAuth(attempt{typed: typed, method: MethodPublicKey, key: key}, "fail", "internal: signed request does not match its query")
		return nil, errAuth
	}
	a, ok := c.keyOwner(typed, key)
	if !ok {
		return nil, errAuth
	}
	if a.ident.Name != perms.Extensions[extPrincipal] {
		c.auditAuth(a, "fail", "internal: identity changed between query and signature")
		return nil, errAuth
	}
	return c.login(a)
}

func (c *conn) password(meta ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
	c.newRequest(meta.User())
	if err := c.refuseAfterFatal(); err != nil {
		return nil, err
	}
	return c.passwordLogin(meta.User(), string(pw), MethodPassword)
}

func (c *conn) keyboardInteractive(meta ssh.ConnMetadata, challenge ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
	c.newRequest(meta.User())
	if err := c.refuseAfterFatal(); err != nil {
		return nil, err
	}
	answers, err := challenge("", "", []string{"Password: "}, []bool{false})
	if err != nil {
		return nil, err
	}
	if len(answers) != 1 {
		c.auditAuth(attempt{typed: meta.User(), method: MethodKbdInt}, "fail", "wrong number of answers")
		return nil, errAuth
	}
	return c.passwordLogin(meta.User(), answers[0], MethodKbdInt)
}

// passwordLogin verifies a password through the throttle (see
// throttle.go) and logs in as the account the directory accepted it for.
func (c *conn) passwordLogin(typed, pw, method string) (*ssh.Permissions, error) {
	a := attempt{typed: typed, method: method}
	name, node, err := SplitUser(typed)
	if err != nil {
		c.auditAuth(a, "fail", directory.Reason(err))
		return nil, errAuth
	}
	a.name, a.node = name, node
	if pw == "" {
		c.auditAuth(a, "fail", "empty password")
		return nil, errAuth
	}
	start := time.Now()
	if id, err := c.resolve(name); err == nil {
		a.ident = id // names the account in the audit; the login uses only what VerifyPassword returns
	}
	id, reason, err := c.g.checkPassword(c.ctx, c, name, pw)
	if err != nil {
		// Unknown names and wrong passwords answer alike (see
		// failureFloor).
		c.g.padFailure(c.ctx, start)
		if reason == "" {
			reason = directory.Reason(err)
		}
		c.auditAuth(a, "fail", reason)
		return nil, errAuth
	}
	a.ident = id
	return c.login(a)
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
	ev := audit.Event{Type: audit.TypeAuth, Gateway: c.g.cfg.Gateway.Name, Session: c.id, User: a.ident.Name,
		Src: c.src, Method: a.method, Node: a.node, Result: result, Reason: reason, Rule: a.rule}
	if ev.User == "" {
		ev.User = sanitize(a.typed)
	}
	if a.key != nil {
		ev.KeyFP = ssh.FingerprintSHA256(a.key)
	}
	c.g.metrics.auth.WithLabelValues(a.method, result).Inc()
	c.g.audit.Record(ev)
}

func hasKey(keys []ssh.PublicKey, k ssh.PublicKey) bool {
	want := k.Marshal()
	found := false
	for _, have := range keys {
		// No early exit: the time taken does not say which key matched.
		if subtle.ConstantTimeCompare(have.Marshal(), want) == 1 {
			found = true
		}
	}
	return found
}

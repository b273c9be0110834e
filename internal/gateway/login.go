package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

// Auth method names as they appear in audit events.
const (
	MethodPublicKey = "publickey"
	MethodPassword  = "password"
	MethodKbdInt    = "keyboard-interactive"
)

// login is the authentication state of one client connection. x/crypto/ssh
// calls the auth callbacks one at a time from the connection's goroutine, so
// no locking is needed.
type login struct {
	g    *Gateway
	conn net.Conn
	id   string
	src  string
	// ctx bounds everything the login starts; cancelled by abort.
	ctx    context.Context
	cancel context.CancelFunc

	// The user as last resolved: name (before "+"), node after it.
	typed    string
	name     string
	node     string
	ident    directory.Identity
	identErr error
	decision policy.Decision
	denied   error // policy or route refusal, told to the user after proof
	targets  []Target

	pre     *preconn     // speculative TCP connection, see preconn
	pending *pendingDial // backend dial started ahead of the proof
	backend *backend     // the authenticated backend, once there is one
	method  string
	// fatal is set when a proven user could not be given a node: later
	// attempts on the same connection are refused at once.
	fatal error
}

func newLogin(g *Gateway, conn net.Conn) *login {
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.Gateway.LoginGraceTime)
	return &login{g: g, conn: conn, id: newSessionID(), src: conn.RemoteAddr().String(), ctx: ctx, cancel: cancel}
}

func (l *login) serverConfig() *ssh.ServerConfig {
	cfg := &ssh.ServerConfig{
		MaxAuthTries: l.g.cfg.Gateway.MaxAuthTries,
		// "none" is never accepted (none returns an error, always); it is
		// hooked only because it is the first message naming the user, so
		// the backend dial can start while the client picks its keys.
		NoClientAuth:                true,
		NoClientAuthCallback:        l.none,
		PublicKeyCallback:           l.publicKey,
		VerifiedPublicKeyCallback:   l.verifiedPublicKey,
		PasswordCallback:            l.password,
		KeyboardInteractiveCallback: l.keyboardInteractive,
		ServerVersion:               ServerVersion,
	}
	if b := l.g.cfg.Gateway.Banner; b != "" {
		cfg.BannerCallback = func(ssh.ConnMetadata) string { return b }
	}
	for _, k := range l.g.hostKeys {
		cfg.AddHostKey(k)
	}
	return cfg
}

// take hands the authenticated backend over to the caller, and lets go of
// an unused preconnection at once: held for the session's life it would
// count against that node's sshd MaxStartups.
func (l *login) take() *backend {
	b := l.backend
	l.backend = nil
	l.cancel() // also ends a preconnection still dialing
	if l.pre != nil {
		l.pre.release()
		l.pre = nil
	}
	return b
}

// abort releases everything the login holds that was not taken.
func (l *login) abort() {
	if l.pre != nil {
		l.pre.release()
		l.pre = nil
	}
	if l.pending != nil {
		l.pending.abort()
		l.pending = nil
	}
	if l.backend != nil {
		l.backend.close()
		l.backend = nil
	}
	l.cancel()
}

// failed is called when the SSH handshake ended without a session.
func (l *login) failed(err error) {
	l.g.log.Debug("connection ended before a session", "src", l.src, "user", l.name, "err", err)
}

// canonicalizer is implemented by directories where one user may type
// several names (AD: alice, HPC\alice, alice@hpc.example.edu).
type canonicalizer interface {
	CanonicalName(typed string) string
}

// throttleKey is the per-user throttling key: every form of a name counts
// against the same allowance.
func (g *Gateway) throttleKey(name string) string {
	if c, ok := g.dir.(canonicalizer); ok {
		return c.CanonicalName(name)
	}
	return name
}

// srcIP is the client address without the port, the throttling key.
func (l *login) srcIP() string {
	if host, _, err := net.SplitHostPort(l.src); err == nil {
		return host
	}
	return l.src
}

// errAuth is the error returned to x/crypto for any refused attempt. What
// the client sees is only "Permission denied"; the reason is audited.
var errAuth = errors.New("authentication failed")

// SplitUser splits "user+node" into its parts. The user part is returned as
// typed (the directory normalises it); the node part must be a valid node
// name.
func SplitUser(s string) (user, node string, err error) {
	if i := strings.LastIndexByte(s, '+'); i >= 0 {
		user, node = s[:i], s[i+1:]
		if !config.ValidNodeName(node) {
			return "", "", fmt.Errorf("%w: invalid node name after '+'", directory.ErrInvalidName)
		}
	} else {
		user = s
	}
	if user == "" || len(user) > 256 {
		return "", "", fmt.Errorf("%w: empty or overlong", directory.ErrInvalidName)
	}
	return user, node, nil
}

// resolveName looks the connection's user up once per distinct name.
func (l *login) resolveName(typed string) error {
	if typed == l.typed && (l.identErr != nil || l.ident.Name != "") {
		return l.identErr
	}
	l.reset()
	l.typed = typed
	name, node, err := SplitUser(typed)
	if err != nil {
		l.identErr = err
		return err
	}
	l.name, l.node = name, node
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	l.ident, l.identErr = l.g.dir.Lookup(ctx, name)
	return l.identErr
}

// reset forgets a previous user (SSH lets a client change user names
// between attempts).
func (l *login) reset() {
	if l.pending != nil {
		l.pending.abort()
		l.pending = nil
	}
	l.typed, l.name, l.node = "", "", ""
	l.ident, l.identErr, l.denied, l.targets = directory.Identity{}, nil, nil, nil
	l.decision = policy.Decision{}
}

// decide applies the policy and the router to the resolved identity. A
// refusal is remembered in l.denied and told to the user only after they
// proved who they are.
func (l *login) decide() {
	d, err := l.g.cfg.Policy.Evaluate(l.ident.Name, l.ident.Groups)
	l.decision = d
	if err != nil {
		l.denied = &RouteError{Msg: "your account has no access to this cluster; ask your administrators for access"}
		l.deniedReason(err.Error())
		return
	}
	if d.MaxSessions > 0 && l.g.userSessions(l.ident.Name) >= d.MaxSessions {
		l.denied = &RouteError{Msg: fmt.Sprintf("you already have %d sessions open through this gateway, the most your access allows", d.MaxSessions)}
		l.deniedReason("session limit reached")
		return
	}
	ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
	defer cancel()
	req := RouteRequest{User: l.ident.Name, Pools: d.Pools, Explicit: l.node}
	if l.pre != nil {
		req.Prefer = l.pre.target.Name
	}
	targets, err := l.g.router.Route(ctx, req)
	if err != nil {
		var re *RouteError
		if !errors.As(err, &re) {
			re = &RouteError{Msg: "no login node is available right now; try again shortly"}
		}
		l.denied = re
		l.deniedReason("route: " + err.Error())
		return
	}
	if len(targets) > l.g.cfg.Backend.MaxAttempts {
		targets = targets[:l.g.cfg.Backend.MaxAttempts]
	}
	l.targets = targets
}

// deniedReason keeps the audit reason of a refusal next to its message.
func (l *login) deniedReason(reason string) {
	l.denied = &deniedError{user: l.denied.(*RouteError), reason: reason}
}

type deniedError struct {
	user   *RouteError
	reason string
}

func (e *deniedError) Error() string { return e.reason }

func (l *login) dialParams() dialParams {
	return dialParams{
		principal: l.ident.Name,
		timeout:   l.g.cfg.Backend.ConnectTimeout,
		hostKeys:  l.g.nodeKeys,
		version:   "SSH-2.0-frontdoor",
	}
}

// none sees the user name the client announces first. It starts routing
// and the backend dial (an identity lookup, no proof yet) and always fails.
func (l *login) none(meta ssh.ConnMetadata) (*ssh.Permissions, error) {
	if l.fatal == nil && l.resolveName(meta.User()) == nil {
		l.prepare()
	}
	return nil, errAuth
}

// prepare decides where the resolved user goes and starts dialing the first
// node. Nothing is revealed to the client: refusals wait for proof.
func (l *login) prepare() {
	if l.denied == nil && l.targets == nil {
		l.decide()
	}
	if l.denied == nil && l.pending == nil && len(l.targets) > 0 {
		l.pending = startDial(l.ctx, l.targets[0], l.dialParams(), l.takePreconn(l.targets[0]))
	}
}

// takePreconn returns the speculative connection if it goes to t.
func (l *login) takePreconn(t Target) *preconn {
	pc := l.pre
	if pc == nil || pc.target != t {
		return nil
	}
	l.pre = nil
	return pc
}

// publicKey is the query stage: is this key one the user may use? A yes
// here proves nothing yet; the backend dial starts so that its connect and
// key exchange overlap the client's signature.
func (l *login) publicKey(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	if err := l.refuseAfterFatal(); err != nil {
		return nil, err
	}
	if _, isCert := key.(*ssh.Certificate); isCert {
		l.auditAuth(MethodPublicKey, key, "fail", "user certificates are not accepted")
		return nil, errAuth
	}
	if err := l.resolveName(meta.User()); err != nil {
		l.auditAuth(MethodPublicKey, key, "fail", directory.Reason(err))
		return nil, errAuth
	}
	if !hasKey(l.ident.Keys, key) {
		l.auditAuth(MethodPublicKey, key, "fail", "key not authorized")
		return nil, errAuth
	}
	l.prepare()
	return &ssh.Permissions{Extensions: map[string]string{"key-fp": ssh.FingerprintSHA256(key)}}, nil
}

// verifiedPublicKey runs once the client proved it holds the key.
func (l *login) verifiedPublicKey(_ ssh.ConnMetadata, key ssh.PublicKey, perms *ssh.Permissions, _ string) (*ssh.Permissions, error) {
	if err := l.complete(MethodPublicKey, key); err != nil {
		return nil, err
	}
	return perms, nil
}

func (l *login) password(meta ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
	return l.passwordLogin(meta.User(), string(pw), MethodPassword)
}

func (l *login) keyboardInteractive(meta ssh.ConnMetadata, challenge ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
	if err := l.refuseAfterFatal(); err != nil {
		return nil, err
	}
	answers, err := challenge("", "", []string{"Password: "}, []bool{false})
	if err != nil {
		return nil, err
	}
	if len(answers) != 1 {
		l.auditAuth(MethodKbdInt, nil, "fail", "wrong number of answers")
		return nil, errAuth
	}
	return l.passwordLogin(meta.User(), answers[0], MethodKbdInt)
}

func (l *login) passwordLogin(typed, pw, method string) (*ssh.Permissions, error) {
	if err := l.refuseAfterFatal(); err != nil {
		return nil, err
	}
	name, _, err := SplitUser(typed)
	if err != nil {
		l.auditAuth(method, nil, "fail", directory.Reason(err))
		return nil, errAuth
	}
	if pw == "" {
		l.auditAuth(method, nil, "fail", "empty password")
		return nil, errAuth
	}
	// Password guesses are what lock accounts out in AD: throttle them per
	// user and per source before they reach the directory. Key logins never
	// bind to AD and are not throttled here.
	src, key := l.srcIP(), l.g.throttleKey(name)
	// Throttle on the account, not the name typed: AD users often have a
	// UPN whose prefix is not their account name (john.doe@… for jdoe),
	// and every name must share one allowance or AD's lockout is reachable.
	if l.resolveName(typed) == nil {
		key = l.ident.Name
	}
	if wait, why, ok := l.g.mayTryPassword(key, src); !ok {
		l.name = name
		l.auditAuth(method, nil, "fail", fmt.Sprintf("%s for %s after repeated failures", why, wait.Round(time.Second)))
		return nil, errAuth
	}
	ctx, cancel := context.WithTimeout(l.ctx, 15*time.Second)
	ident, err := l.g.dir.VerifyPassword(ctx, name, pw)
	cancel()
	if err != nil {
		l.name = name
		if !errors.Is(err, directory.ErrUnavailable) {
			l.g.passwordFailed(key, src)
		}
		l.auditAuth(method, nil, "fail", directory.Reason(err))
		return nil, errAuth
	}
	l.g.throttle.Success(key, src)
	// The password proved the identity: take it as this connection's user.
	if typed != l.typed {
		l.reset()
		l.typed = typed
		l.name, l.node, _ = SplitUser(typed)
	}
	l.ident, l.identErr = ident, nil
	if err := l.complete(method, nil); err != nil {
		return nil, err
	}
	return &ssh.Permissions{}, nil
}

// complete turns a proven identity into a backend login, or a refusal the
// user is told about.
func (l *login) complete(method string, key ssh.PublicKey) error {
	if err := l.refuseAfterFatal(); err != nil {
		return err
	}
	if l.denied == nil && l.targets == nil {
		l.decide()
	}
	if l.denied != nil {
		var de *deniedError
		msg, reason := l.denied.Error(), l.denied.Error()
		if errors.As(l.denied, &de) {
			msg = de.user.Msg
		}
		result := "denied"
		l.auditAuth(method, key, result, reason)
		return l.fatalf(msg)
	}
	var errs []string
	for i, t := range l.targets {
		signer, err := l.g.ca.Sign(ca.Login{Principal: l.ident.Name, User: l.ident.Name, Session: l.id, Rights: l.decision.Rights})
		if err != nil {
			l.auditAuth(method, key, "fail", "certificate: "+err.Error())
			return l.fatalf("internal error; the administrators have the details")
		}
		pd := l.pending
		l.pending = nil
		if pd == nil || pd.target != t {
			if pd != nil {
				pd.abort()
			}
			pd = startDial(l.ctx, t, l.dialParams(), l.takePreconn(t))
		}
		b, err := pd.finish(l.ctx, signer)
		if err == nil {
			l.backend, l.method = b, method
			l.auditAuth(method, key, "ok", "")
			return nil
		}
		l.g.router.NodeFailed(t.Name, err)
		l.g.metrics.backendFailures.WithLabelValues(t.Name, stageOf(err)).Inc()
		reason := backendReason(err)
		errs = append(errs, reason)
		l.g.audit.Record(audit.Event{Type: audit.TypeBackend, Gateway: l.g.cfg.Gateway.Name, Session: l.id,
			User: l.ident.Name, Src: l.src, Node: t.Name, Result: "fail", Reason: reason})
		l.g.log.Warn("login node failed", "session", l.id, "user", l.ident.Name, "node", t.Name, "attempt", i+1, "err", err)
	}
	l.auditAuth(method, key, "fail", "no login node: "+strings.Join(errs, "; "))
	if l.node != "" {
		return l.fatalf(fmt.Sprintf("login node %s is not available right now; try again shortly, or log in without +%s", l.node, l.node))
	}
	return l.fatalf("no login node is available right now; try again shortly")
}

func stageOf(err error) string {
	var be *BackendError
	if errors.As(err, &be) {
		return be.Stage
	}
	return "other"
}

// backendReason is the audit reason of a backend failure.
func backendReason(err error) string {
	var be *BackendError
	if !errors.As(err, &be) {
		return err.Error()
	}
	switch be.Stage {
	case StageHostKey:
		return fmt.Sprintf("node %s: host key verification failed: %v", be.Node, errors.Unwrap(be.Err))
	case StageAuth:
		return fmt.Sprintf("node %s: refused the login certificate (is the user CA in TrustedUserCAKeys and the user known there?): %v", be.Node, be.Err)
	}
	return be.Error()
}

// fatalf records a refusal for a proven user and returns the error that
// shows msg to the client. Later attempts on this connection fail at once.
func (l *login) fatalf(msg string) error {
	l.fatal = errors.New(msg)
	return &ssh.BannerError{Err: errAuth, Message: fmt.Sprintf("frontdoor: %s (session %s)\r\n", msg, l.id)}
}

// refuseAfterFatal ends a connection that keeps trying after a proven user
// was refused: the banner with the reason has been delivered by now (the
// client answered it with a new attempt), so closing loses nothing.
func (l *login) refuseAfterFatal() error {
	if l.fatal == nil {
		return nil
	}
	l.conn.Close()
	return fmt.Errorf("%w: %w", errAuth, l.fatal)
}

func (l *login) auditAuth(method string, key ssh.PublicKey, result, reason string) {
	ev := audit.Event{Type: audit.TypeAuth, Gateway: l.g.cfg.Gateway.Name, Session: l.id, User: l.name,
		Src: l.src, Method: method, Node: l.node, Result: result, Reason: reason, Rule: l.decision.Rule}
	if l.ident.Name != "" {
		ev.User = l.ident.Name
	}
	if key != nil {
		ev.KeyFP = ssh.FingerprintSHA256(key)
	}
	if ev.User == "" {
		ev.User = sanitize(l.typed)
	}
	l.g.metrics.auth.WithLabelValues(method, result).Inc()
	l.g.audit.Record(ev)
}

// sanitize makes an untrusted name safe to log: quoted printable ASCII,
// bounded.
func sanitize(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

func hasKey(keys []ssh.PublicKey, k ssh.PublicKey) bool {
	want := k.Marshal()
	for _, have := range keys {
		if subtle.ConstantTimeCompare(have.Marshal(), want) == 1 {
			return true
		}
	}
	return false
}

func (g *Gateway) userSessions(user string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, s := range g.sessions {
		if s.User == user {
			n++
		}
	}
	return n
}

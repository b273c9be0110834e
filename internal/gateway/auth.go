package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
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

// maxNamesPerConn bounds the names one connection has looked up: a client
// cycling names gains no memory, and further names are refused unseen.
const maxNamesPerConn = 16

// lookupTimeout bounds one directory lookup.
const lookupTimeout = 10 * time.Second

// errTooManyNames refuses a name beyond maxNamesPerConn.
var errTooManyNames = errors.New("too many user names on one connection")

// resolve returns the lookup of a typed name (before '+') on this
// connection, starting it in the background the first time the name is
// seen. The answer depends only on the name, so sharing it between the
// connection's requests cannot mix users up.
func (c *conn) resolve(name string) *lookup {
	if l, ok := c.lookups[name]; ok {
		return l
	}
	l := &lookup{start: time.Now(), done: make(chan struct{})}
	if len(c.lookups) >= maxNamesPerConn {
		l.err = errTooManyNames
		close(l.done)
		return l
	}
	c.lookups[name] = l
	ctx, cancel := context.WithTimeout(c.ctx, lookupTimeout)
	src := c.limitedSrc()
	c.srv.background(func() {
		defer cancel()
		l.ident, l.err = c.srv.identify(ctx, src, name)
		close(l.done)
	})
	return l
}

// authNone sees the user name the client announces first, and always fails,
// at once (timing.go). It starts the name's lookup so the key query that
// follows finds the answer ready; it starts no work on any node.
func (c *conn) authNone(meta ssh.ConnMetadata) (*ssh.Permissions, error) {
	c.newRequest(meta.User())
	if c.fatal == nil {
		if name, _, err := login.SplitUser(meta.User()); err == nil {
			c.resolve(name)
		}
	}
	return nil, errAuth
}

// authPublicKey is the query stage: is this key one the user may use? A yes
// proves nothing yet; it only lets the backend dial start (within the
// speculative budget) so its connect and key exchange overlap the
// client's signature.
func (c *conn) authPublicKey(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	typed := meta.User()
	c.newRequest(typed)
	if err := c.refuseAfterFatal(); err != nil {
		return nil, err
	}
	a, ok := c.keyOwner(typed, key, false)
	if !ok {
		return nil, errAuth
	}
	c.speculate(a)
	return &ssh.Permissions{Extensions: map[string]string{
		extPrincipal: a.ident.Name, extTyped: typed, extKeyFP: ssh.FingerprintSHA256(key)}}, nil
}

// keyOwner resolves the account a request names and checks that key is
// one of its keys; a refusal is audited. Before the proof (a query) it
// follows timing.go: the answer is waited for only until
// key_refusal_delay, and a refusal goes no earlier. proven (the client
// signed) waits for the answer however long it takes.
func (c *conn) keyOwner(typed string, key ssh.PublicKey, proven bool) (attempt, bool) {
	a := attempt{typed: typed, method: MethodPublicKey, key: key}
	if _, isCert := key.(*ssh.Certificate); isCert {
		c.auditAuth(a, "fail", "user certificates are not accepted")
		return a, false
	}
	name, node, err := login.SplitUser(typed)
	if err != nil {
		c.auditAuth(a, "fail", directory.Reason(err))
		return a, false
	}
	a.name, a.node = name, node
	l := c.resolve(name)
	switch {
	case proven:
		waitUntil(c.ctx, l.done, time.Now().Add(lookupTimeout))
	case !l.refused:
		waitUntil(c.ctx, l.done, l.start.Add(c.set.cfg.Gateway.KeyRefusalDelay))
	}
	reason := ""
	switch {
	case !l.answered() && !proven:
		// The directory is late. What its cache last knew decides
		// whether the client may go on to prove the key (at the
		// refusal's time, so nothing is told); the login itself waits
		// for the answer after the proof.
		if id, ok := c.srv.stale(name); ok && hasKey(id.Keys, key) {
			a.ident = id
			return a, true
		}
		reason = "directory did not answer within key_refusal_delay"
		c.srv.limited("lookup_late")
	case !l.answered():
		reason = "directory did not answer"
	case l.err != nil:
		reason = directory.Reason(l.err)
	case !hasKey(l.ident.Keys, key):
		a.ident = l.ident
		reason = "key not authorized"
	default:
		a.ident = l.ident
		return a, true
	}
	c.refuseKey(l)
	c.auditAuth(a, "fail", reason)
	return a, false
}

// refuseKey holds the first key refusal for l's name on this connection
// until key_refusal_delay after the name was first seen; later ones go at
// once, for known and unknown names alike (timing.go).
func (c *conn) refuseKey(l *lookup) {
	if l.refused {
		return
	}
	sleepUntil(c.ctx, l.start.Add(c.set.cfg.Gateway.KeyRefusalDelay))
	l.refused = true
}

// authVerifiedKey runs once the client proved it holds key, as the user
// the request names. The identity is derived again from exactly that
// (user, key) — never from what an earlier request left behind — and must
// agree with the Permissions the query produced.
func (c *conn) authVerifiedKey(meta ssh.ConnMetadata, key ssh.PublicKey, perms *ssh.Permissions, _ string) (*ssh.Permissions, error) {
	typed := meta.User()
	c.newRequest(typed)
	if err := c.refuseAfterFatal(); err != nil {
		return nil, err
	}
	if perms == nil || perms.Extensions[extTyped] != typed || perms.Extensions[extKeyFP] != ssh.FingerprintSHA256(key) {
		c.auditAuth(attempt{typed: typed, method: MethodPublicKey, key: key}, "fail", "internal: signed request does not match its query")
		return nil, errAuth
	}
	a, ok := c.keyOwner(typed, key, true)
	if !ok {
		return nil, errAuth
	}
	if a.ident.Name != perms.Extensions[extPrincipal] {
		c.auditAuth(a, "fail", "internal: identity changed between query and signature")
		return nil, errAuth
	}
	return c.secondFactor(a, login.Factor{KeyFP: ssh.FingerprintSHA256(key), SKTouched: skTouched(key, perms)})
}

func (c *conn) authPassword(meta ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
	c.newRequest(meta.User())
	if err := c.refuseAfterFatal(); err != nil {
		return nil, err
	}
	return c.passwordLogin(meta.User(), string(pw), MethodPassword)
}

func (c *conn) authKeyboardInteractive(meta ssh.ConnMetadata, challenge ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
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

// pwResult is the outcome of one password check.
type pwResult struct {
	id     directory.Identity
	reason string // audit reason of a refusal ("" : the error's)
	err    error
}

// passwordLogin verifies a password through the throttle (see
// throttle.go) and logs in as the account the directory accepted it for.
// A refusal goes password_refusal_delay after the attempt arrived
// (timing.go); the check runs on its own goroutine so that one still
// running then can go on (its outcome counts in the throttle) while the
// client hears its refusal.
func (c *conn) passwordLogin(typed, pw, method string) (*ssh.Permissions, error) {
	start := time.Now()
	a := attempt{typed: typed, method: method}
	name, node, err := login.SplitUser(typed)
	if err != nil {
		c.auditAuth(a, "fail", directory.Reason(err))
		return nil, errAuth
	}
	a.name, a.node = name, node
	if pw == "" {
		c.auditAuth(a, "fail", "empty password")
		return nil, errAuth
	}
	l := c.resolve(name)
	res := make(chan pwResult, 1)
	ctx, srcK := c.ctx, c.srcK
	c.srv.background(func() {
		// The account names the throttle's key; the login uses only what
		// VerifyPassword returns.
		account := ""
		if waitUntil(ctx, l.done, time.Now().Add(lookupTimeout)) && l.err == nil {
			account = l.ident.Name
		}
		id, reason, err := c.srv.checkPassword(ctx, srcK, account, name, pw)
		res <- pwResult{id, reason, err}
	})
	deadline := start.Add(c.set.cfg.Gateway.PasswordRefusalDelay)
	tm := time.NewTimer(time.Until(deadline))
	defer tm.Stop()
	var r pwResult
	select {
	case r = <-res:
	case <-tm.C:
		// Refused now; audited once the check ends, with its outcome.
		late := a
		c.srv.background(func() {
			r := <-res
			reason := r.reason
			switch {
			case r.err == nil && reason == "":
				reason = "right password, answered after password_refusal_delay: refused"
			case reason == "":
				reason = directory.Reason(r.err) + " (answered after password_refusal_delay)"
			}
			c.auditAuth(late, "fail", reason)
		})
		return nil, c.passwordRefused()
	case <-c.ctx.Done():
		r.reason = "connection ended during the password check"
	}
	if r.reason == "" && r.err == nil {
		a.ident = r.id
		return c.secondFactor(a, login.Factor{})
	}
	sleepUntil(c.ctx, deadline)
	if l.answered() && l.err == nil {
		a.ident = l.ident // names the account in the audit
	}
	if r.reason == "" {
		r.reason = directory.Reason(r.err)
	}
	c.auditAuth(a, "fail", r.reason)
	return nil, c.passwordRefused()
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

func (c *conn) serverConfig() *ssh.ServerConfig {
	gc := c.set.cfg.Gateway
	cfg := &ssh.ServerConfig{
		Config: ssh.Config{KeyExchanges: gc.KexAlgorithms, Ciphers: gc.Ciphers, MACs: gc.MACs},
		// Client keys: what OpenSSH accepts by default (no ssh-rsa with
		// SHA-1, no DSA).
		PublicKeyAuthAlgorithms: ssh.SupportedAlgorithms().PublicKeyAuths,
		MaxAuthTries:            gc.MaxAuthTries,
		// "none" is never accepted (none returns an error, always); it is
		// hooked only because it is the first message naming the user.
		NoClientAuth:                true,
		NoClientAuthCallback:        c.authNone,
		PublicKeyCallback:           c.authPublicKey,
		VerifiedPublicKeyCallback:   c.authVerifiedKey,
		PasswordCallback:            c.authPassword,
		KeyboardInteractiveCallback: c.authKeyboardInteractive,
		ServerVersion:               ServerVersion,
		// The key exchange is done: from here the client has auth_timeout
		// (counted from accept) to prove who it is.
		PreAuthConnCallback: func(p ssh.ServerPreAuthConn) {
			c.preauth = p
			c.nc.SetDeadline(c.acceptedAt().Add(gc.AuthTimeout))
		},
	}
	if b := gc.Banner; b != "" {
		cfg.BannerCallback = func(ssh.ConnMetadata) string { return b }
	}
	for _, k := range c.set.hostKeys {
		cfg.AddHostKey(c.kex.wrap(k)) // limits.go: key exchanges before authentication
	}
	return cfg
}

// acceptedAt is when the connection was accepted (its login deadline minus
// the grace time).
func (c *conn) acceptedAt() time.Time {
	d, _ := c.ctx.Deadline()
	return d.Add(-c.set.cfg.Gateway.LoginGraceTime)
}

// passwordRefused is what a refused password answers, at its fixed time: a
// bare refusal, or, while the directory is unreachable, one line saying
// that passwords cannot be checked now and what still works. Being
// offline is the directory's state, the same for every name, so the line
// tells a stranger nothing about an account; and it comes only from the
// gateway's view when the refusal goes, whatever this attempt's check
// answered (with cache_passwords, a cached account's wrong password gets
// it too).
func (c *conn) passwordRefused() error {
	if !c.srv.directoryOffline() {
		return errAuth
	}
	return &ssh.BannerError{Err: errAuth, Message: "frontdoor: " + login.MsgPasswordsUnavailable + "\r\n"}
}

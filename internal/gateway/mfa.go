package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/mfa"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/throttle"
)

// The second factor, after the first (a key or a password) verified:
//
//  1. login.SecondFactor decides, from the rule the login matched, the
//     verified key and the unlock the gateways share for (account, key),
//     whether to ask. The key is the one x/crypto verified the signature
//     of (VerifiedPublicKeyCallback), never the last one offered
//     (CVE-2024-45337); a password login has no key and is always asked.
//  2. To ask, the verified callback returns ssh.PartialSuccessError whose
//     only next method is a keyboard-interactive callback bound to that
//     very attempt (account, key, rule): nothing a later request says
//     can change whom the answer unlocks. x/crypto forbids another user
//     name after a partial success.
//  3. One banner line first says what is asked and how a client that
//     cannot answer (BatchMode, scp from a script, VS Code's background
//     connections) unlocks its key: those clients then give up at once
//     (OpenSSH disables keyboard-interactive in BatchMode), never hang.
//  4. The answer goes to RADIUS (internal/mfa) through the password
//     throttle and bans: a wrong code counts like a wrong password. A
//     challenge from the server becomes the next prompt.
//  5. An accepted key is unlocked for the rule's window on every gateway
//     (Unlocks); then the login goes on exactly as one without MFA.
//
// Every decision to ask, every answer's result and every unlock is
// audited (type "mfa").

// Unlocks are the second-factor unlocks, shared by every gateway of a
// cluster (internal/cluster's m/USER entries); without a cluster, this
// gateway's memory (memUnlocks).
type Unlocks interface {
	MFAUnlocked(account, fp string) (login.Unlock, bool)
	MFAUnlock(account, fp string, u login.Unlock) error
	MFARevoke(account string) error
}

// Messages for the user.
const (
	msgMFAUnavailable = "the second-factor service cannot be reached right now; try again in a few minutes"
	msgMFAWrong       = "frontdoor: that code was not accepted\r\n"
	msgMFAThrottled   = "frontdoor: too many failed attempts; wait a minute and try again\r\n"
)

// secondFactor is rule 1: log a in now, or ask for the second factor
// first.
func (c *conn) secondFactor(a attempt, f login.Factor) (*ssh.Permissions, error) {
	client := c.set.mfa
	if client == nil {
		// No mfa section: config validation let no rule ask for a
		// second factor, and a login costs no second decision.
		return c.login(a)
	}
	_, out := c.srv.decide(a.ident, a.node, "")
	if r := out.Refusal; r != nil && (r.Stage == login.StagePrincipal || r.Stage == login.StagePolicy) {
		return c.login(a) // refused with its own message: nothing to unlock
	}
	var unlock *login.Unlock
	if f.KeyFP != "" {
		if u, ok := c.srv.mfaUnlocked(a.ident.Name, f.KeyFP); ok {
			unlock = &u
		}
	}
	v := login.SecondFactor(login.MFAInput{Policy: out.Policy, Factor: f, Unlock: unlock, Now: time.Now()})
	a.rule = out.Policy.Rule
	if !v.Ask {
		if v.Reason != login.MFAReasonOff {
			c.auditMFA(a, audit.ResultOK, v.Reason)
		}
		return c.login(a)
	}
	c.auditMFA(a, audit.ResultChallenge, "asked: "+v.Reason)
	if p := c.preauth; p != nil {
		p.SendAuthBanner(mfaBanner(client.Config(), out.Policy.MFA, f))
	}
	// The user has proven the first factor: the rest of the login time
	// is theirs to find their phone (auth_timeout bounds strangers).
	if d, ok := c.ctx.Deadline(); ok {
		c.nc.SetDeadline(d)
	}
	return nil, &ssh.PartialSuccessError{Next: ssh.ServerAuthCallbacks{
		KeyboardInteractiveCallback: c.mfaPrompt(a, f, out.Policy),
	}}
}

// mfaBanner is rule 3's one line.
func mfaBanner(cfg mfa.Config, m policy.MFA, f login.Factor) string {
	what := "this key"
	if f.KeyFP == "" {
		what = "this login"
	}
	return fmt.Sprintf("frontdoor: %s needs a second factor; answer the prompt. A client that cannot "+
		"(scp, rsync, BatchMode, VS Code) must be unlocked first: run `%s` once, then it works for %s.\r\n",
		what, cfg.UnlockCommand, shortDuration(m.Window))
}

// shortDuration writes 12h rather than 12h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// mfaPrompt is rule 4 for the attempt a: the keyboard-interactive
// callback that may only unlock a's account and key.
func (c *conn) mfaPrompt(a attempt, f login.Factor, pol policy.Decision) func(ssh.ConnMetadata, ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
	a.method += "+mfa"
	return func(meta ssh.ConnMetadata, challenge ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
		if err := c.refuseAfterFatal(); err != nil {
			return nil, err
		}
		if meta.User() != a.typed {
			// x/crypto keeps the user name after a partial success;
			// this holds even if it did not.
			c.auditMFA(a, audit.ResultFail, "user name changed after the first factor")
			return nil, errAuth
		}
		client := c.set.mfa
		cfg := client.Config()
		ans, err := challenge("", "", []string{cfg.Prompt}, []bool{false})
		if err != nil {
			return nil, err
		}
		if len(ans) != 1 {
			c.auditMFA(a, audit.ResultFail, "wrong number of answers")
			return nil, errAuth
		}
		reason, err := c.srv.mfaGate(c.ctx, c.srcK, a.ident.Name, func(ctx context.Context) (bool, error) {
			reply, err := client.Start(ctx, a.ident.Name, ans[0], c.src)
			for round := 1; err == nil && reply.Outcome == mfa.Challenge; round++ {
				if round > cfg.MaxRounds {
					return false, fmt.Errorf("%w: more than %d challenges", mfa.ErrUnavailable, cfg.MaxRounds)
				}
				c.auditMFA(a, audit.ResultChallenge, "server challenge")
				prompt := reply.Message
				if strings.TrimSpace(prompt) == "" {
					prompt = cfg.Prompt
				}
				next, cerr := challenge("", "", []string{prompt}, []bool{reply.Echo})
				if cerr != nil || len(next) != 1 {
					return false, errClientGone
				}
				reply, err = client.Continue(ctx, reply, a.ident.Name, next[0], c.src)
			}
			if errors.Is(err, mfa.ErrAnswerTooLong) {
				return false, nil
			}
			return err == nil && reply.Outcome == mfa.Accept, err
		})
		switch {
		case errors.Is(err, errClientGone):
			c.auditMFA(a, audit.ResultFail, "client stopped answering")
			return nil, errAuth
		case errors.Is(err, mfa.ErrUnavailable):
			if pol.MFA.Mode == policy.MFAOptional {
				c.auditMFA(a, audit.ResultOK, "mfa optional and unavailable: "+err.Error())
				return c.login(a)
			}
			c.auditMFA(a, audit.ResultError, err.Error())
			return nil, c.fatalf(msgMFAUnavailable)
		case err != nil:
			// Throttled or banned: the code was not even asked about.
			c.auditMFA(a, audit.ResultFail, reason)
			return nil, c.bannerRefusal(msgMFAThrottled)
		case reason != "":
			c.auditMFA(a, audit.ResultFail, reason)
			return nil, c.bannerRefusal(msgMFAWrong)
		}
		now := time.Now()
		if f.KeyFP != "" {
			u := login.Unlock{At: now, Until: now.Add(pol.MFA.Window), Rule: pol.Rule}
			if err := c.srv.mfaUnlock(a.ident.Name, f.KeyFP, u); err != nil {
				c.auditMFA(a, audit.ResultError, "unlock not shared: "+err.Error())
			} else {
				c.auditMFA(a, audit.ResultOK, "unlocked until "+u.Until.UTC().Format(time.RFC3339))
			}
		} else {
			c.auditMFA(a, audit.ResultOK, "accepted (a password login is not unlocked)")
		}
		return c.login(a)
	}
}

// errClientGone: the client ended a challenge round.
var errClientGone = errors.New("client stopped answering")

// bannerRefusal refuses one attempt with a line the user sees; later
// attempts may still succeed (unlike fatalf).
func (c *conn) bannerRefusal(msg string) error {
	return &ssh.BannerError{Err: errAuth, Message: msg}
}

func (c *conn) auditMFA(a attempt, result, reason string) {
	ev := audit.Event{Type: audit.TypeMFA, Session: c.id, User: a.ident.Name,
		Src: c.src, Method: a.method, Node: a.node, Result: result, Reason: reason, Rule: a.rule}
	if a.key != nil {
		ev.KeyFP = ssh.FingerprintSHA256(a.key)
	}
	c.srv.record(ev)
}

// skTouched reports whether key is a FIDO security key whose signature
// x/crypto verified with user presence: it does so for every sk key
// unless the Permissions carry no-touch-required, which this gateway never
// sets.
func skTouched(key ssh.PublicKey, perms *ssh.Permissions) bool {
	switch key.Type() {
	case ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256:
	default:
		return false
	}
	if perms != nil {
		if _, ok := perms.Extensions["no-touch-required"]; ok {
			return false
		}
	}
	return true
}

// mfaGate runs one second-factor check through the password gates
// (throttle.go): the same bans and allowance, so a wrong code counts like
// a wrong password. verify reports whether the answer was accepted; an
// error wrapping mfa.ErrUnavailable (nobody judged the answer) is not
// counted. reason is the audit reason of a refusal.
func (g *passwordGate) mfaGate(ctx context.Context, srcKey, account string, verify func(context.Context) (bool, error)) (reason string, err error) {
	if wait, why, banned := g.banned(account, srcKey); banned {
		return fmt.Sprintf("%s for %s after repeated failures", why, wait.Round(time.Second)), errThrottled
	}
	r, wait, err := g.throttle.Reserve(ctx, account, srcKey)
	switch {
	case errors.Is(err, throttle.ErrThrottled):
		return fmt.Sprintf("throttled for %s after repeated failures", wait.Round(time.Second)), errThrottled
	case err != nil:
		return "gave up waiting for another attempt of the account or source", err
	}
	ok, err := verify(ctx)
	switch {
	case err != nil && (errors.Is(err, mfa.ErrUnavailable) || errors.Is(err, errClientGone)):
		r.Release()
		return "", err
	case err != nil || !ok:
		r.Fail()
		g.banIfTripped(account, srcKey)
		if err != nil {
			return err.Error(), nil
		}
		return "wrong code", nil
	}
	r.Success()
	return "", nil
}

// memUnlocks keeps unlocks for a gateway without a cluster. Safe for
// concurrent use.
type memUnlocks struct {
	mu sync.Mutex                         // mu protects the following
	m  map[string]map[string]login.Unlock // account → key fp → unlock
}

func newMemUnlocks() *memUnlocks { return &memUnlocks{m: map[string]map[string]login.Unlock{}} }

func (u *memUnlocks) MFAUnlocked(account, fp string) (login.Unlock, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, ok := u.m[account][fp]
	if !ok || !time.Now().Before(x.Until) {
		return login.Unlock{}, false
	}
	return x, true
}

func (u *memUnlocks) MFAUnlock(account, fp string, x login.Unlock) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := time.Now()
	keys := u.m[account]
	if keys == nil {
		keys = map[string]login.Unlock{}
		u.m[account] = keys
	}
	for k, v := range keys {
		if !now.Before(v.Until) {
			delete(keys, k)
		}
	}
	if len(keys) >= 16 {
		return errors.New("too many unlocked keys for one account")
	}
	keys[fp] = x
	return nil
}

func (u *memUnlocks) MFARevoke(account string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, account)
	return nil
}

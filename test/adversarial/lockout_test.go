package adversarial_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/throttle"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// defaultThrottle puts back the throttle section's defaults: the suite's
// own is generous (its tests send many wrong passwords from one address).
func defaultThrottle(c *config.Config) { c.Throttle = throttle.DefaultConfig() }

// A stranger cannot keep a researcher off password logins (issue 21,
// "Locking a researcher out"). With the default throttle and a domain
// that locks accounts after 5 bad passwords: a stranger sends wrong
// passwords from one address; at most 2 reach AD, the rest are refused
// for that account from that address; the owner, from another address,
// logs in with the right password at once (and AD's badPwdCount starts
// over). Then strangers at two more addresses fail too: the account
// escalates, and every address is refused — before AD, whose lockout is
// never reached.
func TestStrangerCannotLockOwnerOut(t *testing.T) {
	const lockoutThreshold = 5
	ctx := t.Context()
	dc.LockoutForTest(t, lockoutThreshold, 10*time.Minute)
	victim := testActor(ctx, t, "adv-lockme")
	g := newGateway(t, gwOptions{Edit: func(c *config.Config) {
		defaultThrottle(c)
		c.Gateway.PasswordRefusalDelay = 200 * time.Millisecond
	}})

	var reasons []string
	for i := range 8 {
		reasons = append(reasons, tryPassword(t, g, "127.0.0.90", victim.name, fmt.Sprintf("Wrong-Passw0rd-%d!", i)))
	}
	toAD, fromThere := 0, 0
	for _, r := range reasons {
		switch {
		case strings.Contains(r, "52e"):
			toAD++
		case strings.Contains(r, "throttled") && strings.Contains(r, "from this address"):
			fromThere++
		}
	}
	bad, locked := accountState(t, victim.name)
	t.Logf("stranger from 127.0.0.90: %d wrong passwords, %d reached AD, %d refused for the account from that address; badPwdCount %d", len(reasons), toAD, fromThere, bad)
	if toAD != 2 || fromThere != len(reasons)-2 {
		t.Fatalf("stranger's attempts: %q", reasons)
	}
	if r := tryPassword(t, g, "127.0.0.91", victim.name, victim.password); r != "" {
		t.Fatalf("the owner from another address was refused: %q", r)
	}
	bad, _ = accountState(t, victim.name)
	t.Logf("the owner from 127.0.0.91 logged in with the right password at once; badPwdCount now %d", bad)

	// Escalation: failures from two more addresses.
	var more []string
	for _, src := range []string{"127.0.0.92", "127.0.0.92", "127.0.0.93", "127.0.0.93"} {
		more = append(more, tryPassword(t, g, src, victim.name, "Wrong-Passw0rd-x!"))
	}
	r := tryPassword(t, g, "127.0.0.94", victim.name, victim.password)
	bad, locked = accountState(t, victim.name)
	t.Logf("strangers from 127.0.0.92-93: %q; then the owner from 127.0.0.94: %q; badPwdCount %d, lockoutTime %d", more, r, bad, locked)
	if !strings.Contains(r, "throttled") || !strings.Contains(r, "of the account") {
		t.Errorf("after failures from three addresses the owner's attempt: %q, want the account throttled", r)
	}
	if bad >= lockoutThreshold || locked != 0 {
		t.Errorf("AD's lockout reached: badPwdCount %d, lockoutTime %d", bad, locked)
	}
}

// tryPassword sends one password for user from src and returns "" when it
// logged in (the node confirms who), else the audit reason (written when
// the check ends, which may be after the refusal).
func tryPassword(t *testing.T, g *harness.Gateway, src, user, password string) string {
	t.Helper()
	before := len(authEvents(t, g, user))
	rc := dialRaw(t, g, src)
	defer rc.Close()
	userauth(t, rc)
	r := send(t, rc, "password", rawssh.PasswordRequest(user, password))
	if r.Kind == rawssh.ReplySuccess {
		if got, _ := whoAmI(t, rc); got != user {
			t.Fatalf("logged in with %s's password, the node says %s", user, got)
		}
		return ""
	}
	var reason string
	err := harness.WaitFor(t.Context(), 30*time.Second, func() error {
		evs := authEvents(t, g, user)
		if len(evs) <= before {
			return fmt.Errorf("no audit event for the attempt yet")
		}
		reason = evs[len(evs)-1].Reason
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return reason
}

// authEvents are g's auth events for user.
func authEvents(t *testing.T, g *harness.Gateway, user string) []audit.Event {
	t.Helper()
	var out []audit.Event
	for _, e := range audits(t, g) {
		if e.Type == audit.TypeAuth && e.User == user {
			out = append(out, e)
		}
	}
	return out
}

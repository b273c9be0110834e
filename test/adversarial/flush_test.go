package adversarial_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
)

// The throttle's memory is bounded (throttle.max_entries); when it is
// full, a failure for a name it does not know yet makes room by dropping
// an entry — if every entry still restricts, an arbitrary one
// (internal/throttle: prune). Failures for names that do not exist fill
// it like any other. So a guesser who spends an account's allowance, then
// fails for enough made-up names, may find the account's history dropped
// and its allowance back: more than user_failures wrong passwords reach
// AD, and AD's lockout is reachable through frontdoor after all. Shown
// here with max_entries 2 (the default is 100000: the same needs ~100000
// failures, at 20 per source per 10 minutes some 5000 IPv4 addresses or
// IPv6 /64s).
func TestThrottleMemoryCannotBeFlushed(t *testing.T) {
	const (
		userFailures     = 3
		lockoutThreshold = 5
	)
	ctx := t.Context()
	dc.LockoutForTest(t, lockoutThreshold, 10*time.Minute)
	victim := testActor(ctx, t, "adv-flush")
	t.Cleanup(func() { dc.Unlock(context.Background(), victim.name) })
	g := newGateway(t, gwOptions{Edit: func(c *config.Config) {
		th := &c.Throttle
		th.UserFailures, th.UserSourceFailures, th.UserWindow, th.MaxEntries = userFailures, userFailures-1, 30*time.Minute, 2
	}})
	wrong := func(src, name string) {
		t.Helper()
		rc := dialRaw(t, g, src)
		userauth(t, rc)
		expect(t, "wrong password for "+name, send(t, rc, "password", rawssh.PasswordRequest(name, "Wrong-Passw0rd!")), rawssh.ReplyFailure)
		rc.Close()
	}
	for range userFailures + 1 {
		wrong("127.0.0.80", victim.name)
	}
	if e := lastAuth(t, g, victim.name); !strings.Contains(e.Reason, "throttled") {
		t.Fatalf("attempt %d for %s: %q, want throttled", userFailures+1, victim.name, e.Reason)
	}
	const junk = 12
	for i := range junk {
		wrong("127.0.0.81", fmt.Sprintf("adv-nobody-flush-%d", i))
	}
	const more = 3
	for range more {
		wrong("127.0.0.80", victim.name)
	}
	toAD := 0
	for _, e := range audits(t, g) {
		// 52e: a wrong password; 775: AD has locked the account.
		if e.Type == audit.TypeAuth && e.User == victim.name && (strings.Contains(e.Reason, "52e") || strings.Contains(e.Reason, "775")) {
			toAD++
		}
	}
	bad, locked := accountState(t, victim.name)
	t.Logf("throttle flush: %d wrong passwords for %s, %d failures for made-up names between, %d reached AD; badPwdCount %d, lockoutTime %d (lockout at %d)",
		userFailures+1+more, victim.name, junk, toAD, bad, locked, lockoutThreshold)
	if toAD > userFailures {
		t.Errorf("BUG: %d wrong passwords for %s reached AD, the throttle allows %d: failures for made-up names evicted the account's history (internal/throttle Throttle.get/prune)",
			toAD, victim.name, userFailures)
	}
}

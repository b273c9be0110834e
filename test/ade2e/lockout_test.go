package ade2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
)

// TestNoLockoutThroughFrontdoor sets a domain lockout threshold of 3 bad
// passwords and shows both sides: through a gateway that allows 2 failures
// per user, any number of wrong passwords never locks the account (the
// right password works afterwards, also through another gateway); through a
// gateway with a throttle above the threshold, AD locks the account, and
// frontdoor then refuses it for passwords (AD's 775) and keys alike.
//
// It changes a domain-wide setting, so it does not run in parallel (see
// outage_test.go): no other test's wrong passwords count against it.
func TestNoLockoutThroughFrontdoor(t *testing.T) {
	ctx := t.Context()
	dc.LockoutForTest(t, 3, 10*time.Minute)

	// Every client here connects from 127.0.0.1: the account's failures
	// from one address are its failures (user_source_failures).
	safe := newGateway(t, gwOptions{Edit: func(c *config.Config) {
		c.Throttle.UserFailures, c.Throttle.UserSourceFailures, c.Throttle.UserWindow = 2, 2, 30*time.Minute
	}})
	victim, err := createUser(ctx, uniqueName("ade-victim"), grpNested)
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		mustRefuse(t, safe.passwordClient(t, "password", "Wrong-Passw0rd!"), victim.Name)
	}
	var toAD, throttled int
	for _, e := range safe.authEvents(t, victim.Name) {
		switch {
		case strings.Contains(e.Reason, "52e"):
			toAD++
		case strings.Contains(e.Reason, "throttled"):
			throttled++
		default:
			t.Errorf("unexpected audit %q %q", e.Result, e.Reason)
		}
	}
	if toAD != 2 || throttled != 4 {
		t.Errorf("%d wrong passwords reached AD and %d were throttled, want 2 and 4:\n%s", toAD, throttled, safe.auditDump(t))
	}
	other := newGateway(t, gwOptions{})
	mustLogin(t, other.passwordClient(t, "password", pw(victim.Name)), victim.Name, victim.Name)

	// The counterfactual: with no effective throttle, AD locks the account.
	loose := newGateway(t, gwOptions{})
	locked, err := createUser(ctx, uniqueName("ade-locked"), grpNested)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Unlock(context.Background(), locked.Name) })
	for range 3 {
		mustRefuse(t, loose.passwordClient(t, "password", "Wrong-Passw0rd!"), locked.Name)
	}
	mustRefuse(t, loose.passwordClient(t, "password", pw(locked.Name)), locked.Name)
	loose.waitAudit(t, "locked (password)", func(e audit.Event) bool {
		return e.User == locked.Name && e.Method == gateway.MethodPassword && strings.Contains(e.Reason, "locked out")
	})
	mustRefuse(t, loose.keyClient(locked), locked.Name)
	loose.waitAudit(t, "locked (key)", failFor(locked.Name, gateway.MethodPublicKey, "ad: account locked out"))
}

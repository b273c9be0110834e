package ade2e_test

// The outage tests stop the package's one DC, so they must not overlap any
// other test: they do not call t.Parallel, and Go runs every sequential test
// before it resumes the parallel ones. They restore the DC before returning
// (also when they fail), so the parallel tests find it running.

import (
	"context"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// slack is what a bounded-time assertion allows on top of the AD timeouts
// and a normal login: room for a loaded 2-core machine, still far below the
// gateway's own 10 s lookup and 60 s login limits.
const slack = 3 * time.Second

// outageGateways are two gateways configured for the outage tests: every
// lookup asks AD (cache_ttl 1ms), so the first login after the DC stops
// meets the outage; online is retried every 100-500 ms. pwCache also keeps
// password hashes (cache_passwords). A password check with a hung DC can
// take two AD timeouts before the cache answers, so password_refusal_delay
// is above that, as docs/active-directory.md says to set it.
func outageGateways(t *testing.T) (plain, pwCache *adGateway) {
	outage := func(cachePasswords bool) gwOptions {
		return gwOptions{Edit: func(c *config.Config) {
			a := &c.Directory.AD
			a.CacheTTL, a.Timeout, a.CachePasswords = time.Millisecond, adTimeout, cachePasswords
			c.Gateway.PasswordRefusalDelay = 2*adTimeout + time.Second
		}}
	}
	plain = newGateway(t, outage(false))
	pwCache = newGateway(t, outage(true))
	return plain, pwCache
}

// restoreDC makes sure the DC runs and answers when the test ends.
func restoreDC(t *testing.T) {
	t.Cleanup(func() {
		dc.Resume() // an error means it was not paused
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if err := dc.Restart(ctx); err != nil {
			t.Errorf("restarting the DC after the outage test: %v", err)
		}
	})
}

// timedLogin logs in as user with c and returns how long ssh took.
func timedLogin(t *testing.T, c *harness.Client, user string) time.Duration {
	t.Helper()
	start := time.Now()
	mustLogin(t, c, user, user)
	return time.Since(start)
}

// outage runs the outage scenario: warm the caches, stop the DC with stop,
// check what works offline and how long the first login took, bring the DC
// back with start and check that the gateways are online again.
func outage(t *testing.T, what string, stop func() error, start func(context.Context) error) {
	restoreDC(t)
	ctx := t.Context()
	g, gpw := outageGateways(t)
	user := users[offName]
	// A user with a cached identity who gets disabled before the outage:
	// the outage must not resurrect them from the cache.
	late := uniqueName("ade-dis-" + what)
	lateUser, err := createUser(ctx, late, grpNested)
	if err != nil {
		t.Fatal(err)
	}

	// Online: both gateways cache offName (gpw with the password hash). The
	// slower of two logins is the baseline the offline ones are held to.
	online := max(timedLogin(t, g.keyClient(user), offName), timedLogin(t, g.keyClient(user), offName))
	mustLogin(t, g.keyClient(lateUser), late, late)
	mustLogin(t, gpw.passwordClient(t, "password", pw(offName)), offName, offName)
	if err := dc.Disable(ctx, late); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, g.keyClient(lateUser), late)
	t.Logf("online key login: %v", online.Round(time.Millisecond))

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()

	// The first key login meets the outage and is served from the cache
	// within a bounded time: at most two DC timeouts (a hanging search
	// connection, then a fresh dial) on top of a normal login.
	first := timedLogin(t, g.keyClient(user), offName)
	if bound := online + 2*adTimeout + slack; first > bound {
		t.Errorf("first key login with the DC %s took %v, want < %v", what, first.Round(time.Millisecond), bound)
	}
	if !g.dir.Offline() {
		t.Error("the directory does not say it is offline")
	}
	// Later ones do not wait for the DC at all: the identity comes from the
	// cache, marked so, at memory speed (timed in-process, where a loaded
	// machine cannot blur one DC timeout into ssh's own start-up).
	second := timedLogin(t, g.keyClient(user), offName)
	lstart := time.Now()
	id, err := g.dir.Lookup(ctx, offName)
	took := time.Since(lstart)
	if err != nil || !id.Cached || took >= adTimeout/2 {
		t.Errorf("lookup while offline: cached=%v err=%v in %v, want a cached identity at once", id.Cached, err, took)
	}
	t.Logf("DC %s: key logins from cache took %v, then %v", what, first.Round(time.Millisecond), second.Round(time.Millisecond))

	// Password logins need the DC...
	mustRefuseOffline(t, g.passwordClient(t, "password", pw(offName)), offName)
	g.waitAudit(t, "offline password refused", failFor(offName, gateway.MethodPassword, "ad: offline, password logins need a domain controller"))
	// ...unless the opt-in password cache verified this one before; a
	// wrong password is still wrong.
	mustLogin(t, gpw.passwordClient(t, "password", pw(offName)), offName, offName)
	mustRefuseOffline(t, gpw.passwordClient(t, "password", "Wrong-Passw0rd!"), offName)
	gpw.waitAudit(t, "offline wrong password", failFor(offName, gateway.MethodPassword, "ad: offline, cached password mismatch"))
	// Users never seen, and users disabled before the outage, stay out.
	mustRefuse(t, g.keyClient(users[aliceName]), aliceName)
	g.waitAudit(t, "offline uncached", failFor(aliceName, gateway.MethodPublicKey, "ad: offline, identity not cached"))
	mustRefuse(t, g.keyClient(lateUser), late)
	t.Logf("offline checks done %v after the DC %s", time.Since(stopped).Round(time.Millisecond), what)

	// DC back: the gateway goes online again by itself; a user created after
	// the recovery (unknown to every cache) logs in with key and password.
	if err := start(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	fresh := uniqueName("ade-new-" + what)
	freshUser, err := createUser(ctx, fresh, grpNested)
	if err != nil {
		t.Fatal(err)
	}
	err = harness.WaitFor(ctx, 30*time.Second, func() error {
		if got, r := whoami(t, g.keyClient(freshUser), fresh); got != fresh {
			return &resultError{r}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("new user after the DC came back: %v", err)
	}
	t.Logf("online again %v after the DC came back", time.Since(back).Round(time.Millisecond))
	if g.dir.Offline() {
		t.Error("the directory still says it is offline")
	}
	mustLogin(t, g.passwordClient(t, "password", pw(fresh)), fresh, fresh)
	mustLogin(t, g.passwordClient(t, "password", pw(offName)), offName, offName)
	mustRefuse(t, g.keyClient(lateUser), late)
}

// TestDCPaused: a hung DC (SIGSTOP: connections accepted, never answered).
func TestDCPaused(t *testing.T) {
	outage(t, "paused", dc.Pause, func(context.Context) error { return dc.Resume() })
}

// TestDCKilled: a crashed DC (SIGKILL: connections refused), restarted.
func TestDCKilled(t *testing.T) {
	outage(t, "killed", func() error { dc.Kill(); return nil }, dc.Restart)
}

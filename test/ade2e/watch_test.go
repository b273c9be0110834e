package ade2e_test

// The directory watch through a real gateway: an account disabled, expired,
// locked out or moved between groups in AD is refused or re-ruled at the
// door within a few watch intervals, with the OpenSSH client, although
// these gateways cache identities for an hour (cache_ttl 1h): only the
// watch can make them notice. Each test logs how long it took from the
// moment the change was committed to the first login that shows it.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// watchGateway is a gateway that caches identities for an hour and keeps
// the default watch_interval.
func watchGateway(t *testing.T, rules []policy.Rule) *adGateway {
	t.Helper()
	return newGateway(t, gwOptions{Rules: rules, Edit: func(c *config.Config) {
		c.Directory.AD.CacheTTL, c.Directory.AD.OfflineMaxAge = time.Hour, time.Hour
	}})
}

// watchBound is how soon after a change the door must show it: three
// watch intervals (one to notice, room for a round and a login under way)
// plus the slack of a loaded machine.
func (g *adGateway) watchBound() time.Duration {
	return 3*g.cfg.Directory.AD.WatchInterval + slack
}

// cachedIdentity waits until name's identity is answered from the
// gateway's cache (two lookups, one fetch), so what follows can only be
// noticed through the watch.
func (g *adGateway) cachedIdentity(t *testing.T, name string) {
	t.Helper()
	err := harness.WaitFor(t.Context(), 10*time.Second, func() error {
		a, err := g.dir.Lookup(t.Context(), name)
		if err != nil {
			return err
		}
		b, err := g.dir.Lookup(t.Context(), name)
		if err != nil || !b.FetchedAt.Equal(a.FetchedAt) {
			return fmt.Errorf("%s not answered from the cache (%v)", name, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// metric reads one series of the gateway directory's metrics.
func (g *adGateway) metric(t *testing.T, name, label, value string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(g.dir.Collectors()...)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// sambaTool runs samba-tool on the DC's database and returns when the change
// is committed.
func sambaTool(t *testing.T, args ...string) time.Time {
	t.Helper()
	if out, err := dc.Tool(t.Context(), args...); err != nil {
		t.Fatalf("samba-tool %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return time.Now()
}

// within polls logins as user with c until shows accepts one, at most
// g.watchBound() after start (the change), and reports how long it took.
func (g *adGateway) within(t *testing.T, what string, start time.Time, c *harness.Client, user string, shows func(string, harness.Result) bool) time.Duration {
	t.Helper()
	bound := g.watchBound()
	var last harness.Result
	err := harness.WaitFor(t.Context(), bound-time.Since(start), func() error {
		got, r := whoami(t, c, user)
		if shows(got, r) {
			return nil
		}
		last = r
		return fmt.Errorf("not yet: %v", &resultError{r})
	})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s: not within %v of the change (watch_interval %v): last login %v\naudit:\n%s", what, bound,
			g.cfg.Directory.AD.WatchInterval, last, g.auditDump(t))
	}
	t.Logf("%s: %v after the change (bound %v)", what, took.Round(time.Millisecond), bound)
	return took
}

func refusedLogin(_ string, r harness.Result) bool {
	return r.ExitCode == 255 && strings.Contains(string(r.Stderr), "Permission denied")
}

func deniedLogin(_ string, r harness.Result) bool {
	return r.ExitCode == 255 && strings.Contains(string(r.Stderr), "frontdoor: your account has no access")
}

// landedAs accepts a login that lands as user.
func landedAs(user string) func(string, harness.Result) bool {
	return func(got string, r harness.Result) bool { return r.ExitCode == 0 && got == user }
}

// refusedAfterChange logs a fresh account in with its key, caches it,
// applies change and checks that its key is refused within the bound with
// the audit reason.
func refusedAfterChange(t *testing.T, prefix, reason string, change func(name string) time.Time) {
	g := watchGateway(t, nil)
	name := uniqueName(prefix)
	u, err := createUser(t.Context(), name, grpNested)
	if err != nil {
		t.Fatal(err)
	}
	mustLogin(t, g.keyClient(u), name, name)
	g.cachedIdentity(t, name)
	start := change(name)
	g.within(t, reason, start, g.keyClient(u), name, refusedLogin)
	g.waitAudit(t, reason, failFor(name, gateway.MethodPublicKey, reason))
	if g.metric(t, "frontdoor_ad_cache_invalidations_total", "cause", "user_changed") == 0 {
		t.Error("frontdoor_ad_cache_invalidations_total{cause=user_changed} did not move")
	}
}

// TestWatchDisabledRefused: `samba-tool user disable` on a logged-in user.
func TestWatchDisabledRefused(t *testing.T) {
	t.Parallel()
	refusedAfterChange(t, "ade-wdis", "ad: account disabled", func(name string) time.Time {
		return sambaTool(t, "user", "disable", name)
	})
}

// TestWatchExpiryRefused: `samba-tool user setexpiry --days=0`.
func TestWatchExpiryRefused(t *testing.T) {
	t.Parallel()
	refusedAfterChange(t, "ade-wexp", "ad: account expired", func(name string) time.Time {
		return sambaTool(t, "user", "setexpiry", name, "--days=0")
	})
}

// TestWatchLockoutRefused: AD locks the account after wrong passwords
// tried elsewhere (straight at the DC); the gateway refuses its key.
//
// It changes the domain's lockout policy, so it does not run in parallel
// (see lockout_test.go).
func TestWatchLockoutRefused(t *testing.T) {
	dc.LockoutForTest(t, 3, 10*time.Minute)
	refusedAfterChange(t, "ade-wlock", "ad: account locked out", func(name string) time.Time {
		t.Cleanup(func() { dc.Unlock(context.Background(), name) })
		for range 3 {
			c, err := dc.Dial(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Bind(name+"@"+dc.UPNSuffix(), "Wrong-Passw0rd!"); err == nil {
				t.Fatal("a wrong password was accepted")
			}
			c.Close()
		}
		return time.Now()
	})
}

// TestWatchRegroupReRuled: a user in vision-lab (rule "vision") and in
// nlp-lab (rule researchers, through the nested group) is removed from
// vision-lab: the next logins go by the researchers rule.
func TestWatchRegroupReRuled(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	vision := uniqueName("ade-vision")
	if err := dc.CreateGroup(ctx, vision); err != nil {
		t.Fatal(err)
	}
	g := watchGateway(t, []policy.Rule{
		{Name: "vision", Groups: []string{vision}, Pools: []string{pool}},
		{Name: ruleName, Groups: []string{grpOuter}, Pools: []string{pool}},
	})
	name := uniqueName("ade-wbob")
	u, err := createUser(ctx, name, grpNested)
	if err != nil {
		t.Fatal(err)
	}
	if err := dc.AddMember(ctx, vision, name); err != nil {
		t.Fatal(err)
	}
	mustLogin(t, g.keyClient(u), name, name)
	if rule := g.lastRule(t, name); rule != "vision" {
		t.Fatalf("before: rule %q, want vision", rule)
	}
	g.cachedIdentity(t, name)
	start := sambaTool(t, "group", "removemembers", vision, name)
	g.within(t, "removed from "+vision+": re-ruled", start, g.keyClient(u), name, func(got string, r harness.Result) bool {
		return landedAs(name)(got, r) && g.lastRule(t, name) == ruleName
	})
	if g.metric(t, "frontdoor_ad_cache_invalidations_total", "cause", "group_changed") == 0 {
		t.Error("frontdoor_ad_cache_invalidations_total{cause=group_changed} did not move")
	}
}

// TestWatchNestedGroup: the only rule grants group P; the user is in C,
// nested in P. Taking C out of P denies the user within the bound;
// putting it back lets them in again.
func TestWatchNestedGroup(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	outer, inner := uniqueName("ade-wp"), uniqueName("ade-wc")
	if err := dc.CreateGroup(ctx, outer); err != nil {
		t.Fatal(err)
	}
	if err := dc.CreateGroup(ctx, inner, outer); err != nil {
		t.Fatal(err)
	}
	g := watchGateway(t, []policy.Rule{{Name: "nested", Groups: []string{outer}, Pools: []string{pool}}})
	name := uniqueName("ade-wnest")
	u, err := createUser(ctx, name, inner)
	if err != nil {
		t.Fatal(err)
	}
	mustLogin(t, g.keyClient(u), name, name)
	g.cachedIdentity(t, name)

	start := sambaTool(t, "group", "removemembers", outer, inner)
	g.within(t, "nested group taken out: denied", start, g.keyClient(u), name, deniedLogin)
	g.cachedIdentity(t, name)
	start = sambaTool(t, "group", "addmembers", outer, inner)
	g.within(t, "nested group put back: let in", start, g.keyClient(u), name, landedAs(name))
	if rule := g.lastRule(t, name); rule != "nested" {
		t.Errorf("rule %q, want nested", rule)
	}
}

// lastRule is the rule of user's last successful login.
func (g *adGateway) lastRule(t *testing.T, user string) string {
	t.Helper()
	rule := ""
	for _, e := range g.authEvents(t, user) {
		if e.Result == "ok" {
			rule = e.Rule
		}
	}
	return rule
}

package adversarial_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// Parallel password guesses must not pass the throttle and reach AD
// (issue 8, part 2). burstSize connections, each from its own source
// address (so per-source limits cannot help) and under one of the forms of
// the name (alice, ALICE, HPC\alice, alice@realm, alice+node), send a wrong
// password for one account at the same moment. The domain locks an account after
// lockoutThreshold bad passwords; the gateway allows userFailures. After
// the burst the account's badPwdCount, read from the DC, is at most
// userFailures, the account is not locked, and its owner logs in with the
// right password once the throttle lets them (being refused by the
// throttle meanwhile, never by an AD lockout).
//
// The account is the test's own: the other tests' wrong passwords for
// alice would count in badPwdCount too.
func TestParallelWrongPasswordsStayUnderLockout(t *testing.T) {
	const (
		burstSize        = 30
		userFailures     = 3
		lockoutThreshold = 5
	)
	ctx := t.Context()
	dc.LockoutForTest(t, lockoutThreshold, 10*time.Minute)
	victim := testActor(ctx, t, "adv-burst")
	g := newGateway(t, gwOptions{Edit: func(c *config.Config) {
		th := &c.Throttle
		th.UserFailures, th.UserSourceFailures, th.UserWindow = userFailures, userFailures-1, 30*time.Second
		th.SourceFailures, th.SourceWindow = 20, 10*time.Minute
		th.BaseDelay, th.MaxDelay = time.Second, 2*time.Second
	}})
	if bad, locked := accountState(t, victim.name); bad != 0 || locked != 0 {
		t.Fatalf("before the burst: badPwdCount %d, lockoutTime %d", bad, locked)
	}

	toAD, throttled, other, burstTime := burst(t, g, victim, burstSize)
	bad, locked := accountState(t, victim.name)
	t.Logf("burst: %d wrong passwords sent at once from %d sources in %v; %d binds reached AD, %d throttled, %d other %q; badPwdCount %d (lockout at %d, throttle allows %d), lockoutTime %d",
		burstSize, burstSize, burstTime.Round(time.Millisecond), toAD, throttled, len(other), other, bad, lockoutThreshold, userFailures, locked)
	if toAD > userFailures {
		t.Errorf("%d wrong passwords reached AD, the throttle allows %d", toAD, userFailures)
	}
	if bad > userFailures {
		t.Errorf("badPwdCount %d after the burst, the throttle allows %d", bad, userFailures)
	}
	if bad != int64(toAD) {
		t.Errorf("badPwdCount %d, but the audit log counts %d binds", bad, toAD)
	}
	if locked != 0 {
		t.Fatalf("the burst locked the account out in AD (lockoutTime %d)", locked)
	}

	// The owner, from yet another address: refused by the throttle while
	// it holds (never by AD), then logged in.
	var tries, refusedByThrottle int
	err := harness.WaitFor(ctx, 90*time.Second, func() error {
		tries++
		rc, err := tryDialRaw(ctx, g, "127.0.0.60")
		if err != nil {
			return err
		}
		defer rc.Close()
		if err := rc.RequestService("ssh-userauth"); err != nil {
			return err
		}
		r, err := rc.Auth(rawssh.PasswordRequest(victim.name, victim.password))
		if err != nil {
			return err
		}
		if r.Kind == rawssh.ReplySuccess {
			if got, _ := whoAmI(t, rc); got != victim.name {
				t.Fatalf("logged in with %s's password, the node says %s", victim.name, got)
			}
			return nil
		}
		last := lastAuth(t, g, victim.name)
		if !strings.Contains(last.Reason, "throttled") {
			t.Fatalf("the right password was refused, not by the throttle: %q", last.Reason)
		}
		refusedByThrottle++
		return fmt.Errorf("throttled: %s", last.Reason)
	})
	if err != nil {
		t.Fatal(err)
	}
	bad, locked = accountState(t, victim.name)
	t.Logf("afterwards: right password refused by the throttle %d times, then logged in (try %d); badPwdCount %d, lockoutTime %d", refusedByThrottle, tries, bad, locked)
	if locked != 0 {
		t.Errorf("account locked after all (lockoutTime %d)", locked)
	}

	// The counterfactual, so the figures above mean something: through a
	// gateway whose allowance is above the domain's threshold, the same
	// burst reaches AD until AD locks the account.
	loose := newGateway(t, gwOptions{})
	lockee := testActor(ctx, t, "adv-burst-loose")
	t.Cleanup(func() { dc.Unlock(context.Background(), lockee.name) })
	toAD, throttled, other, burstTime = burst(t, loose, lockee, burstSize)
	bad, locked = accountState(t, lockee.name)
	byReason := map[string]int{}
	for _, r := range other {
		byReason[r]++
	}
	t.Logf("counterfactual (user_failures 100): %d sent, %d binds reached AD with 52e, %d throttled, then %v; badPwdCount %d, lockoutTime %d",
		burstSize, toAD, throttled, byReason, bad, locked)
	if locked == 0 || toAD < lockoutThreshold {
		t.Errorf("without an effective throttle the burst should lock the account: %d binds, lockoutTime %d", toAD, locked)
	}
}

// burst sends n wrong passwords for victim to g at the same moment, each
// from its own source address and under one of the forms of the name, and counts from the audit log how many
// reached AD (52e: AD's "invalid credentials", the answer to a bind) and
// how many the throttle refused.
func burst(t *testing.T, g *harness.Gateway, victim *actor, n int) (toAD, throttled int, other []string, took time.Duration) {
	t.Helper()
	ctx := t.Context()
	// Every form of the name and every node suffix: one account, one
	// allowance.
	forms := []string{victim.name, strings.ToUpper(victim.name), dc.Domain() + `\` + victim.name,
		victim.name + "@" + dc.UPNSuffix(), victim.name + "+login1", strings.ToUpper(victim.name) + "+login2"}
	// Every connection is ready (key exchange done, ssh-userauth
	// accepted) before any password is sent; then all go at once.
	conns := make([]*rawssh.RawConn, n)
	for i := range conns {
		conns[i] = dialRaw(t, g, fmt.Sprintf("127.0.0.%d", 10+i))
		userauth(t, conns[i])
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	kinds := make([]string, n)
	for i, rc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := rc.Auth(rawssh.PasswordRequest(forms[i%len(forms)], fmt.Sprintf("Wrong-Passw0rd-%d!", i)))
			switch {
			case err != nil:
				kinds[i] = "error: " + err.Error()
			default:
				kinds[i] = r.Kind.String()
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	took = time.Since(t0)
	for i, k := range kinds {
		if k != rawssh.ReplyFailure.String() {
			t.Errorf("guess %d: %s, want failure", i, k)
		}
	}

	err := harness.WaitFor(ctx, 30*time.Second, func() error {
		toAD, throttled, other = 0, 0, nil
		for _, e := range audits(t, g) {
			// An account AD refuses is audited under the name typed.
			if e.Type != audit.TypeAuth || !strings.Contains(strings.ToLower(e.User), victim.name) || e.Method != gateway.MethodPassword {
				continue
			}
			switch {
			case strings.Contains(e.Reason, "52e"):
				toAD++
			case strings.Contains(e.Reason, "throttled"):
				throttled++
			default:
				other = append(other, e.Reason)
			}
		}
		if got := toAD + throttled + len(other); got < n {
			return fmt.Errorf("%d of %d guesses audited", got, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return toAD, throttled, other, took
}

// An answer the directory never gave is not a failed password (issue 20).
// With the DC stopped (SIGSTOP: connections accepted, never answered),
// attempts with the right password are refused, but count against no
// allowance and ban nobody, however many; once the DC is back the right
// password works within seconds (the next login asks for a reconnect at
// once; the backoff alone, grown meanwhile, would take longer), and the
// audit shows no throttle and no ban.
func TestOutageIsNotAFailedPassword(t *testing.T) {
	const tries = 6
	ctx := t.Context()
	victim := testActor(ctx, t, "adv-outage")
	g := newGateway(t, gwOptions{Edit: func(c *config.Config) {
		defaultThrottle(c)
		a := &c.Directory.AD
		a.Timeout, a.RetryMin, a.RetryMax = time.Second, 500*time.Millisecond, time.Minute
	}})
	if r := tryPassword(t, g, "127.0.0.70", victim.name, victim.password); r != "" {
		t.Fatalf("before the outage: %q", r)
	}
	if err := dc.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := dc.Resume(); err != nil {
				t.Errorf("resuming the DC: %v", err)
			}
		}
	}
	t.Cleanup(resume)
	var during []string
	for range tries {
		during = append(during, tryPassword(t, g, "127.0.0.70", victim.name, victim.password))
	}
	for i, r := range during {
		if r == "" || strings.Contains(r, "throttled") || strings.Contains(r, "banned") {
			t.Errorf("attempt %d with the DC stopped: %q", i, r)
		}
	}
	resume()
	back := time.Now()
	var tries2 int
	err := harness.WaitFor(ctx, 30*time.Second, func() error {
		tries2++
		if r := tryPassword(t, g, "127.0.0.70", victim.name, victim.password); r != "" {
			if strings.Contains(r, "throttled") || strings.Contains(r, "banned") {
				t.Fatalf("after the outage the right password was refused by the throttle: %q", r)
			}
			return fmt.Errorf("refused: %s", r)
		}
		return nil
	})
	took := time.Since(back)
	t.Logf("DC stopped: %d right-password attempts refused (%q); DC back: logged in %v later (attempt %d)", tries, during, took.Round(time.Millisecond), tries2)
	if err != nil {
		t.Fatal(err)
	}
	if took > 5*time.Second {
		t.Errorf("logins resumed %v after the DC's return, want within 5s", took)
	}
	for _, e := range audits(t, g) {
		if e.User == victim.name && (strings.Contains(e.Reason, "throttled") || strings.Contains(e.Reason, "banned")) {
			t.Errorf("audit: %q", e.Reason)
		}
	}
}

// accountState reads an account's badPwdCount and lockoutTime from the DC.
func accountState(t *testing.T, name string) (badPwdCount, lockoutTime int64) {
	t.Helper()
	c, err := dc.Dial(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Bind(dc.AdminDN(), dc.AdminPassword()); err != nil {
		t.Fatal(err)
	}
	res, err := c.Search(ldap.NewSearchRequest(dc.BaseDN(), ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 2, 10, false,
		"(sAMAccountName="+ldap.EscapeFilter(name)+")", []string{"badPwdCount", "lockoutTime"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 1 {
		t.Fatalf("%d entries for %s", len(res.Entries), name)
	}
	e := res.Entries[0]
	parse := func(attr string) int64 {
		v := e.GetAttributeValue(attr)
		if v == "" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s %s: %v", name, attr, err)
		}
		return n
	}
	return parse("badPwdCount"), parse("lockoutTime")
}

// lastAuth is the last auth event audited for user.
func lastAuth(t *testing.T, g *harness.Gateway, user string) audit.Event {
	t.Helper()
	var last audit.Event
	for _, e := range audits(t, g) {
		if e.Type == audit.TypeAuth && e.User == user {
			last = e
		}
	}
	return last
}

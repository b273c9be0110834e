package throttle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf/yamlconftest"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// limits is DefaultConfig with changes.
func limits(change func(c *Config)) Config {
	c := DefaultConfig()
	change(&c)
	return c
}

func newTest(cfg Config) (*Throttle, *clock) {
	c := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	cfg.Now = c.now
	return New(cfg), c
}

// step is one action in a scenario: advance the clock, then act, then check.
type step struct {
	advance  time.Duration
	act      string // "fail", "ok" or "" (only check)
	user     string
	src      string
	wantOK   bool
	wantWait time.Duration
}

func TestScenarios(t *testing.T) {
	base := limits(func(c *Config) {
		c.UserFailures = 3
		c.UserSourceFailures = 2
		c.UserWindow = 30 * time.Minute
		c.SourceFailures = 5
		c.SourceWindow = 10 * time.Minute
		c.BaseDelay = time.Second
		c.MaxDelay = 8 * time.Second
	})
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"fresh key passes", base, []step{
			{user: "alice", src: "10.0.0.1", wantOK: true},
		}},
		{"one failure no delay", base, []step{
			{act: "fail", user: "alice", src: "s", wantOK: true},
		}},
		{"one source spends the pair's allowance only", base, []step{
			{act: "fail", user: "alice", src: "s", wantOK: true},
			{act: "fail", user: "alice", src: "s", wantOK: false, wantWait: 30 * time.Minute},
			// the owner, from elsewhere, is not held back at all
			{user: "alice", src: "home", wantOK: true},
			{advance: 30 * time.Minute, user: "alice", src: "s", wantOK: true},
		}},
		{"backoff after second consecutive failure of a source", base, []step{
			{act: "fail", user: "u1", src: "s", wantOK: true},
			{act: "fail", user: "u2", src: "s", wantOK: false, wantWait: time.Second},
			{user: "u3", src: "s", wantOK: false, wantWait: time.Second},
			{advance: time.Second, user: "u3", src: "s", wantOK: true},
		}},
		{"the account escalates when several sources fail", base, []step{
			{act: "fail", user: "alice", src: "a", wantOK: true},
			{advance: time.Minute, act: "fail", user: "alice", src: "b", wantOK: true},
			{advance: time.Minute, act: "fail", user: "alice", src: "c", wantOK: false, wantWait: 28 * time.Minute},
			// every source now waits: the limit is the account's
			{advance: 10 * time.Minute, user: "alice", src: "d", wantOK: false, wantWait: 18 * time.Minute},
			{user: "bob", src: "d", wantOK: true},
			{advance: 18 * time.Minute, user: "alice", src: "d", wantOK: true},
		}},
		{"success resets the account and the pair", base, []step{
			{act: "fail", user: "alice", src: "a", wantOK: true},
			{advance: time.Minute, act: "fail", user: "alice", src: "b", wantOK: true},
			{advance: time.Minute, act: "ok", user: "alice", src: "b", wantOK: true},
			{act: "fail", user: "alice", src: "b", wantOK: true},
			{act: "fail", user: "alice", src: "c", wantOK: true},
		}},
		{"users are independent", base, []step{
			{act: "fail", user: "alice", src: ""},
			{act: "fail", user: "alice", src: ""},
			{act: "fail", user: "alice", src: "", wantOK: false, wantWait: 30 * time.Minute},
			{user: "bob", src: "", wantOK: true},
		}},
		{"source limit across users", base, []step{
			{act: "fail", user: "u1", src: "evil", wantOK: true},
			{advance: 10 * time.Second, act: "fail", user: "u2", src: "evil", wantOK: false, wantWait: time.Second},
			{advance: 10 * time.Second, act: "fail", user: "u3", src: "evil", wantOK: false, wantWait: 2 * time.Second},
			{advance: 10 * time.Second, act: "fail", user: "u4", src: "evil", wantOK: false, wantWait: 4 * time.Second},
			{advance: 10 * time.Second, act: "fail", user: "u5", src: "evil", wantOK: false, wantWait: 10*time.Minute - 40*time.Second},
			{user: "u6", src: "good", wantOK: true},
		}},
		{"success does not launder the source window", base, []step{
			{act: "fail", user: "u1", src: "x"},
			{act: "fail", user: "u2", src: "x"},
			{act: "fail", user: "u3", src: "x"},
			{act: "fail", user: "u4", src: "x"},
			{act: "ok", user: "me", src: "x"},
			{act: "fail", user: "u5", src: "x", wantOK: false, wantWait: 10 * time.Minute},
		}},
		{"backoff capped", base, []step{
			{act: "fail", user: "", src: "s"},
			{act: "fail", user: "", src: "s"},
			{act: "fail", user: "", src: "s"},
			{act: "fail", user: "", src: "s", wantOK: false, wantWait: 4 * time.Second},
			{advance: 4 * time.Second, act: "fail", user: "", src: "s", wantOK: false, wantWait: 10*time.Minute - 4*time.Second},
		}},
		{"window expiry", base, []step{
			{act: "fail", user: "alice", src: ""},
			{act: "fail", user: "alice", src: ""},
			{act: "fail", user: "alice", src: ""},
			{advance: 30 * time.Minute, user: "alice", src: "", wantOK: true, wantWait: 0},
		}},
		{"empty keys never throttled", base, []step{
			{act: "fail", user: "", src: ""},
			{act: "fail", user: "", src: ""},
			{user: "", src: "", wantOK: true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			th, c := newTest(tc.cfg)
			for i, s := range tc.steps {
				c.advance(s.advance)
				switch s.act {
				case "fail":
					th.Failure(s.user, s.src)
				case "ok":
					th.Success(s.user, s.src)
				}
				if s.act != "" && !s.wantOK && s.wantWait == 0 {
					continue // step only sets up state
				}
				wait, ok := th.Check(s.user, s.src)
				if ok != s.wantOK || wait != s.wantWait {
					t.Fatalf("step %d (%+v): Check = (%v, %v), want (%v, %v)", i, s, wait, ok, s.wantWait, s.wantOK)
				}
			}
		})
	}
}

// The defaults: one source never spends the whole account; a pair limit
// above the account's, or none, is refused.
func TestValidatePairLimit(t *testing.T) {
	if c := DefaultConfig(); c.UserSourceFailures >= c.UserFailures || c.Validate() != nil {
		t.Errorf("defaults %d/%d (%v): want a valid pair limit below the account's", c.UserSourceFailures, c.UserFailures, c.Validate())
	}
	for _, tc := range []struct {
		user, pair int
		ok         bool
	}{{3, 2, true}, {3, 3, true}, {1, 1, true}, {3, 4, false}, {3, 0, false}} {
		err := limits(func(c *Config) { c.UserFailures, c.UserSourceFailures = tc.user, tc.pair }).Validate()
		if (err == nil) != tc.ok {
			t.Errorf("user_failures %d, user_source_failures %d: %v, want ok=%v", tc.user, tc.pair, err, tc.ok)
		}
	}
}

// A stranger who keeps failing from one address, through reservations as
// the gateway makes them, never keeps the owner off from another address,
// and Waits says which key holds: the pair, then (several sources) the
// account.
func TestStrangerCannotLockOwnerOut(t *testing.T) {
	th, c := newTest(limits(func(c *Config) { c.BaseDelay, c.MaxDelay = time.Nanosecond, time.Nanosecond }))
	ctx := context.Background()
	attempt := func(src string, ok bool) error {
		r, _, err := th.Reserve(ctx, "alice", src)
		if err != nil {
			return err
		}
		if ok {
			r.Success()
		} else {
			r.Fail()
		}
		c.advance(time.Millisecond)
		return nil
	}
	var refused int
	for range 50 {
		if errors.Is(attempt("stranger", false), ErrThrottled) {
			refused++
		}
	}
	if refused != 48 {
		t.Fatalf("%d of 50 attempts from one source refused, want all but 2", refused)
	}
	if w := th.Waits("alice", "stranger"); w.Pair == 0 || w.Account != 0 {
		t.Fatalf("after one source's failures: %+v, want the pair held and not the account", w)
	}
	if err := attempt("owner", true); err != nil {
		t.Fatalf("the owner from another address: %v", err)
	}
	// A second and a third source: the account escalates.
	if err := attempt("stranger2", false); err != nil {
		t.Fatal(err)
	}
	if err := attempt("stranger2", false); err != nil {
		t.Fatal(err)
	}
	if err := attempt("stranger3", false); err != nil {
		t.Fatal(err)
	}
	if w := th.Waits("alice", "owner"); w.Account == 0 {
		t.Fatalf("three failures from two more sources: %+v, want the account held", w)
	}
	if err := attempt("owner", true); !errors.Is(err, ErrThrottled) {
		t.Fatalf("the owner after the escalation: %v, want throttled", err)
	}
}

// TestNeverReachesLockout drives an attacker who retries as soon as allowed
// for a day and checks that no 30-minute window ever holds as many failures
// for one user as AD's lockout threshold.
func TestNeverReachesLockout(t *testing.T) {
	const threshold = 5
	th, c := newTest(limits(func(c *Config) { c.UserFailures, c.UserWindow = threshold-1, 30*time.Minute }))
	var fails []time.Time
	end := c.t.Add(24 * time.Hour)
	for c.t.Before(end) {
		src := fmt.Sprintf("10.0.%d.%d", len(fails)/250, len(fails)%250) // a botnet: fresh source each time
		if wait, ok := th.Check("alice", src); !ok {
			c.advance(wait)
			continue
		}
		th.Failure("alice", src)
		fails = append(fails, c.t)
		c.advance(time.Millisecond)
	}
	for i := range fails {
		n := 0
		for j := i; j < len(fails) && fails[j].Sub(fails[i]) < 30*time.Minute; j++ {
			n++
		}
		if n >= threshold {
			t.Fatalf("%d failures within 30m starting %v", n, fails[i])
		}
	}
	if len(fails) < 24*2*(threshold-1)-1 {
		t.Errorf("only %d attempts in a day: throttle stricter than needed", len(fails))
	}
}

func TestMaxEntries(t *testing.T) {
	th, c := newTest(limits(func(c *Config) { c.MaxEntries = 10 }))
	for i := 0; i < 100; i++ {
		th.Failure(fmt.Sprintf("u%d", i), fmt.Sprintf("s%d", i))
		c.advance(time.Second)
	}
	if n := th.Len(); n > 30 { // accounts, pairs and sources: 10 each
		t.Fatalf("tracked %d keys, want <= 30", n)
	}
}

func TestConcurrent(t *testing.T) {
	th := New(DefaultConfig())
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				u := fmt.Sprintf("u%d", i%7)
				th.Check(u, "s")
				th.Failure(u, "s")
				if i%5 == 0 {
					th.Success(u, "s")
				}
			}
		}()
	}
	wg.Wait()
}

// A burst of parallel guesses for one account gets at most the allowance
// through to the directory, however they interleave: attempts in flight
// count, and only one per account is verified at a time.
func TestReserveParallelBurst(t *testing.T) {
	th := New(limits(func(c *Config) {
		c.UserFailures = 3
		c.UserWindow = time.Hour
		c.SourceFailures = 1000
		c.BaseDelay = time.Nanosecond
		c.MaxDelay = time.Nanosecond
	}))
	var mu sync.Mutex
	inFlight, maxInFlight, reached, refused := 0, 0, 0, 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, _, err := th.Reserve(context.Background(), "alice", fmt.Sprintf("10.0.0.%d", i))
			if err != nil {
				mu.Lock()
				refused++
				mu.Unlock()
				return
			}
			mu.Lock()
			inFlight++
			reached++
			maxInFlight = max(maxInFlight, inFlight)
			mu.Unlock()
			time.Sleep(time.Millisecond) // the "bind": hold the reservation a moment
			mu.Lock()
			inFlight--
			mu.Unlock()
			r.Fail()
		}()
	}
	close(start)
	wg.Wait()
	if reached > 3 || maxInFlight > 1 || reached+refused != 50 {
		t.Fatalf("reached the directory %d times (allowance 3), %d at once (cap 1), %d refused", reached, maxInFlight, refused)
	}
}

func TestReserveWaitsItsTurnAndHonoursContext(t *testing.T) {
	th := New(limits(func(c *Config) { c.UserFailures, c.MaxInFlightPerSource = 3, 1 }))
	r1, _, err := th.Reserve(context.Background(), "alice", "s")
	if err != nil {
		t.Fatal(err)
	}
	// A second attempt for the same account waits...
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := th.Reserve(ctx, "alice", "other"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second attempt while one is in flight: %v, want it to wait until the context ends", err)
	}
	// ...and so does another account from the same source (cap 1).
	got := make(chan error, 1)
	go func() {
		r, _, err := th.Reserve(context.Background(), "bob", "s")
		if err == nil {
			r.Release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("bob's attempt from a busy source did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	r1.Success()
	r1.Fail() // ignored: a reservation ends once
	if err := <-got; err != nil {
		t.Fatalf("bob's attempt after alice's ended: %v", err)
	}
	if wait, ok := th.Check("alice", "s"); !ok {
		t.Fatalf("alice throttled after a success (and an ignored Fail): wait %v", wait)
	}
}

func TestReserveRefusesWhenAllowanceUsed(t *testing.T) {
	th, clk := newTest(limits(func(c *Config) {
		c.UserFailures = 2
		c.UserSourceFailures = 2
		c.UserWindow = time.Hour
		c.BaseDelay = time.Nanosecond
		c.MaxDelay = time.Nanosecond
	}))
	for range 2 {
		r, _, err := th.Reserve(context.Background(), "alice", "s")
		if err != nil {
			t.Fatal(err)
		}
		r.Fail()
	}
	_, wait, err := th.Reserve(context.Background(), "alice", "s")
	if !errors.Is(err, ErrThrottled) || wait != time.Hour {
		t.Fatalf("third attempt: wait %v, %v; want ErrThrottled for 1h", wait, err)
	}
	clk.advance(time.Hour)
	if r, _, err := th.Reserve(context.Background(), "alice", "s"); err != nil {
		t.Fatalf("after the window: %v", err)
	} else {
		r.Release()
	}
}

// TestFullTableKeepsHistory: when every tracked name still restricts, a
// new name is refused rather than a victim's failures forgotten (a flood
// of made-up names must not reset an account's allowance).
func TestFullTableKeepsHistory(t *testing.T) {
	th, c := newTest(limits(func(c *Config) {
		c.MaxEntries = 3
		c.UserFailures = 3
		c.UserWindow = 30 * time.Minute
		c.SourceFailures = 1000
		c.SourceWindow = time.Minute
		c.BaseDelay = time.Nanosecond
		c.MaxDelay = time.Nanosecond
	}))
	ctx := context.Background()
	fail := func(user string) error {
		r, _, err := th.Reserve(ctx, user, "")
		if err != nil {
			return err
		}
		r.Fail()
		c.advance(time.Millisecond) // past the (1ns) backoff
		return nil
	}
	for range 3 {
		if err := fail("victim"); err != nil {
			t.Fatal(err)
		}
	}
	if err := fail("victim"); !errors.Is(err, ErrThrottled) {
		t.Fatalf("4th failure: %v, want throttled", err)
	}
	var refused int
	for i := range 20 {
		if err := fail(fmt.Sprintf("made-up-%d", i)); errors.Is(err, ErrThrottled) {
			refused++
		}
	}
	if refused < 18 {
		t.Fatalf("only %d of 20 new names refused with a full table", refused)
	}
	if err := fail("victim"); !errors.Is(err, ErrThrottled) {
		t.Fatalf("victim's history was flushed: %v", err)
	}
	// Once the window passes, entries stop restricting and names are
	// tracked again.
	c.advance(31 * time.Minute)
	if err := fail("made-up-new"); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   string // "" when valid
	}{
		{"defaults", func(c *Config) {}, ""},
		{"no failures allowed", func(c *Config) { c.UserFailures = 0 }, "throttle.user_failures: must be at least 1"},
		{"no source failures", func(c *Config) { c.SourceFailures = -1 }, "throttle.source_failures: must be at least 1"},
		{"no table", func(c *Config) { c.MaxEntries = 0 }, "throttle.max_entries: must be at least 1"},
		{"nobody may verify", func(c *Config) { c.MaxInFlightPerUser = 0 }, "throttle.max_in_flight_per_user"},
		{"no source slot", func(c *Config) { c.MaxInFlightPerSource = 0 }, "throttle.max_in_flight_per_source"},
		{"no window", func(c *Config) { c.UserWindow = 0 }, "throttle.user_window: must be positive"},
		{"no source window", func(c *Config) { c.SourceWindow = -time.Second }, "throttle.source_window: must be positive"},
		{"no backoff", func(c *Config) { c.BaseDelay = 0 }, "throttle.base_delay: must be positive"},
		{"cap below base", func(c *Config) { c.BaseDelay = 2 * time.Minute }, "throttle.max_delay: must be at least base_delay (2m0s)"},
		{"equal cap", func(c *Config) { c.BaseDelay, c.MaxDelay = time.Minute, time.Minute }, ""},
		{"no clock", func(c *Config) { c.Now = nil }, "no clock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yamlconftest.Problem(t, limits(tc.change).Validate(), tc.want)
		})
	}
}

package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness/sys"
)

func TestAdmission(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := newAdmission(AdmissionLimits{MaxStartups: 5, PerSourceMaxStartups: 3, PerSourceRate: 1, PerSourceBurst: 4}, clock)
	var held []func()
	admit := func(src, want string) {
		t.Helper()
		rel, why := a.admit(context.Background(), src)
		if why != want {
			t.Fatalf("admit(%s) refused %q, want %q", src, why, want)
		}
		if rel != nil {
			held = append(held, rel)
		}
	}
	admit("a", "")
	admit("a", "")
	admit("a", "")
	admit("a", admitPerSource) // three pending from a
	held[0]()
	held[0]()      // releasing twice is harmless
	admit("a", "") // fourth token of the burst
	held[1]()
	admit("a", admitRate) // burst of 4 used, no time passed
	now = now.Add(time.Second)
	admit("a", "") // one token per second
	admit("b", "")
	admit("c", "")
	admit("d", admitFull) // 5 pending: a×3, b, c
	if n := a.unauthenticated(); n != 5 {
		t.Fatalf("unauthenticated = %d, want 5", n)
	}
	rel, why := a.admitExempt(context.Background())
	if why != admitFull || rel != nil {
		t.Fatalf("exempt source beyond max_startups: %q", why)
	}
}

// TestAdmissionQueue: beyond MaxStartups a connection waits for a place,
// first come first served, while its context lasts; at most
// MaxStartupsQueue wait, and a waiter that gives up leaves the queue (and
// passes on a place handed to it as it gave up).
func TestAdmissionQueue(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := newAdmission(AdmissionLimits{MaxStartups: 2, MaxStartupsQueue: 2, PerSourceMaxStartups: 10, PerSourceRate: 1, PerSourceBurst: 10},
		func() time.Time { return now })
	ctx := context.Background()
	r1, _ := a.admit(ctx, "a")
	r2, _ := a.admit(ctx, "b")
	type result struct {
		name string
		rel  func()
		why  string
	}
	got := make(chan result, 4)
	wait := func(ctx context.Context, name string, n int) {
		go func() {
			rel, why := a.admit(ctx, name)
			got <- result{name, rel, why}
		}()
		if err := sys.WaitFor(context.Background(), 10*time.Second, func() error {
			if w := a.waiting(); w != n {
				return fmt.Errorf("%d waiting, want %d", w, n)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	gaveUp, giveUp := context.WithCancel(ctx)
	wait(ctx, "c", 1)
	wait(gaveUp, "d", 2)
	if rel, why := a.admit(ctx, "e"); why != admitFull || rel != nil {
		t.Fatalf("a third waiter beyond max_startups_queue: %q", why)
	}
	giveUp() // d leaves the queue, refused
	if r := <-got; r.name != "d" || r.why != admitFull || a.waiting() != 1 {
		t.Fatalf("%+v, %d waiting", r, a.waiting())
	}
	r1() // c takes a's place
	r := <-got
	if r.name != "c" || r.why != "" || a.unauthenticated() != 2 || a.waiting() != 0 {
		t.Fatalf("%+v, %d admitted, %d waiting", r, a.unauthenticated(), a.waiting())
	}
	r.rel()
	r2()
	if n := a.unauthenticated(); n != 0 {
		t.Fatalf("%d admitted after every release", n)
	}
	// A higher max_startups on reload lets waiters in at once.
	r1, _ = a.admit(ctx, "a")
	r2, _ = a.admit(ctx, "b")
	wait(ctx, "f", 1)
	a.setLimits(AdmissionLimits{MaxStartups: 3, MaxStartupsQueue: 2, PerSourceMaxStartups: 10, PerSourceRate: 1, PerSourceBurst: 10})
	if r := <-got; r.name != "f" || r.why != "" {
		t.Fatalf("after reload: %+v", r)
	}
}

func TestSourceKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:5555":            "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:22": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:22": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.7]:22":     "192.0.2.7",
		"[fe80::1%eth0]:22":         "fe80::/64",
		"not an address":            "not an address",
		"2001:db8:1:2:3:4:5:6":      "2001:db8:1:2::/64",
	} {
		if got := SourceKey(in); got != want {
			t.Errorf("SourceKey(%q) = %q, want %q", in, got, want)
		}
	}
}

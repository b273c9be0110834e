package gateway

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A source that floods the gate waits behind itself: another source's
// lookup is granted at the next free place, ahead of every waiting lookup
// of the flood, and the flood's own limits refuse the rest at once.
func TestLookupGateFairness(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := newLookupGate(LookupLimits{Max: 2, PerSource: 2, PerSourceRate: 1, PerSourceBurst: 100}, func() time.Time { return now })
	ctx := context.Background()
	// The flood holds both places...
	var held []func()
	for range 2 {
		r, err := g.acquire(ctx, "flood", true)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	// ...and queues as many more as it may; beyond that it is refused.
	queued := make(chan func(), 100)
	for range queueFactor * 2 {
		go func() {
			r, err := g.acquire(ctx, "flood", true)
			if err != nil {
				t.Error(err)
				return
			}
			queued <- r
		}()
	}
	waitGate(t, g, func() bool { return len(g.sources["flood"].waiting) == queueFactor*2 })
	if _, err := g.acquire(ctx, "flood", true); !errors.Is(err, errLookupQueue) {
		t.Fatalf("a lookup over the flood's queue: %v, want errLookupQueue", err)
	}
	// Another source arrives last, and is served first.
	got := make(chan func(), 1)
	go func() {
		r, err := g.acquire(ctx, "other", true)
		if err != nil {
			t.Error(err)
			return
		}
		got <- r
	}()
	waitGate(t, g, func() bool { return g.sources["other"] != nil && len(g.sources["other"].waiting) == 1 })
	held[0]()
	select {
	case r := <-got:
		r()
	case r := <-queued:
		t.Fatal("a queued lookup of the flood went before another source's")
		r()
	case <-time.After(10 * time.Second):
		t.Fatal("the other source's lookup was never granted")
	}
	// The flood's queue drains afterwards.
	held[1]()
	for range queueFactor * 2 {
		select {
		case r := <-queued:
			r()
		case <-time.After(10 * time.Second):
			t.Fatal("the flood's queued lookups were not granted once there was room")
		}
	}
	if g.running != 0 {
		t.Fatalf("%d lookups still counted as running", g.running)
	}
}

// The per-source rate refuses names at once; an exempt source is not
// limited per source.
func TestLookupGateRate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := newLookupGate(LookupLimits{Max: 100, PerSource: 100, PerSourceRate: 2, PerSourceBurst: 5}, func() time.Time { return now })
	ctx := context.Background()
	n := 0
	for range 20 {
		r, err := g.acquire(ctx, "s", true)
		if errors.Is(err, errLookupRate) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		r()
	}
	if n != 5 {
		t.Fatalf("%d lookups granted at once, burst is 5", n)
	}
	now = now.Add(time.Second)
	if r, err := g.acquire(ctx, "s", true); err != nil {
		t.Fatalf("after a second (rate 2/s): %v", err)
	} else {
		r()
	}
	for i := range 50 {
		r, err := g.acquire(ctx, "", false)
		if err != nil {
			t.Fatalf("exempt source, lookup %d: %v", i, err)
		}
		r()
	}
}

// A waiter whose context ends leaves the queue, and a release after the
// grant gives the place back.
func TestLookupGateCancel(t *testing.T) {
	g := newLookupGate(LookupLimits{Max: 1, PerSource: 1, PerSourceRate: 100, PerSourceBurst: 100}, time.Now)
	r, err := g.acquire(context.Background(), "a", true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.acquire(ctx, "b", true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past the context: %v", err)
	}
	r()
	r() // once
	for i := range 3 {
		r, err := g.acquire(context.Background(), fmt.Sprintf("s%d", i), true)
		if err != nil {
			t.Fatal(err)
		}
		r()
	}
	if g.running != 0 || len(g.ready) != 0 {
		t.Fatalf("running %d, ready %d after everything ended", g.running, len(g.ready))
	}
}

// waitGate polls the gate's state (under its lock) until cond holds.
func waitGate(t *testing.T, g *lookupGate, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		ok := cond()
		g.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("gate never reached the expected state")
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}

func TestSpecBudgetPerSource(t *testing.T) {
	b := newSpecBudget(10, 10, 2)
	r1, ok1 := b.acquire("n1", "a")
	_, ok2 := b.acquire("n2", "a")
	_, ok3 := b.acquire("n1", "a")
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("per source 2: %v %v %v", ok1, ok2, ok3)
	}
	if _, ok := b.acquire("n1", "b"); !ok {
		t.Fatal("another source refused")
	}
	for range 5 {
		if _, ok := b.acquire("n3", ""); !ok {
			t.Fatal("an exempt source is limited per source")
		}
	}
	r1()
	r1()
	if _, ok := b.acquire("n1", "a"); !ok {
		t.Fatal("a released place was not returned")
	}
}

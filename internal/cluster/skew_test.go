package cluster

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// TestClockJump: one gateway's wall clock jumps 10 minutes ahead and back
// (the soak's clock-jump fault). While it is ahead, that gateway keeps
// the node usable (its health is aged on the gateway's own clock, not
// compared with the node's), the other gateway refuses its gateway state
// as clock_skew and both report the offset; once it is back, what it
// writes reaches the other gateway at once, not after the 10 minutes its
// hybrid clock ran ahead.
func TestClockJump(t *testing.T) {
	var offset atomic.Int64 // gw2's clock, ns ahead of the real one
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	cfg2 := gatewayConfig("gw2", gw1)
	o2 := testOptions(t, cfg2, RoleGateway)
	o2.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	gw2 := startWith(t, cfg2, o2)
	n1 := start(t, agentConfig("n1", gw1, gw2), RoleAgent)
	if err := n1.PublishHealth(health("gpu")); err != nil {
		t.Fatal(err)
	}
	usable := func(gw *Cluster) error {
		stale := route.DefaultConfig().StaleAfter
		ns := gw.Nodes()
		if len(ns) != 1 || !ns[0].Alive {
			return fmt.Errorf("%s: nodes %+v", gw.Name(), ns)
		}
		if age := gw.now().Sub(ns[0].HealthAt); age > stale {
			return fmt.Errorf("%s: n1's health %v old by its clock (stale after %v)", gw.Name(), age.Round(time.Second), stale)
		}
		return nil
	}
	eventually(t, waitLong, func() error {
		if len(gw1.Members()) != 2 {
			return fmt.Errorf("members %+v", gw1.Members())
		}
		return errors.Join(usable(gw1), usable(gw2))
	})

	const jump = 10 * time.Minute
	offset.Store(int64(jump))
	eventually(t, waitLong, func() error {
		if off := gw2.ClockOffsets()["n1"]; off > -jump+time.Minute {
			return fmt.Errorf("gw2 sees n1's clock %v off", off)
		}
		return usable(gw2)
	})
	gw2.StartSession("bob", "n1") // written while ahead
	eventually(t, waitLong, func() error {
		if off := gw1.ClockOffsets()["gw2"]; off < jump-time.Minute {
			return fmt.Errorf("gw1 sees gw2's clock %v off", off)
		}
		if gw1.Refusals()[refusedClockSkew] == 0 {
			return fmt.Errorf("gw1 refusals %v", gw1.Refusals())
		}
		return nil
	})
	if err := usable(gw1); err != nil {
		t.Fatal(err)
	}

	offset.Store(0)
	back := time.Now()
	gw2.StartSession("alice", "n1")
	eventually(t, waitLong, func() error {
		if a := gw1.Affinity("alice"); a == nil || a.Node != "n1" || a.Live != 1 {
			return fmt.Errorf("gw1: alice's affinity %+v (refusals %v)", a, gw1.Refusals())
		}
		return nil
	})
	t.Logf("gw1 took gw2's write %v after its clock came back", time.Since(back).Round(time.Millisecond))
	eventually(t, waitLong, func() error { return errors.Join(usable(gw1), usable(gw2)) })
}

// TestMeasuredAtKeepsArrivalClock: a node's measurement time on our clock
// carries the monotonic reading of its arrival, with the node's clock
// agreeing with ours or not: a step of our own wall clock afterwards (the
// soak's clock jump) must not make health that arrived before it look
// stale. (It did for health that arrived just before the jump: one
// denied login in the soak.)
func TestMeasuredAtKeepsArrivalClock(t *testing.T) {
	recv := time.Now()
	for name, nodeClock := range map[string]time.Duration{"agreeing": 0, "behind": -10 * time.Minute, "ahead": 10 * time.Minute} {
		sent := recv.Add(nodeClock).Round(0)
		e := &entry{Ver: uint64(sent.UnixNano()), recv: recv}
		got := measuredAt(sent.Add(-2*time.Second), e)
		if got == got.Round(0) {
			t.Errorf("%s: %v has no monotonic reading", name, got)
		}
		if d := recv.Sub(got); d < 2*time.Second || d > 2*time.Second+100*time.Millisecond {
			t.Errorf("%s: measured %v before arrival, want 2s", name, d)
		}
	}
}

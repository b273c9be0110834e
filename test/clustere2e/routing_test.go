package clustere2e_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// healthBound is "within a few seconds": how long a health change (load,
// drain) may take to reach every gateway. The agent publishes a
// significant change at its next probe (250 ms here); gossip takes ~100 ms.
const healthBound = 5 * time.Second

// affinityBound is how long a user's affinity may take to reach the other
// gateway (direct sends, coalesced for 20 ms; TCP sync every 500 ms here).
const affinityBound = 5 * time.Second

func count(nodes []string, name string) int {
	n := 0
	for _, x := range nodes {
		if x == name {
			n++
		}
	}
	return n
}

// waitLoad waits until every gateway sees node at load1.
func (w *world) waitLoad(node string, load1 float64) time.Duration {
	w.t.Helper()
	took, err := w.waitAll(healthBound, func(v view) error {
		if got := v[node].Load1; got != load1 {
			return fmt.Errorf("%s load1 %.2f, want %.2f", node, got, load1)
		}
		return nil
	})
	if err != nil {
		w.t.Fatalf("load change of %s not seen by every gateway within %s: %v", node, healthBound, err)
	}
	return took
}

// TestLoadedNodeAvoided: raise one node's load1 in its metrics file; within
// a few seconds every gateway sees it and new logins of fresh users through
// either gateway go to the other nodes.
func TestLoadedNodeAvoided(t *testing.T) {
	w := newWorld(t, 2.0, 0.2, 2.0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Before: login2 is the least loaded, and logins do reach it (else
	// "avoided" below would prove nothing).
	for _, g := range w.gws {
		d, err := w.explain(ctx, g, probeUser().Name)
		if err != nil {
			t.Fatal(err)
		}
		if !(d.score["login2"] < d.score["login1"] && d.score["login2"] < d.score["login3"]) {
			t.Fatalf("%s: login2 should score best before the change:\n%s", g.name, d.text)
		}
	}
	before := w.burst(ctx, 8)
	if count(before, "login2") == 0 {
		t.Fatalf("no login reached the least-loaded node login2 before the change: %v", before)
	}

	// login2 becomes by far the busiest node (40 runnable tasks on 8 CPUs).
	start := time.Now()
	if err := w.node("login2").setLoad(40); err != nil {
		t.Fatal(err)
	}
	w.waitLoad("login2", 40)
	t.Logf("load change seen by both gateways after %s", time.Since(start).Round(time.Millisecond))
	for _, g := range w.gws {
		d, err := w.explain(ctx, g, probeUser().Name)
		if err != nil {
			t.Fatal(err)
		}
		if !(d.score["login2"] > d.score["login1"] && d.score["login2"] > d.score["login3"]) {
			t.Fatalf("%s: login2 should score worst after the change:\n%s", g.name, d.text)
		}
	}

	// After: OpenSSH through each gateway, then a burst through both.
	var after []string
	for _, g := range w.gws {
		u := w.freshUser()
		after = append(after, w.mustSSH(ctx, g, u.Name, u))
	}
	after = append(after, w.burst(ctx, 10)...)
	t.Logf("before: %v; after: %v (%s after the load change)", before, after, time.Since(start).Round(time.Millisecond))
	if n := count(after, "login2"); n > 0 {
		t.Fatalf("%d of %d logins after the change went to the loaded node login2: %v", n, len(after), after)
	}
}

// TestStickyAcrossGateways: a user reconnecting through the other gateway
// lands on the node of their first session: after it ended (recent
// affinity) and while it is still open (live session), even when that node
// has become the most loaded.
func TestStickyAcrossGateways(t *testing.T) {
	w := newWorld(t, 0.5, 0.5, 0.5)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gw1, gw2 := w.gws[0], w.gws[1]

	// Many users, equal loads: each reconnect through gw2 must find the
	// node its first login through gw1 chose (by chance: 1 in 3^6).
	const n = 6
	var us []*harness.User
	var first []string
	for range n {
		u := w.freshUser()
		node, err := w.goNode(ctx, gw1, u.Name, u)
		if err != nil {
			t.Fatal(err)
		}
		us = append(us, u)
		first = append(first, node)
	}
	var slowest time.Duration
	for i, u := range us {
		took, _, err := w.waitExplain(gw2, u.Name, affinityBound, func(d decision) error {
			if d.reason != "sticky" || d.order[0] != first[i] {
				return fmt.Errorf("want sticky to %s, got %s %v", first[i], d.reason, d.order)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, took)
	}
	t.Logf("affinities of %d users reached gw2 within %s", n, slowest.Round(time.Millisecond))
	for i, u := range us {
		node, err := w.goNode(ctx, gw2, u.Name, u)
		if err != nil {
			t.Fatal(err)
		}
		if node != first[i] {
			t.Errorf("%s: first login via gw1 on %s, reconnect via gw2 on %s", u.Name, first[i], node)
		}
	}

	// OpenSSH, session ended, node then loaded: only stickiness brings the
	// user back there.
	alice := w.freshUser()
	home := w.mustSSH(ctx, gw1, alice.Name, alice)
	w.node(home).setLoad(40)
	w.waitLoad(home, 40)
	if _, _, err := w.waitExplain(gw2, alice.Name, affinityBound, func(d decision) error {
		if d.reason != "sticky" || d.order[0] != home {
			return fmt.Errorf("want sticky to %s, got %s %v", home, d.reason, d.order)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if again := w.mustSSH(ctx, gw2, alice.Name, alice); again != home {
		t.Fatalf("%s: first session via gw1 on %s, reconnect via gw2 on %s", alice.Name, home, again)
	}

	// OpenSSH, session still open through gw2 (a VS Code window): a second
	// connection through gw1 joins it, on the loaded node.
	bob := w.freshUser()
	h := w.hold(ctx, gw2, bob.Name, bob)
	if h.node != home {
		w.node(h.node).setLoad(40)
		w.waitLoad(h.node, 40)
	}
	if _, _, err := w.waitExplain(gw1, bob.Name, affinityBound, func(d decision) error {
		if d.reason != "sticky" || d.order[0] != h.node {
			return fmt.Errorf("want sticky to %s, got %s %v", h.node, d.reason, d.order)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if again := w.mustSSH(ctx, gw1, bob.Name, bob); again != h.node {
		t.Fatalf("%s: live session via gw2 on %s, second connection via gw1 on %s", bob.Name, h.node, again)
	}
	if err := h.ping("still-there"); err != nil {
		t.Fatal(err)
	}
}

// TestSessionCapAcrossGateways: max_sessions counts a user's sessions on
// every gateway (gossiped), so a second session through the other gateway
// is refused with the cap's message; once the first ends, it is allowed.
func TestSessionCapAcrossGateways(t *testing.T) {
	u := cappedUser()
	w := newWorldOpts(t, worldOpts{rules: []policy.Rule{
		{Name: "capped", Users: []string{u.Name}, Pools: []string{"general"}, MaxSessions: 1},
		{Name: "everyone", Groups: []string{"*"}, Pools: []string{"general"}},
	}}, 1.0, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := w.hold(ctx, w.gws[0], u.Name, u)
	// gw2 counts gw1's session.
	if err := harness.WaitFor(ctx, 15*time.Second, func() error {
		out, err := harness.AdminGet(ctx, w.gws[1].admin, "/v1/explain?user="+url.QueryEscape(u.Name))
		if err != nil {
			return err
		}
		if !strings.Contains(out, "sessions 1 of 1") {
			return fmt.Errorf("gw2 explain: %s", out)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, r := w.sshNode(ctx, w.gws[1], u.Name, u)
	if r.ExitCode == 0 || !strings.Contains(string(r.Stderr), "you already have 1 sessions open") {
		t.Fatalf("second session through gw2: %v; stderr %q", r.Err, r.Stderr)
	}
	h.stdin.Close()
	<-h.done
	if err := harness.WaitFor(ctx, 15*time.Second, func() error {
		_, r := w.sshNode(ctx, w.gws[1], u.Name, u)
		if r.ExitCode != 0 {
			return fmt.Errorf("after the first ended: %v %q", r.Err, r.Stderr)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

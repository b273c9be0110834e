package clustere2e_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// waitDraining waits until every gateway shows node's drain state as want.
func (w *world) waitDraining(node string, want bool) time.Duration {
	w.t.Helper()
	took, err := w.waitAll(healthBound, func(v view) error {
		if v[node].Draining != want {
			return fmt.Errorf("%s draining=%v, want %v", node, v[node].Draining, want)
		}
		return nil
	})
	if err != nil {
		w.t.Fatalf("drain=%v of %s not seen by every gateway within %s: %v", want, node, healthBound, err)
	}
	return took
}

// checkDrained asserts what a drained node means to users: both gateways
// say why it is no candidate, fresh users go elsewhere, user+node is refused
// with a banner naming the reason, and the session already there works.
func (w *world) checkDrained(ctx context.Context, node string, h *held) {
	w.t.Helper()
	for _, g := range w.gws {
		// The CLI, as an operator would ask.
		r := w.cli(ctx, "explain", "--admin", g.admin, probeUser().Name)
		if r.ExitCode != 0 {
			w.t.Fatalf("frontdoor explain via %s: %s", g.name, r)
		}
		d, err := parseExplain(string(r.Stdout))
		if err != nil {
			w.t.Fatal(err)
		}
		if d.candidate[node] || d.why[node] != "draining" {
			w.t.Fatalf("%s: %s should be no candidate because draining:\n%s", g.name, node, d.text)
		}
		r = w.cli(ctx, "nodes", "--admin", g.admin)
		if r.ExitCode != 0 || !regexpLine(string(r.Stdout), node, "draining") {
			w.t.Fatalf("frontdoor nodes via %s should show %s draining: %s", g.name, node, r)
		}
	}
	// No new sessions: OpenSSH through each gateway, then a burst.
	var got []string
	for _, g := range w.gws {
		u := w.freshUser()
		got = append(got, w.mustSSH(ctx, g, u.Name, u))
	}
	got = append(got, w.burst(ctx, 8)...)
	if n := count(got, node); n > 0 {
		w.t.Fatalf("%d of %d new logins went to the draining node %s: %v", n, len(got), node, got)
	}
	// user+node to the draining node: refused, and told why.
	u := w.freshUser()
	for _, g := range w.gws {
		n, r := w.sshNode(ctx, g, u.Name+"+"+node, u)
		if r.ExitCode != 255 {
			w.t.Fatalf("%s+%s via %s should be refused, landed on %q: %s", u.Name, node, g.name, n, r)
		}
		want := fmt.Sprintf("login node %s is not available right now (draining)", node)
		if !strings.Contains(string(r.Stderr), want) {
			w.t.Fatalf("%s+%s via %s: stderr lacks the banner %q: %s", u.Name, node, g.name, want, r)
		}
	}
	// The session that was there keeps working.
	if err := h.ping("while-draining"); err != nil {
		w.t.Fatalf("existing session on %s: %v", node, err)
	}
}

// checkUndrained asserts the node takes explicit logins again.
func (w *world) checkUndrained(ctx context.Context, node string, h *held) {
	w.t.Helper()
	u := w.freshUser()
	for _, g := range w.gws {
		if got := w.mustSSH(ctx, g, u.Name+"+"+node, u); got != node {
			w.t.Fatalf("%s+%s via %s landed on %s", u.Name, node, g.name, got)
		}
	}
	if err := h.ping("after-undrain"); err != nil {
		w.t.Fatalf("existing session on %s: %v", node, err)
	}
}

// regexpLine reports whether a line of out starts with first and contains
// word as a field.
func regexpLine(out, first, word string) bool {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == first {
			for _, x := range f[1:] {
				if x == word {
					return true
				}
			}
		}
	}
	return false
}

// holdOn opens a long-running OpenSSH session on node (user+node).
func (w *world) holdOn(ctx context.Context, g *gw, node string) *held {
	w.t.Helper()
	u := w.freshUser()
	h := w.hold(ctx, g, u.Name+"+"+node, u)
	if h.node != node {
		w.t.Fatalf("%s+%s landed on %s", u.Name, node, h.node)
	}
	return h
}

// TestAdminDrain: `frontdoor drain --admin` on one gateway drains the node
// on both; `frontdoor undrain` on the other ends it.
func TestAdminDrain(t *testing.T) {
	// login2 is the least loaded: without the drain it would get most logins.
	w := newWorld(t, 2.0, 0.2, 2.0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gw1, gw2 := w.gws[0], w.gws[1]
	h := w.holdOn(ctx, gw1, "login2")

	r := w.cli(ctx, "drain", "--admin", gw1.admin, "login2")
	if r.ExitCode != 0 {
		t.Fatalf("frontdoor drain: %s", r)
	}
	// The admin recorded is the socket peer, as the kernel names it.
	if !strings.Contains(string(r.Stdout), "login2: draining (by unix:") {
		t.Fatalf("frontdoor drain should report who drained (the socket's peer): %s", r)
	}
	t.Logf("admin drain seen by both gateways after %s", w.waitDraining("login2", true).Round(time.Millisecond))
	w.checkDrained(ctx, "login2", h)

	r = w.cli(ctx, "undrain", "--admin", gw2.admin, "login2")
	if r.ExitCode != 0 {
		t.Fatalf("frontdoor undrain: %s", r)
	}
	t.Logf("admin undrain seen by both gateways after %s", w.waitDraining("login2", false).Round(time.Millisecond))
	w.checkUndrained(ctx, "login2", h)
}

// TestAgentDrain: `frontdoor agent drain --config` on the node (the drain
// file) drains it on every gateway; an admin undrain does not override
// the node's own drain; `frontdoor agent undrain` ends it.
func TestAgentDrain(t *testing.T) {
	w := newWorld(t, 2.0, 2.0, 0.2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gw2 := w.gws[1]
	n := w.node("login3")
	h := w.holdOn(ctx, gw2, "login3")

	r := w.cli(ctx, "agent", "drain", "--config", n.agentCfg, "--reason", "kernel update")
	if r.ExitCode != 0 || !strings.Contains(string(r.Stdout), "login3: draining") {
		t.Fatalf("frontdoor agent drain: %s", r)
	}
	if _, err := os.Stat(n.drain); err != nil {
		t.Fatalf("agent drain left no drain file: %v", err)
	}
	t.Logf("agent drain seen by both gateways after %s", w.waitDraining("login3", true).Round(time.Millisecond))
	w.checkDrained(ctx, "login3", h)

	// An admin undrain clears admin drains only: the node's own drain file
	// still holds it out. The gateway that took the undrain applied it at
	// once, so one look there is enough.
	if r := w.cli(ctx, "undrain", "--admin", gw2.admin, "login3"); r.ExitCode != 0 {
		t.Fatalf("frontdoor undrain: %s", r)
	}
	if d, err := w.explain(ctx, gw2, probeUser().Name); err != nil || d.why["login3"] != "draining" {
		t.Fatalf("login3 should still drain after an admin undrain (its drain file holds): %v\n%s", err, d.text)
	}

	r = w.cli(ctx, "agent", "undrain", "--config", n.agentCfg)
	if r.ExitCode != 0 || !strings.Contains(string(r.Stdout), "login3: undrained") {
		t.Fatalf("frontdoor agent undrain: %s", r)
	}
	t.Logf("agent undrain seen by both gateways after %s", w.waitDraining("login3", false).Round(time.Millisecond))
	w.checkUndrained(ctx, "login3", h)
}

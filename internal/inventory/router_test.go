package inventory

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

func testRouter(t *testing.T, now *time.Time) *Router {
	t.Helper()
	keys, err := node.LoadHostKeys(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	inv := New([]node.Node{{Name: "login1", Addr: "10.0.0.1:22", Pool: "general"}, {Name: "login2", Addr: "10.0.0.2:22", Pool: "general"}},
		keys, slog.New(slog.DiscardHandler))
	r := NewRouter(inv, nil, 15*time.Second)
	r.now = func() time.Time { return *now }
	r.static.now = r.now
	return r
}

// A node that failed at the node level is tried last by everyone; one
// that refused a user's certificate only by that user; both for
// login.FailPenalty.
func TestRouterFailures(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	r := testRouter(t, &now)
	r.NodeFailed("login1", "alice", false) // alice's certificate refused
	if f := r.View("alice").Failed; len(f) != 1 || !f["login1"].Equal(now) {
		t.Fatalf("alice's view: failed %v, want login1", f)
	}
	if f := r.View("bob").Failed; len(f) != 0 {
		t.Fatalf("bob's view: failed %v, want none (the failure was alice's)", f)
	}
	if f := r.View("").Failed; len(f) != 0 {
		t.Fatalf("the guess's view: failed %v, want none", f)
	}
	r.NodeFailed("login2", "alice", true) // login2 did not answer
	for _, u := range []string{"bob", ""} {
		if f := r.View(u).Failed; len(f) != 1 || !f["login2"].Equal(now) {
			t.Fatalf("view of %q: failed %v, want login2", u, f)
		}
	}
	// A session that starts clears the failure it disproves.
	r.SessionStarted("alice", "login1")
	if f := r.View("alice").Failed; len(f) != 1 {
		t.Fatalf("after alice's session on login1: failed %v, want login2 only", f)
	}
	now = now.Add(login.FailPenalty)
	if f := r.View("alice").Failed; len(f) != 0 {
		t.Fatalf("after the penalty: failed %v", f)
	}
	if len(r.fail) != 0 || len(r.userFail) != 0 {
		t.Fatalf("expired failures kept: %v %v", r.fail, r.userFail)
	}
}

// Without gossip the listed nodes are assumed up, loaded by this
// gateway's own sessions, with affinity kept here.
func TestRouterStatic(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	r := testRouter(t, &now)
	r.SessionStarted("alice", "login2")
	r.SessionStarted("bob", "login2")
	v := r.View("alice")
	if len(v.Nodes) != 2 || v.Nodes[1].Sessions != 2 || v.Nodes[1].Users != 2 || !v.Nodes[0].Alive {
		t.Fatalf("nodes %+v", v.Nodes)
	}
	if v.Affinity == nil || v.Affinity.Node != "login2" || v.Affinity.Live != 1 {
		t.Fatalf("affinity %+v", v.Affinity)
	}
	r.SessionEnded("alice", "login2")
	if a := r.View("alice").Affinity; a == nil || a.Live != 0 || !a.LastSeen.Equal(now) {
		t.Fatalf("affinity after the end %+v", a)
	}
}

// Discovered nodes join the list unless configured under the same name or
// not taking logins; the configured node's address and pool win.
func TestInventoryDiscovered(t *testing.T) {
	keys, _ := node.LoadHostKeys(nil, true)
	inv := New([]node.Node{{Name: "login1", Addr: "10.0.0.1:22", Pool: "general"}}, keys, slog.New(slog.DiscardHandler))
	inv.SetDiscovered([]discovery.Node{
		{Node: node.Node{Name: "login1", Addr: "10.9.9.9:22", Pool: "evil"}, Eligible: true},
		{Node: node.Node{Name: "ip-10-1-0-11", Addr: "10.1.0.11:22", Pool: "general"}, Eligible: true},
		{Node: node.Node{Name: "ip-10-1-0-12", Addr: "10.1.0.12:22", Pool: "general"}, Status: "Pending", Reason: "pending"},
		{Node: node.Node{Name: "ip-10-1-0-13", Pool: "general"}, Status: "Running", Eligible: true},
	})
	if got := addrs(inv.List()); !slices.Equal(got, []string{"ip-10-1-0-11 10.1.0.11:22", "login1 10.0.0.1:22"}) {
		t.Fatalf("list %v", got)
	}
	nt := inv.NotTaking()
	if nt["ip-10-1-0-12"] != "Pending: pending" || nt["ip-10-1-0-13"] != "Running: address not known yet" || len(nt) != 2 {
		t.Fatalf("not taking %v", nt)
	}
	if n, ok := inv.Node("login1"); !ok || n.Pool != "general" {
		t.Fatalf("login1 = %+v", n)
	}
}

func addrs(ns []node.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name+" "+n.Addr)
	}
	return out
}

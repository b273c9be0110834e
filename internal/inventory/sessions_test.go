package inventory

import (
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// Counts across an upgrade, without gossip: the old process hands its
// counts over and reports each change; the new one adds them to its own
// (node load, the user's cap) until the old one exits; a handover that
// fails gives the counts back to the old process's own view.
func TestRouterSessionsHandOver(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	old := testRouter(t, &now)
	old.SessionStarted("alice", "login1")
	old.SessionStarted("alice", "login1")
	old.SessionStarted("bob", "login2")

	var mu sync.Mutex
	var sent []cluster.Session
	snap := old.HandOver(func(user, node string, n int) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, cluster.Session{User: user, Node: node, N: n})
	})
	want := []cluster.Session{{User: "alice", Node: "login1", N: 2}, {User: "bob", Node: "login2", N: 1}}
	if !slices.Equal(snap, want) {
		t.Fatalf("snapshot %+v, want %+v", snap, want)
	}

	successor := testRouter(t, &now)
	for _, s := range snap {
		successor.Inherit(s.User, s.Node, s.N)
	}
	successor.SessionStarted("alice", "login2")
	if n := successor.SessionsInherited("alice"); n != 2 {
		t.Fatalf("alice's inherited sessions: %d, want 2", n)
	}
	if n := successor.InheritedTotal(); n != 3 {
		t.Fatalf("inherited in all: %d, want 3", n)
	}
	v := successor.View("alice")
	if v.Nodes[0].Sessions != 2 || v.Nodes[1].Sessions != 2 {
		t.Fatalf("successor's load: %+v", v.Nodes)
	}

	// A session ends in the old process: the count goes to the successor.
	old.SessionEnded("alice", "login1")
	if !slices.Equal(sent, []cluster.Session{{User: "alice", Node: "login1", N: 1}}) {
		t.Fatalf("sent %+v", sent)
	}
	successor.Inherit("alice", "login1", 1)
	if v := successor.View(""); v.Nodes[0].Sessions != 1 {
		t.Fatalf("login1 after the end: %+v", v.Nodes[0])
	}
	// The old process exits: its sessions are gone with it.
	successor.ForgetInherited()
	if n := successor.SessionsInherited("alice"); n != 0 {
		t.Fatalf("inherited after the exit: %d", n)
	}
	if v := successor.View(""); v.Nodes[0].Sessions != 0 || v.Nodes[1].Sessions != 1 {
		t.Fatalf("successor's load after the exit: %+v", v.Nodes)
	}

	// Had the handover failed, the old process counts on its own again,
	// with what changed meanwhile.
	old.Resume(nil, nil)
	if v := old.View(""); v.Nodes[0].Sessions != 1 || v.Nodes[1].Sessions != 1 {
		t.Fatalf("old process's load after Resume: %+v", v.Nodes)
	}
	old.SessionEnded("bob", "login2")
	if len(sent) != 1 {
		t.Fatalf("sent after Resume: %+v", sent)
	}
	if v := old.View(""); v.Nodes[1].Sessions != 0 {
		t.Fatalf("login2 after bob's end: %+v", v.Nodes[1])
	}
}

// A reload replaces the configured nodes and keys; discovered ones stay.
func TestInventoryReload(t *testing.T) {
	keys, _ := node.LoadHostKeys(nil, true)
	inv := New([]node.Node{{Name: "login1", Addr: "10.0.0.1:22", Pool: "general"}}, keys, slog.New(slog.DiscardHandler))
	inv.SetDiscovered([]discovery.Node{{Node: node.Node{Name: "ip-10-1-0-11", Addr: "10.1.0.11:22", Pool: "general"}, Eligible: true}})
	inv.Reload([]node.Node{{Name: "login3", Addr: "10.0.0.3:22", Pool: "gpu"}}, keys)
	if got := addrs(inv.List()); !slices.Equal(got, []string{"ip-10-1-0-11 10.1.0.11:22", "login3 10.0.0.3:22"}) {
		t.Fatalf("after reload: %v", got)
	}
}

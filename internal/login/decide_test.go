package login

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	mk := func(name, pool string, load float64) route.Node {
		return route.Node{Node: node.Node{Name: name, Pool: pool, Addr: name + ":22"}, Alive: true, SSHDUp: true, HealthAt: now,
			CPUs: 8, MemAvailFrac: 0.9, Load1: load}
	}
	nodes := []route.Node{mk("login1", "general", 0.5), mk("login2", "general", 4), mk("gpu1", "gpu", 0.1)}
	pol := policy.Config{RefusalMessage: policy.DefaultRefusalMessage, Rules: []policy.Rule{
		{Name: "banned", Groups: []string{"banned"}, Deny: true},
		{Name: "lab", Groups: []string{"lab"}, Pools: []string{"general", "gpu"}, MaxSessions: 2},
		{Name: "students", Groups: []string{"students"}, Pools: []string{"general"}},
	}}
	principals := Principals{MinUID: 1000, Deny: []string{"ubuntu", "slurm"}}
	alice := directory.Identity{Name: "alice", Groups: []string{"lab"}, UID: 2001}
	dave := directory.Identity{Name: "dave", Groups: []string{"students"}}
	greedy := route.DefaultConfig()
	greedy.Choices = 10 // best of all: deterministic for the table
	base := func() Input {
		return Input{Ident: alice, Policy: pol, Principals: principals, Route: greedy,
			View: View{Nodes: nodes}, MaxAttempts: 3, Now: now}
	}
	tests := []struct {
		name       string
		mod        func(*Input)
		wantStage  string   // "" = allowed
		wantMsg    string   // part of the user message
		wantOrder  []string // exact target order when allowed (nil: not checked)
		wantFirst  string
		wantAtMost int
	}{
		{name: "root is never a principal", mod: func(in *Input) {
			in.Ident = directory.Identity{Name: "root", Groups: []string{"lab"}}
			in.Principals = Principals{}
		},
			wantStage: "principal", wantMsg: "personal account"},
		{name: "deny list, any case", mod: func(in *Input) { in.Ident = directory.Identity{Name: "Ubuntu", Groups: []string{"lab"}} },
			wantStage: "principal"},
		{name: "uid below the floor", mod: func(in *Input) { in.Ident.UID = 999 }, wantStage: "principal"},
		{name: "unknown uid passes the floor", mod: func(in *Input) { in.Ident.UID = 0 }, wantFirst: "gpu1"},
		{name: "a stated uid 0 is refused", mod: func(in *Input) { in.Ident.UID, in.Ident.UIDSet = 0, true }, wantStage: "principal"},
		{name: "no rule", mod: func(in *Input) { in.Ident = directory.Identity{Name: "eve", Groups: []string{"nobody"}} },
			wantStage: "policy", wantMsg: "no access"},
		{name: "deny rule", mod: func(in *Input) { in.Ident.Groups = []string{"banned", "lab"} }, wantStage: "policy"},
		{name: "session cap", mod: func(in *Input) { in.View.UserSessions = 2 }, wantStage: "session-cap", wantMsg: "2 sessions"},
		{name: "under the cap", mod: func(in *Input) { in.View.UserSessions = 1 }, wantFirst: "gpu1"},
		{name: "least loaded first", wantFirst: "gpu1", wantAtMost: 3},
		{name: "pools restrict", mod: func(in *Input) { in.Ident = dave }, wantOrder: []string{"login1", "login2"}},
		{name: "explicit node", mod: func(in *Input) { in.Explicit = "login2" }, wantOrder: []string{"login2"}},
		{name: "explicit unknown node", mod: func(in *Input) { in.Explicit = "login9" }, wantStage: "route", wantMsg: `no login node named "login9"`},
		{name: "explicit node outside pools", mod: func(in *Input) { in.Ident = dave; in.Explicit = "gpu1" },
			wantStage: "route", wantMsg: "pool gpu"},
		{name: "sticky beats load", mod: func(in *Input) {
			in.View.Affinity = &route.Affinity{Node: "login2", Live: 1, LastSeen: now}
		}, wantFirst: "login2"},
		{name: "failed node goes last", mod: func(in *Input) {
			in.Ident = dave
			in.View.Failed = map[string]time.Time{"login1": now.Add(-time.Second)}
		}, wantOrder: []string{"login2", "login1"}},
		{name: "old failure forgotten", mod: func(in *Input) {
			in.Ident = dave
			in.View.Failed = map[string]time.Time{"login1": now.Add(-time.Hour)}
		}, wantOrder: []string{"login1", "login2"}},
		{name: "max attempts", mod: func(in *Input) { in.MaxAttempts = 1 }, wantAtMost: 1, wantFirst: "gpu1"},
		{name: "no node healthy", mod: func(in *Input) { in.View.Nodes = nil }, wantStage: "route", wantMsg: "no login node is available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base()
			in.Rand = rand.New(rand.NewPCG(1, 2))
			if tt.mod != nil {
				tt.mod(&in)
			}
			out := Decide(in)
			if tt.wantStage != "" {
				if out.Refusal == nil || out.Refusal.Stage != tt.wantStage || !strings.Contains(out.Refusal.UserMsg, tt.wantMsg) {
					t.Fatalf("refusal %+v, want stage %q with %q", out.Refusal, tt.wantStage, tt.wantMsg)
				}
				if len(out.Targets) != 0 {
					t.Fatalf("refused but targets %v", out.Targets)
				}
				if out.Refusal.Reason == "" {
					t.Fatal("refusal without an audit reason")
				}
				return
			}
			if out.Refusal != nil {
				t.Fatalf("refused: %+v", out.Refusal)
			}
			var names []string
			for _, tg := range out.Targets {
				names = append(names, tg.Name)
				if tg.Addr != tg.Name+":22" {
					t.Errorf("target %s has address %s", tg.Name, tg.Addr)
				}
			}
			if tt.wantOrder != nil && strings.Join(names, ",") != strings.Join(tt.wantOrder, ",") {
				t.Errorf("targets %v, want %v", names, tt.wantOrder)
			}
			if tt.wantFirst != "" && (len(names) == 0 || names[0] != tt.wantFirst) {
				t.Errorf("targets %v, want %s first", names, tt.wantFirst)
			}
			if tt.wantAtMost > 0 && len(names) > tt.wantAtMost {
				t.Errorf("%d targets, want at most %d", len(names), tt.wantAtMost)
			}
			// Explain renders the same outcome.
			if ex := out.Explain(in); !strings.Contains(ex, "a login now would try, in order: "+strings.Join(names, ", ")) {
				t.Errorf("explain does not show the decision:\n%s", ex)
			}
		})
	}
}

// The preconnected node is taken when it is an equally valid least-loaded
// choice, never when routing is sticky or explicit.
func TestDecidePrefer(t *testing.T) {
	now := time.Now()
	var nodes []route.Node
	for _, n := range []string{"a", "b", "c"} {
		nodes = append(nodes, route.Node{Node: node.Node{Name: n, Pool: "p", Addr: n + ":22"}, Alive: true, SSHDUp: true, HealthAt: now, CPUs: 4, MemAvailFrac: 1})
	}
	in := Input{Ident: directory.Identity{Name: "u", Groups: []string{"g"}},
		Policy: policy.Config{Rules: []policy.Rule{{Name: "r", Groups: []string{"g"}, Pools: []string{"p"}}}},
		Route:  route.DefaultConfig(), View: View{Nodes: nodes}, MaxAttempts: 3, Now: now, Prefer: "c"}
	for seed := range uint64(20) {
		in.Rand = rand.New(rand.NewPCG(seed, seed))
		if out := Decide(in); out.Targets[0].Name != "c" {
			t.Fatalf("seed %d: preferred node not first: %v", seed, out.Targets)
		}
	}
	in.Explicit = "a"
	if out := Decide(in); len(out.Targets) != 1 || out.Targets[0].Name != "a" {
		t.Fatalf("prefer overrode an explicit node: %v", out.Targets)
	}
}

func TestSplitUser(t *testing.T) {
	tests := []struct {
		in, user, node string
		err            bool
	}{
		{"alice", "alice", "", false},
		{"alice+login2", "alice", "login2", false},
		{`HPC\alice+login2`, `HPC\alice`, "login2", false},
		{"alice@hpc.example.edu+gpu-1.x", "alice@hpc.example.edu", "gpu-1.x", false},
		{"a+b+login2", "a+b", "login2", false},
		{"alice+", "", "", true},
		{"alice+../etc", "", "", true},
		{"alice+lo gin", "", "", true},
		{"+login1", "", "", true},
		{"", "", "", true},
		{strings.Repeat("a", 300), "", "", true},
	}
	for _, tt := range tests {
		u, n, err := SplitUser(tt.in)
		if (err != nil) != tt.err || u != tt.user || n != tt.node {
			t.Errorf("SplitUser(%q) = %q, %q, %v", tt.in, u, n, err)
		}
		if err != nil && !errors.Is(err, directory.ErrInvalidName) {
			t.Errorf("SplitUser(%q) error %v is not ErrInvalidName", tt.in, err)
		}
	}
}

func FuzzSplitUser(f *testing.F) {
	for _, s := range []string{"alice", "alice+login1", `HPC\a+b`, "a+", "+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, n, err := SplitUser(s)
		if err != nil {
			return
		}
		if u == "" || (n != "" && !node.ValidName(n)) {
			t.Fatalf("SplitUser(%q) = %q, %q", s, u, n)
		}
		if n != "" && u+"+"+n != s || n == "" && u != s {
			t.Fatalf("SplitUser(%q) lost bytes: %q, %q", s, u, n)
		}
	})
}

// The gateway and the login nodes' AuthorizedPrincipalsCommand share this
// rule; a change to it must be deliberate.
func TestPrincipals(t *testing.T) {
	p := Principals{MinUID: 1000, Deny: []string{"ubuntu", " slurm "}}
	tests := []struct {
		name     string
		uid      int
		uidKnown bool
		refused  bool
	}{
		{"alice", 2001, true, false},
		{"alice", 0, false, false}, // uid unknown (no POSIX attributes): the node's own check decides
		{"alice", 999, true, true},
		{"alice", 0, true, true},
		{"ROOT", 0, false, true},
		{"Ubuntu", 5000, true, true},
		{"slurm", 5000, true, true},
	}
	for _, tt := range tests {
		why := p.Refuse(tt.name, tt.uid, tt.uidKnown)
		if (why != "") != tt.refused {
			t.Errorf("Refuse(%q, %d, %v) = %q, want refused=%v", tt.name, tt.uid, tt.uidKnown, why, tt.refused)
		}
	}
	if why := (Principals{}).Refuse("root", 0, false); why == "" {
		t.Error("root allowed with an empty deny list")
	}
	if why := (Principals{}).Refuse("toor", 0, true); why == "" {
		t.Error("uid 0 allowed with no floor")
	}
}

package route

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// testNode returns a healthy, idle candidate in pool "gpu" that tests modify.
func testNode(name string, mod ...func(*Node)) Node {
	n := Node{
		Node:  node.Node{Name: name, Pool: "gpu", Addr: name + ":22"},
		Alive: true, SSHDUp: true, HealthAt: now.Add(-time.Second),
		CPUs: 4, MemAvailFrac: 0.9,
	}
	for _, m := range mod {
		m(&n)
	}
	return n
}

func TestDecide(t *testing.T) {
	cfg := DefaultConfig()
	base := []Node{testNode("a"), testNode("b", func(n *Node) { n.Load1 = 2 }), testNode("c", func(n *Node) { n.Load1 = 4 })}
	tests := []struct {
		name      string
		req       Request
		nodes     []Node
		wantOrder []string
		wantErr   error
		wantWhy   string // RefusedError reason, or substring of Decision.Reason
	}{
		{name: "least loaded first, fallbacks by score",
			req: Request{Pools: []string{"gpu"}}, nodes: base, wantOrder: []string{"a", "b", "c"}},
		{name: "pool not allowed filtered",
			req:       Request{Pools: []string{"gpu"}},
			nodes:     []Node{testNode("a", func(n *Node) { n.Pool = "cpu" }), testNode("b")},
			wantOrder: []string{"b"}},
		{name: "no pools allows nothing",
			req: Request{}, nodes: base, wantErr: ErrNoCandidates},
		{name: "dead filtered",
			req:   Request{Pools: []string{"gpu"}},
			nodes: []Node{testNode("a", func(n *Node) { n.Alive = false }), testNode("b")}, wantOrder: []string{"b"}},
		{name: "sshd down filtered",
			req:   Request{Pools: []string{"gpu"}},
			nodes: []Node{testNode("a", func(n *Node) { n.SSHDUp = false }), testNode("b")}, wantOrder: []string{"b"}},
		{name: "stale health filtered",
			req:   Request{Pools: []string{"gpu"}},
			nodes: []Node{testNode("a", func(n *Node) { n.HealthAt = now.Add(-time.Minute) }), testNode("b")}, wantOrder: []string{"b"}},
		{name: "never reported filtered",
			req:   Request{Pools: []string{"gpu"}},
			nodes: []Node{testNode("a", func(n *Node) { n.HealthAt = time.Time{} }), testNode("b")}, wantOrder: []string{"b"}},
		{name: "draining filtered",
			req:   Request{Pools: []string{"gpu"}},
			nodes: []Node{testNode("a", func(n *Node) { n.Draining = true }), testNode("b")}, wantOrder: []string{"b"}},
		{name: "session cap filtered, recently routed counts",
			req: Request{Pools: []string{"gpu"}},
			nodes: []Node{
				testNode("a", func(n *Node) { n.MaxSessions = 10; n.Sessions = 10 }),
				testNode("b", func(n *Node) { n.MaxSessions = 10; n.Sessions = 8; n.RecentlyRouted = 2 }),
				testNode("c", func(n *Node) { n.MaxSessions = 10; n.Sessions = 9; n.Load1 = 100 }),
			},
			wantOrder: []string{"c"}},
		{name: "nothing left",
			req:     Request{Pools: []string{"gpu"}},
			nodes:   []Node{testNode("a", func(n *Node) { n.Draining = true })},
			wantErr: ErrNoCandidates},
		{name: "explicit candidate, no fallbacks",
			req: Request{Pools: []string{"gpu"}, Explicit: "c"}, nodes: base, wantOrder: []string{"c"}},
		{name: "explicit beats stickiness",
			req:   Request{Pools: []string{"gpu"}, Explicit: "c", Affinity: &Affinity{Node: "b", Live: 1}},
			nodes: base, wantOrder: []string{"c"}},
		{name: "explicit unknown",
			req: Request{Pools: []string{"gpu"}, Explicit: "zz"}, nodes: base, wantErr: ErrUnknownNode},
		{name: "explicit draining refused",
			req:     Request{Pools: []string{"gpu"}, Explicit: "a"},
			nodes:   []Node{testNode("a", func(n *Node) { n.Draining = true }), testNode("b")},
			wantErr: ErrRefused, wantWhy: WhyDraining},
		{name: "explicit other pool refused",
			req:     Request{Pools: []string{"gpu"}, Explicit: "a"},
			nodes:   []Node{testNode("a", func(n *Node) { n.Pool = "cpu" })},
			wantErr: ErrRefused, wantWhy: WhyPool},
		{name: "explicit dead refused",
			req:     Request{Pools: []string{"gpu"}, Explicit: "a"},
			nodes:   []Node{testNode("a", func(n *Node) { n.Alive = false })},
			wantErr: ErrRefused, wantWhy: WhyDead},
		{name: "sticky with live session beats load",
			req:       Request{Pools: []string{"gpu"}, Affinity: &Affinity{Node: "c", Live: 1, LastSeen: now.Add(-48 * time.Hour)}},
			nodes:     base,
			wantOrder: []string{"c", "a", "b"}, wantWhy: "sticky"},
		{name: "sticky within window after last session",
			req:       Request{Pools: []string{"gpu"}, Affinity: &Affinity{Node: "b", LastSeen: now.Add(-7 * time.Hour)}},
			nodes:     base,
			wantOrder: []string{"b", "a", "c"}, wantWhy: "sticky"},
		{name: "sticky expired",
			req:       Request{Pools: []string{"gpu"}, Affinity: &Affinity{Node: "b", LastSeen: now.Add(-9 * time.Hour)}},
			nodes:     base,
			wantOrder: []string{"a", "b", "c"}, wantWhy: "least-loaded"},
		{name: "sticky node draining falls back with a note",
			req: Request{Pools: []string{"gpu"}, Affinity: &Affinity{Node: "b", Live: 2}},
			nodes: []Node{testNode("a", func(n *Node) { n.Load1 = 1 }),
				testNode("b", func(n *Node) { n.Draining = true }), testNode("c")},
			wantOrder: []string{"c", "a"}, wantWhy: "sticky node b: draining"},
		{name: "sticky node gone",
			req:       Request{Pools: []string{"gpu"}, Affinity: &Affinity{Node: "old", Live: 1}},
			nodes:     base,
			wantOrder: []string{"a", "b", "c"}, wantWhy: "sticky node old: unknown"},
		{name: "sticky node no longer in allowed pools",
			req:       Request{Pools: []string{"gpu"}, Affinity: &Affinity{Node: "x", Live: 1}},
			nodes:     append([]Node{testNode("x", func(n *Node) { n.Pool = "cpu" })}, base...),
			wantOrder: []string{"a", "b", "c"}, wantWhy: WhyPool},
		{name: "max tries bounds fallbacks",
			req:       Request{Pools: []string{"gpu"}},
			nodes:     append(base, testNode("d", func(n *Node) { n.Load1 = 8 })),
			wantOrder: []string{"a", "b", "c"}},
		{name: "equal scores tie-break by name",
			req:       Request{Pools: []string{"gpu"}},
			nodes:     []Node{testNode("z"), testNode("m"), testNode("b")},
			wantOrder: []string{"b", "m", "z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Now = now
			d, err := Decide(tt.req, tt.nodes, cfg, nil)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if tt.wantWhy != "" {
					var re *RefusedError
					if !errors.As(err, &re) || re.Reason != tt.wantWhy {
						t.Fatalf("refusal = %v, want reason %q", err, tt.wantWhy)
					}
				}
				if len(d.Verdicts) != len(tt.nodes) {
					t.Fatalf("verdicts missing on error: %d of %d", len(d.Verdicts), len(tt.nodes))
				}
				return
			}
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if !slices.Equal(Names(d.Order), tt.wantOrder) {
				t.Fatalf("order = %v, want %v (reason %q)", d.Order, tt.wantOrder, d.Reason)
			}
			if tt.wantWhy != "" && !strings.Contains(d.Reason, tt.wantWhy) {
				t.Fatalf("reason = %q, want it to contain %q", d.Reason, tt.wantWhy)
			}
		})
	}
}

func TestVerdicts(t *testing.T) {
	nodes := []Node{
		testNode("c", func(n *Node) { n.Draining = true }),
		testNode("a"),
		testNode("b", func(n *Node) { n.Load1 = 4 }),
	}
	d, err := Decide(Request{Pools: []string{"gpu"}, Now: now}, nodes, DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Verdict{
		{Node: nodes[1].Node, Candidate: true, Score: Score(nodes[1], DefaultConfig().Weights), Rank: 1},
		{Node: nodes[2].Node, Candidate: true, Score: Score(nodes[2], DefaultConfig().Weights), Rank: 2},
		{Node: nodes[0].Node, Why: WhyDraining},
	}
	if !slices.Equal(d.Verdicts, want) {
		t.Fatalf("verdicts = %+v\nwant %+v", d.Verdicts, want)
	}
	out := Explain("alice", d, nil)
	for _, s := range []string{"NODE", "draining", "least-loaded, try a → b", "c     gpu   no"} {
		if !strings.Contains(out, s) {
			t.Errorf("explain output lacks %q:\n%s", s, out)
		}
	}
	_, err = Decide(Request{Pools: []string{"gpu"}, Explicit: "c", Now: now}, nodes, DefaultConfig(), nil)
	if out := Explain("alice", d, err); !strings.Contains(out, "refused") || !strings.Contains(out, "draining") {
		t.Errorf("explain of refusal:\n%s", out)
	}
}

func TestScore(t *testing.T) {
	w := Weights{Load: 1, Memory: 1, Pressure: 1, Sessions: 1, Users: 1}
	tests := []struct {
		name string
		n    Node
		want float64
	}{
		{"idle", Node{CPUs: 4, MemAvailFrac: 1}, 0},
		{"load per core", Node{CPUs: 4, MemAvailFrac: 1, Load1: 2}, 0.5},
		{"zero cpus is one", Node{MemAvailFrac: 1, Load1: 2}, 2},
		{"memory used", Node{CPUs: 1, MemAvailFrac: 0.25}, 0.75},
		{"pressure", Node{CPUs: 1, MemAvailFrac: 1, CPUPressure: 0.2, MemPressure: 0.1}, 0.3},
		{"pressure clamped", Node{CPUs: 1, MemAvailFrac: 1, CPUPressure: 5}, 1},
		{"sessions and routed per core", Node{CPUs: 2, MemAvailFrac: 1, Sessions: 3, RecentlyRouted: 1}, 2},
		{"users per core", Node{CPUs: 2, MemAvailFrac: 1, Users: 1}, 0.5},
		// Claims no node can make are clamped to the physical bounds:
		// none of them scores below an idle node (0).
		{"negative load is none", Node{CPUs: 4, MemAvailFrac: 1, Load1: -100}, 0},
		{"negative sessions are none", Node{CPUs: 1, MemAvailFrac: 1, Sessions: -50, RecentlyRouted: -3}, 0},
		{"negative users are none", Node{CPUs: 1, MemAvailFrac: 1, Users: -7}, 0},
		{"a billion CPUs are MaxCPUs", Node{CPUs: 1e9, MemAvailFrac: 1, Sessions: MaxCPUs}, 1},
		{"negative CPUs are one", Node{CPUs: -8, MemAvailFrac: 1, Load1: 3}, 3},
		{"more than all memory free is all", Node{CPUs: 1, MemAvailFrac: 7}, 0},
		{"negative free memory is none", Node{CPUs: 1, MemAvailFrac: -1}, 1},
		{"NaN load is the worst", Node{CPUs: 1, MemAvailFrac: 1, Load1: math.NaN()}, MaxTasks},
		{"NaN free memory is none", Node{CPUs: 1, MemAvailFrac: math.NaN()}, 1},
		{"NaN pressure is full", Node{CPUs: 1, MemAvailFrac: 1, CPUPressure: math.NaN()}, 1},
		{"infinite load is MaxTasks", Node{CPUs: 1, MemAvailFrac: 1, Load1: math.Inf(1)}, MaxTasks},
		{"negative pressure is none", Node{CPUs: 1, MemAvailFrac: 1, CPUPressure: -1, MemPressure: -1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Score(tt.n, w); got < tt.want-1e-9 || got > tt.want+1e-9 {
				t.Fatalf("Score = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPowerOfTwoChoicesSpreads checks the anti-herding property: many
// decisions on the same stale snapshot (what several gateways see between
// gossip rounds) spread over the good nodes instead of all landing on one,
// and never pick the worst node with d=2.
func TestPowerOfTwoChoicesSpreads(t *testing.T) {
	var nodes []Node
	for i := range 10 {
		nodes = append(nodes, testNode(string(rune('a'+i)), func(n *Node) { n.Load1 = float64(i) }))
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	for range 1000 {
		d, err := Decide(Request{Pools: []string{"gpu"}, Now: now}, nodes, DefaultConfig(), rnd)
		if err != nil {
			t.Fatal(err)
		}
		order := Names(d.Order)
		counts[order[0]]++
		if len(order) != 3 || slices.Contains(order[1:], order[0]) {
			t.Fatalf("bad order %v", d.Order)
		}
	}
	if counts["j"] != 0 {
		t.Errorf("worst node picked %d times with d=2", counts["j"])
	}
	if counts["a"] > 300 || counts["a"] < 100 {
		// With d=2 over 10 nodes the best is picked with probability 0.2.
		t.Errorf("best node picked %d/1000 times, want about 200", counts["a"])
	}
	cfg := DefaultConfig()
	cfg.Choices = 10
	d, _ := Decide(Request{Pools: []string{"gpu"}, Now: now}, nodes, cfg, rnd)
	if d.Order[0].Name != "a" {
		t.Errorf("greedy choice = %s, want a", d.Order[0].Name)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"stale":   func(c *Config) { c.StaleAfter = 0 },
		"sticky":  func(c *Config) { c.StickyFor = -1 },
		"choices": func(c *Config) { c.Choices = 0 },
		"tries":   func(c *Config) { c.MaxTries = 0 },
		"weight":  func(c *Config) { c.Weights.Load = -1 },
	} {
		c := DefaultConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("%s: invalid config accepted", name)
		}
	}
}

// TestLiarDoesNotWin: a node claiming impossible figures (what an agent
// whose node's root is lost can send) never scores below an idle honest
// node, so it cannot take every login; a node marked as having lied is no
// candidate at all, also when named explicitly.
func TestLiarDoesNotWin(t *testing.T) {
	honest := testNode("honest", func(n *Node) { n.CPUs, n.MemAvailFrac = 8, 1 })
	liar := testNode("liar", func(n *Node) {
		n.CPUs, n.Load1, n.Sessions, n.Users, n.MemAvailFrac = 1_000_000_000, -1e9, -1_000_000, -5, 100
		n.CPUPressure, n.MemPressure, n.RecentlyRouted = -1, -1, -100
	})
	w := DefaultConfig().Weights
	if s := Score(liar, w); s < 0 || s < Score(honest, w) {
		t.Fatalf("liar scores %v, honest idle node %v", s, Score(honest, w))
	}
	cfg := DefaultConfig()
	cfg.Choices = 2 // greedy over two: the better always wins
	d, err := Decide(Request{Pools: []string{"gpu"}, Now: now}, []Node{liar, honest}, cfg, nil)
	if err != nil || d.Order[0].Name != "honest" {
		t.Fatalf("order %v (%v), want honest first", d.Order, err)
	}
	liar.Lied = true
	d, err = Decide(Request{Pools: []string{"gpu"}, Now: now}, []Node{liar, honest}, cfg, nil)
	if err != nil || len(d.Order) != 1 || d.Order[0].Name != "honest" {
		t.Fatalf("order %v (%v), want honest only", d.Order, err)
	}
	var re *RefusedError
	if _, err := Decide(Request{Pools: []string{"gpu"}, Explicit: "liar", Now: now}, []Node{liar, honest}, cfg, nil); !errors.As(err, &re) || re.Reason != WhyLied {
		t.Fatalf("explicit liar: %v", err)
	}
}

// FuzzScore: whatever a node claims, its score is a number, never
// negative, and never better than the same node claiming nothing.
func FuzzScore(f *testing.F) {
	f.Add(0.0, 0, 0, 0, 1.0, 0.0, 0.0, 0)
	f.Add(-1e9, -5, 1_000_000_000, -3, 7.0, -1.0, -1.0, -100)
	f.Add(math.NaN(), 8, 4, 2, math.NaN(), math.Inf(1), math.Inf(-1), 1)
	f.Fuzz(func(t *testing.T, load float64, sessions, cpus, users int, mem, cp, mp float64, routed int) {
		n := Node{Load1: load, Sessions: sessions, CPUs: cpus, Users: users, MemAvailFrac: mem,
			CPUPressure: cp, MemPressure: mp, RecentlyRouted: routed}
		w := DefaultConfig().Weights
		s := Score(n, w)
		if math.IsNaN(s) || s < 0 {
			t.Fatalf("Score(%+v) = %v", n, s)
		}
		idle := Score(Node{CPUs: MaxCPUs, MemAvailFrac: 1}, w)
		if s < idle {
			t.Fatalf("Score(%+v) = %v, below the best honest score %v", n, s, idle)
		}
	})
}

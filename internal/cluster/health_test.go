package cluster

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// TestNodesWeighObservedSessions: a node's session and user counts are at
// least what the live gateways hold there, whatever the node claims; the
// logins routed since its measurement count once, not twice.
func TestNodesWeighObservedSessions(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name           string
		claimed, users int
		held           map[string]int // gateway/user → sessions held on n1
		routed         int            // logins routed since the measurement
		wantSessions   int            // Sessions + RecentlyRouted
		wantUsers      int
	}{
		{"claims match", 2, 2, map[string]int{"gw1/alice": 1, "gw2/bob": 1}, 0, 2, 2},
		{"claims fewer than held", 0, 0, map[string]int{"gw1/alice": 3, "gw2/bob": 2}, 0, 5, 2},
		{"claims more than held (logins not through us)", 40, 12, map[string]int{"gw1/alice": 1}, 0, 40, 12},
		{"routed since the measurement, now held", 2, 2, map[string]int{"gw1/alice": 1, "gw2/bob": 1, "gw1/carol": 1}, 1, 3, 3},
		{"routed, not yet held", 2, 2, map[string]int{"gw1/alice": 1, "gw2/bob": 1}, 1, 3, 2},
		{"held by a dead gateway: gone", 0, 0, map[string]int{"gw9/alice": 5}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := judge(t)
			testNodes.add(t, "n1")
			c.alive["gw2"] = Member{Name: "gw2"}
			at := now.Add(-time.Second)
			h := Health{Pool: "gpu", SSHDUp: true, At: at, CPUs: 8, Sessions: tt.claimed, Users: tt.users, MemAvailFrac: 1}
			c.st.set(&entry{Key: "h/n1", Ver: 1, Origin: "n1", Val: val(t, h), recv: now})
			for k, n := range tt.held {
				gw, user, _ := strings.Cut(k, "/")
				c.st.set(&entry{Key: "s/" + gw + "/n1/" + user, Ver: 1, Origin: gw, Val: val(t, sessionVal{N: n}), recv: now})
			}
			if tt.routed > 0 {
				c.st.set(&entry{Key: "r/gw1/n1", Ver: 1, Origin: "gw1", recv: now,
					Val: val(t, routedVal{Base: now.UnixMilli(), D: make([]int64, tt.routed)})})
			}
			ns := c.Nodes()
			if len(ns) != 1 {
				t.Fatalf("nodes %+v", ns)
			}
			n := ns[0]
			if got := n.Sessions + n.RecentlyRouted; got != tt.wantSessions || n.Users != tt.wantUsers {
				t.Fatalf("sessions %d (+%d routed), users %d; want %d, %d", n.Sessions, n.RecentlyRouted, n.Users, tt.wantSessions, tt.wantUsers)
			}
		})
	}
}

// TestNodesLiveness: alive is "a new version of the node's signed health
// arrived within NodeDeadAfter", by this gateway's clock, and nothing
// else; a node that lied within LiarPenalty is marked.
func TestNodesLiveness(t *testing.T) {
	c := judge(t)
	now := time.Now()
	c.now = func() time.Time { return now }
	h := Health{Pool: "gpu", SSHDUp: true, At: now.Add(-time.Hour), CPUs: 4, MemAvailFrac: 1}
	for name, recv := range map[string]time.Time{
		"fresh":   now.Add(-time.Second),
		"edge":    now.Add(-c.cfg.NodeDeadAfter),
		"silent":  now.Add(-c.cfg.NodeDeadAfter - time.Millisecond),
		"future":  now.Add(time.Minute), // a clock ahead of ours
		"liar":    now,
		"ex-liar": now,
	} {
		testNodes.add(t, name)
		c.st.set(&entry{Key: "h/" + name, Ver: 1, Origin: name, Val: val(t, h), recv: recv})
	}
	c.lied = map[string]time.Time{"liar": now.Add(-c.cfg.LiarPenalty), "ex-liar": now.Add(-c.cfg.LiarPenalty - time.Second)}
	want := map[string][2]bool{ // alive, lied
		"fresh": {true, false}, "edge": {true, false}, "silent": {false, false}, "future": {true, false},
		"liar": {true, true}, "ex-liar": {true, false},
	}
	ns := c.Nodes()
	if len(ns) != len(want) {
		t.Fatalf("%d nodes, want %d", len(ns), len(want))
	}
	for _, n := range ns {
		if w := want[n.Name]; n.Alive != w[0] || n.Lied != w[1] {
			t.Errorf("%s: alive %v lied %v, want %v %v", n.Name, n.Alive, n.Lied, w[0], w[1])
		}
		if !n.HealthAt.Equal(h.At) {
			t.Errorf("%s: health at %v, want the measurement's %v", n.Name, n.HealthAt, h.At)
		}
	}
	for node, want := range map[string]bool{"fresh": true, "silent": true, "liar": true, "nobody": false} {
		if got := c.AgentActiveSince(node, now.Add(-2*c.cfg.NodeDeadAfter)); got != want {
			t.Errorf("AgentActiveSince(%s) = %v, want %v", node, got, want)
		}
	}
}

// TestWarningsVocabulary: an agent's warnings reach the operator only from
// the fixed vocabulary.
func TestWarningsVocabulary(t *testing.T) {
	c := judge(t)
	h := Health{CPUs: 1, Warnings: []string{"rm -rf /", WarnPenaltyNotExempt, WarnPenaltyNotExempt, "\x1b[31m"}}
	c.st.set(&entry{Key: "h/n1", Ver: 1, Origin: "n1", Val: val(t, h), recv: time.Now()})
	c.st.set(&entry{Key: "h/n2", Ver: 1, Origin: "n2", Val: val(t, Health{CPUs: 1}), recv: time.Now()})
	got := c.NodeWarnings()
	if len(got) != 1 || len(got["n1"]) != 1 || got["n1"][0] != WarnPenaltyNotExempt {
		t.Fatalf("warnings %q", got)
	}
}

// FuzzHealth feeds a listed node's signed health, with arbitrary JSON for
// its value, through a gateway's whole intake (admit, merge, Nodes). It
// must never panic; whatever is taken is within the physical bounds, and
// no node route.Score can see scores below zero. Seeds in
// testdata/fuzz/FuzzHealth.
func FuzzHealth(f *testing.F) {
	c := judge(f)
	testNodes.add(f, "login1")
	f.Add([]byte(`{"p":"gpu","a":"127.0.1.1:22","up":true,"t":"2026-01-01T00:00:00Z","c":8,"l1":1,"m":0.5,"s":3,"u":2}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		now := time.Now()
		var raw json.RawMessage
		if json.Unmarshal(v, &raw) != nil {
			return
		}
		e := signed(t, entry{Key: "h/login1", Ver: uint64(now.UnixNano()), Origin: "login1", Val: raw})
		c.mu.Lock()
		c.st = newStore("gw1", c.cfg)
		c.mu.Unlock()
		c.apply([]entry{e}, false)
		h, ok := c.HealthOf("login1")
		if ok {
			if err := h.Check(now, c.cfg.MaxClockSkew); err != nil {
				t.Fatalf("took impossible health %s: %v", v, err)
			}
		}
		for _, n := range c.Nodes() {
			if s := route.Score(n, route.DefaultConfig().Weights); math.IsNaN(s) || s < 0 {
				t.Fatalf("score %v for %+v from %s", s, n, v)
			}
			if n.Sessions < 0 || n.Users < 0 || n.CPUs < 1 {
				t.Fatalf("node %+v from %s", n, v)
			}
		}
	})
}

package cluster

import (
	"fmt"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkLoginPath measures what a gateway does per login (Nodes,
// Affinity) with 50 nodes and state left by 3000 users' sessions.
func BenchmarkLoginPath(b *testing.B) {
	now := time.Now()
	c := &Cluster{cfg: DefaultConfig(), now: time.Now, log: slog.New(slog.DiscardHandler),
		st: newStore("gw1", DefaultConfig()), alive: map[string]Member{}, routed: map[string][]time.Time{}}
	c.cfg.Name = "gw1"
	for i := range 50 {
		n := fmt.Sprintf("n%02d", i)
		c.alive[n] = Member{Name: n}
		c.st.put("h/"+n, Health{Pool: "p", At: now, CPUs: 8}, now)
		c.st.put("r/gw1/"+n, routedVal{Base: now.UnixMilli(), D: make([]int64, 20)}, now)
	}
	for i := range 3000 {
		u := fmt.Sprintf("u%04d", i)
		n := fmt.Sprintf("n%02d", i%50)
		c.st.put("a/"+u, affinityVal{Node: n, Seen: now}, now)
		var v any = sessionVal{N: 1}
		if i%3 != 0 {
			v = nil
		}
		c.st.put("s/gw1/"+n+"/"+u, v, now)
	}
	b.ResetTimer()
	for i := range b.N {
		c.Nodes()
		c.Affinity(fmt.Sprintf("u%04d", i%3000))
	}
}

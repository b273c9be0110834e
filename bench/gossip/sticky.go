package main

// Stickiness: do reconnects through another gateway land on the node of
// the user's session, while it lives and after it ended?

import (
	"context"
	mrand "math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// sticky reconnects users of the last burst through another gateway,
// first while their session lives (a second VS Code connection), then
// after it ended.
func (b *bench) sticky(ctx context.Context) (StickyResult, error) {
	sessionsMu.Lock()
	ls := slices.Clone(lastLogins)
	sessionsMu.Unlock()
	b.rnd.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
	ls = ls[:min(300, len(ls))]
	rnd := mrand.New(mrand.NewPCG(b.o.seed, 99))
	same := func(l login) (bool, error) {
		other := b.gws[(l.gw+1+rnd.IntN(len(b.gws)-1))%len(b.gws)]
		d, err := route.Decide(route.Request{User: l.user, Pools: []string{"general"}, Affinity: other.Affinity(l.user), Now: time.Now()},
			other.Nodes(), b.rcfg, rnd)
		if err != nil {
			return false, err
		}
		if d.Order[0].Name != l.node && os.Getenv("BENCH_DEBUG") != "" {
			why := ""
			for _, v := range d.Verdicts {
				if v.Node.Name == l.node {
					why = v.Why
				}
			}
			a := other.Affinity(l.user)
			logf("debug sticky miss %s via %s: was %s, affinity %+v, reason %q, verdict %q", l.user, other.Name(), l.node, a, d.Reason, why)
		}
		return d.Order[0].Name == l.node, nil
	}
	var live, after int
	for _, l := range ls {
		ok, err := same(l)
		if err != nil {
			return StickyResult{}, err
		}
		if ok {
			live++
		}
	}
	for _, l := range ls {
		l.end()
		b.agentOf(l.node).addLive(-1)
		l.end = func() {}
	}
	// Reconnect right after the ends were issued: the affinity written at
	// session start is already everywhere; the end needs no propagation.
	for _, l := range ls {
		ok, err := same(l)
		if err != nil {
			return StickyResult{}, err
		}
		if ok {
			after++
		}
	}
	sessionsMu.Lock()
	for i := range lastLogins {
		for _, l := range ls {
			if lastLogins[i].user == l.user {
				lastLogins[i].end = func() {}
			}
		}
	}
	sessionsMu.Unlock()
	n := float64(len(ls))
	return StickyResult{N: len(ls), LiveShare: float64(live) / n, AfterEndShare: float64(after) / n, NLBExpectShare: 1 / float64(len(b.agents))}, ctx.Err()
}

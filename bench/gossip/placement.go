package main

// Placement: a burst of logins spread by blind baselines (round-robin,
// per-flow hashing, per-gateway least-connections; simulated) and by
// frontdoor's routing over gossiped load (for real, through the gateways).

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// login is one placed session, kept for the reconnect test.
type login struct {
	user string
	gw   int
	node string
	end  func()
}

var sessionsMu sync.Mutex // guards lastLogins

var lastLogins []login

// placement runs the baselines in simulation and frontdoor for real.
func (b *bench) placement(ctx context.Context, scenario string) ([]Placement, error) {
	n := len(b.agents)
	initial := make([]int, n)
	if scenario == "skewed" {
		// A few busy nodes, most lightly used: u² shape, 0..40 sessions.
		for i := range initial {
			u := b.rnd.Float64()
			initial[i] = int(40 * u * u)
		}
	}
	for i, a := range b.agents {
		a.mu.Lock()
		a.initial, a.live = initial[i], 0
		a.mu.Unlock()
	}
	if err := b.freshHealth(ctx); err != nil {
		return nil, err
	}
	var out []Placement
	add := func(strategy string, rate float64, counts []int) {
		mx, mean := imbalance(initial, counts)
		out = append(out, Placement{Scenario: scenario, Strategy: strategy, RatePerS: rate, Max: mx, Mean: mean,
			MaxOnMean: float64(mx) / mean, BestMaxOnMean: float64(waterFill(initial, b.o.logins)) / mean})
	}
	logins, g := b.o.logins, b.o.gateways

	// Blind round-robin over nodes (one rotation per gateway).
	counts := make([]int, n)
	next := make([]int, g)
	for i := range next {
		next[i] = b.rnd.IntN(n)
	}
	for i := range logins {
		gw := i % g
		counts[next[gw]]++
		next[gw] = (next[gw] + 1) % n
	}
	add("round-robin", 0, counts)

	// Per-flow hashing: each TCP flow has a fresh source port, so a
	// 5-tuple hash is uniform over nodes.
	counts = make([]int, n)
	for range logins {
		counts[b.rnd.IntN(n)]++
	}
	add("per-flow-hash (NLB)", 0, counts)

	// Per-gateway least-connections: each gateway knows only its own.
	counts = make([]int, n)
	own := make([][]int, g)
	for i := range own {
		own[i] = make([]int, n)
	}
	for i := range logins {
		gw := i % g
		best := 0
		for j := range n {
			if own[gw][j] < own[gw][best] || (own[gw][j] == own[gw][best] && b.rnd.IntN(2) == 0) {
				best = j
			}
		}
		own[gw][best]++
		counts[best]++
	}
	add("per-gateway-least-conn", 0, counts)

	// frontdoor, for real, at two arrival rates; between them the
	// sessions are ended and agents re-measure.
	for ri, rate := range []float64{100, 1000} {
		if ri > 0 {
			if err := b.reset(ctx); err != nil {
				return nil, err
			}
			for i, a := range b.agents {
				a.mu.Lock()
				a.initial = initial[i]
				a.mu.Unlock()
			}
			if err := b.freshHealth(ctx); err != nil {
				return nil, err
			}
		}
		placed, err := b.burst(ctx, scenario, logins, rate)
		if err != nil {
			return nil, err
		}
		add("frontdoor (gossip + p2c)", rate, placed)
		if os.Getenv("BENCH_DEBUG") != "" {
			for i := range placed {
				if initial[i]+placed[i] > 40 {
					logf("debug %s: initial %d placed %d", b.agents[i].name, initial[i], placed[i])
				}
			}
		}
		logf("frontdoor %s burst at %.0f/s done", scenario, rate)
	}
	return out, nil
}

// burst sends logins through the gateways in turn at rate per second.
func (b *bench) burst(ctx context.Context, scenario string, logins int, rate float64) ([]int, error) {
	idx := map[string]int{}
	for i, a := range b.agents {
		idx[a.name] = i
	}
	g := len(b.gws)
	var wg sync.WaitGroup
	errs := make([]error, g)
	results := make([][]login, g)
	interval := time.Duration(float64(time.Second) * float64(g) / rate)
	var failed atomic.Int64
	t0 := time.Now()
	for gi := range g {
		rnd := mrand.New(mrand.NewPCG(b.o.seed, uint64(gi)))
		wg.Go(func() {
			gw := b.gws[gi]
			for i := gi; i < logins; i += g {
				// Pace against the start so slow iterations do not
				// lower the rate.
				if d := time.Until(t0.Add(time.Duration(i/g) * interval)); d > 0 {
					time.Sleep(d)
				}
				if ctx.Err() != nil {
					errs[gi] = ctx.Err()
					return
				}
				user := fmt.Sprintf("%s-u%04d", scenario, i)
				d, err := route.Decide(route.Request{User: user, Pools: []string{"general"}, Affinity: gw.Affinity(user), Now: time.Now()},
					gw.Nodes(), b.rcfg, rnd)
				if err != nil {
					why := map[string]int{}
					for _, v := range d.Verdicts {
						why[v.Why]++
					}
					logf("login %s on %s refused: %v (verdicts %v)", user, gw.Name(), err, why)
					failed.Add(1)
					continue
				}
				node := d.Order[0].Name
				gw.NoteRouted(node)
				a := b.agents[idx[node]]
				a.mu.Lock()
				a.live++
				a.mu.Unlock()
				results[gi] = append(results[gi], login{user: user, gw: gi, node: node, end: gw.StartSession(user, node)})
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if n := failed.Load(); n > 0 {
		logf("%s burst at %.0f/s: %d logins refused", scenario, rate, n)
		b.refused += int(n)
	}
	counts := make([]int, len(b.agents))
	sessionsMu.Lock()
	lastLogins = lastLogins[:0]
	for _, r := range results {
		for _, l := range r {
			counts[idx[l.node]]++
			lastLogins = append(lastLogins, l)
		}
	}
	sessionsMu.Unlock()
	return counts, nil
}

// reset ends every session of the last burst and waits until agents have
// published a measurement after that, so routed counts from the burst no
// longer apply.
func (b *bench) reset(ctx context.Context) error {
	sessionsMu.Lock()
	for _, l := range lastLogins {
		l.end()
	}
	lastLogins = lastLogins[:0]
	sessionsMu.Unlock()
	for _, a := range b.agents {
		a.mu.Lock()
		a.live = 0
		a.mu.Unlock()
	}
	return b.freshHealth(ctx)
}

func imbalance(initial, added []int) (int, float64) {
	mx, sum := 0, 0
	for i := range initial {
		t := initial[i] + added[i]
		mx = max(mx, t)
		sum += t
	}
	return mx, float64(sum) / float64(len(initial))
}

// waterFill is the lowest possible maximum after adding logins sessions.
func waterFill(initial []int, logins int) int {
	for m := slices.Max(initial); ; m++ {
		room := 0
		for _, x := range initial {
			room += max(0, m-x)
		}
		if room >= logins {
			return m
		}
	}
}

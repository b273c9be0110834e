package main

// Health scenarios: how fast a health change reaches every gateway, and how
// fast a crashed node is out of every gateway's candidates.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// propagation changes one node's health and times until every gateway
// holds the new value.
func (b *bench) propagation(ctx context.Context) (Dist, error) {
	var lat []float64
	missed := 0
	defer func() { logf("propagation: %d trials missed", missed) }()
	for i := range b.o.trials {
		a := b.agents[b.rnd.IntN(len(b.agents))]
		marker := float64(1000 + i)
		a.mu.Lock()
		a.marker = marker
		a.mu.Unlock()
		t0 := time.Now()
		if err := a.publish(); err != nil {
			return Dist{}, err
		}
		err := poll(ctx, 10*time.Second, time.Millisecond, func() bool {
			for _, gw := range b.gws {
				if h, ok := gw.HealthOf(a.name); !ok || h.Load5 != marker {
					return false
				}
			}
			return true
		})
		if err != nil {
			if ctx.Err() != nil {
				return Dist{}, ctx.Err()
			}
			missed++
			logf("propagation trial %d (%s): %v", i, a.name, err)
			if missed >= 10 {
				logf("propagation: giving up after %d misses: the machine is too loaded to measure", missed)
				lat = append(lat, ms(time.Since(t0)))
				break
			}
		}
		lat = append(lat, ms(time.Since(t0)))
		// Spread trials over gossip rounds.
		time.Sleep(time.Duration(b.rnd.IntN(50)) * time.Millisecond)
	}
	d := dist(lat)
	d.Missed = missed
	return d, nil
}

// deadNodes crashes agents one at a time and times until no gateway
// counts them as candidates.
func (b *bench) deadNodes(ctx context.Context) (Dist, error) {
	var lat []float64
	for i := range min(b.o.kills, len(b.agents)-1) {
		a := b.agents[len(b.agents)-1-i]
		a.mu.Lock()
		a.dead = true
		a.mu.Unlock()
		t0 := time.Now()
		if err := a.c.Crash(); err != nil {
			return Dist{}, err
		}
		err := poll(ctx, 60*time.Second, 5*time.Millisecond, func() bool {
			for _, gw := range b.gws {
				if slices.Contains(candidates(gw.Nodes(), time.Now(), b.rcfg), a.name) {
					return false
				}
			}
			return true
		})
		if err != nil {
			return Dist{}, fmt.Errorf("dead node %s: %w", a.name, err)
		}
		lat = append(lat, ms(time.Since(t0)))
	}
	return dist(lat), nil
}

// candidates returns the names route.Decide would consider.
func candidates(nodes []route.Node, now time.Time, cfg route.Config) []string {
	d, _ := route.Decide(route.Request{Pools: []string{"general"}, Now: now}, nodes, cfg, nil)
	var out []string
	for _, v := range d.Verdicts {
		if v.Candidate {
			out = append(out, v.Node.Name)
		}
	}
	return out
}

package gateway

import "github.com/frontdoor-hpc/frontdoor/internal/config"

// A new configuration for a running gateway, in two steps so that nothing
// changes unless all of it can: Prepare loads and checks everything (the
// host keys, the user CA), Apply swaps it in at once. New connections take
// the new settings; a connection being set up keeps the settings it was
// accepted under, an open session its relay. The state the gateway keeps
// stays and takes the new limits: admission counts, the password
// throttle's failures and bans, the session table.

// Prepare loads what cfg names (validated by config.Load) with the parts
// of d that follow the configuration (Directory, NodeKeys, GPUUsage,
// Budget); the other fields of d are not used.
func Prepare(cfg *config.Config, d Deps) (*Prepared, error) {
	set, err := newSettings(cfg, d.configured())
	if err != nil {
		return nil, err
	}
	return &Prepared{set: set}, nil
}

// Apply makes p what new connections take.
func (g *Gateway) Apply(p *Prepared) {
	gc := p.set.cfg.Gateway
	g.admit.setLimits(admissionLimits(gc))
	g.lookups.setLimits(lookupLimits(gc))
	g.spec.setLimits(p.set.cfg.Backend.SpeculativeMax, p.set.cfg.Backend.SpeculativePerNode, p.set.cfg.Backend.SpeculativePerSource)
	if cap(*g.slots.Load()) != gc.MaxConnections {
		// Connections hold a place in the channel they took it from;
		// for a while both limits' connections are open.
		slots := make(chan struct{}, gc.MaxConnections)
		g.slots.Store(&slots)
	}
	old := g.pw.Load()
	old.throttle.SetLimits(p.set.cfg.Throttle)
	pw := *old
	pw.dir = p.set.dir
	if cap(old.checks) != gc.MaxPasswordChecks {
		pw.checks = make(chan struct{}, gc.MaxPasswordChecks)
	}
	g.pw.Store(&pw)
	if prev := g.set.Swap(p.set); prev != nil && prev.ca != p.set.ca {
		// A connection being set up may still sign with it: Close only
		// lets a KMS client's idle connections go.
		prev.ca.Close()
	}
}

// setLimits takes new admission limits; connections admitted stay
// counted.
func (a *admission) setLimits(lim AdmissionLimits) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lim = lim
	a.fill() // a higher max_startups lets waiters in now
}

// setLimits takes new bounds; places taken stay counted.
func (b *specBudget) setLimits(max, perNode, perSource int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.max, b.perNode, b.perSource = max, perNode, perSource
}

// setLimits takes new lookup limits; lookups running stay counted, and a
// higher max lets waiters in now.
func (g *lookupGate) setLimits(lim LookupLimits) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lim = lim
	g.dispatch()
}

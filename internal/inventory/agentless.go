package inventory

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
	"github.com/frontdoor-hpc/frontdoor/internal/sshprobe"
)

// Nodes without an agent. A node of the inventory whose agent is not
// reporting (not installed yet on a freshly discovered HyperPod node, say)
// is still usable if its sshd answers: the gateway checks the SSH banner
// itself and scores the node by sessions alone (the gateways' gossiped
// counts), with no load figures. Probes are a TCP connection that reads
// the banner and closes, every probeEvery: with OpenSSH 9.8's
// PerSourcePenalties each costs the gateway's address a "noauth" second,
// which decays faster than probes add it; list the gateways in
// PerSourcePenaltyExemptList anyway (deploy/).

const (
	probeEvery   = 5 * time.Second
	probeTimeout = 2 * time.Second
)

type probeResult struct {
	up bool
	at time.Time
}

// agentless merges the cluster's nodes with probed nodes of the inventory
// that have no fresh health.
type agentless struct {
	cl    *cluster.Cluster
	inv   *Inventory
	stale time.Duration // route.stale_after: older health counts as none
	now   func() time.Time

	mu     sync.Mutex // mu protects probed
	probed map[string]probeResult
}

func newAgentless(cl *cluster.Cluster, inv *Inventory, stale time.Duration) *agentless {
	return &agentless{cl: cl, inv: inv, stale: stale, now: time.Now, probed: map[string]probeResult{}}
}

// withoutHealth lists the inventory nodes no agent speaks for: none sent
// new signed health within route.stale_after, and none lied within the
// cluster's liar_penalty (cluster.AgentActiveSince). A node whose agent
// is there but cannot measure, or lies, or was declared dead by whoever
// holds the gossip key, is never probed: only silence for stale_after
// hands a node to the probe.
func (a *agentless) withoutHealth(now time.Time) []node.Node {
	var out []node.Node
	for _, n := range a.inv.List() {
		if !a.cl.AgentActiveSince(n.Name, now.Add(-a.stale)) {
			out = append(out, n)
		}
	}
	return out
}

// run probes the agentless nodes until ctx ends.
func (a *agentless) run(ctx context.Context) {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		a.probeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *agentless) probeOnce(ctx context.Context) {
	now := a.now()
	todo := a.withoutHealth(now)
	var wg sync.WaitGroup
	results := make([]probeResult, len(todo))
	for i, n := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := sshprobe.Probe(ctx, n.Addr, probeTimeout)
			results[i] = probeResult{up: err == nil, at: a.now()}
		}()
	}
	wg.Wait()
	a.mu.Lock()
	clear(a.probed)
	for i, n := range todo {
		a.probed[n.Name] = results[i]
	}
	a.mu.Unlock()
}

// Nodes is the cluster's view plus the probed agentless nodes.
func (a *agentless) Nodes() []route.Node {
	nodes := a.cl.Nodes()
	now := a.now()
	missing := a.withoutHealth(now)
	if len(missing) == 0 {
		return nodes
	}
	known := map[string]int{}
	var cpus []int
	for i, n := range nodes {
		known[n.Name] = i
		if !n.NoAgent && n.CPUs > 0 {
			cpus = append(cpus, n.CPUs)
		}
	}
	// Sessions are scored per CPU: give an agentless node the median CPU
	// count of the reporting ones, so its sessions weigh like theirs.
	guess := 1
	if len(cpus) > 0 {
		slices.Sort(cpus)
		guess = cpus[len(cpus)/2]
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range missing {
		p, ok := a.probed[m.Name]
		if !ok || now.Sub(p.at) > a.stale {
			continue
		}
		sessions, users := a.cl.SessionsOn(m.Name)
		n := route.Node{Node: m, Alive: p.up, SSHDUp: p.up, HealthAt: p.at,
			CPUs: guess, MemAvailFrac: 1, Sessions: sessions, Users: users, NoAgent: true}
		if i, ok := known[m.Name]; ok {
			// Stale agent health: the probe is fresher; keep the
			// admin drain the cluster knows of.
			n.Draining = nodes[i].Draining
			nodes[i] = n
		} else {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

func (a *agentless) Affinity(user string) *route.Affinity { return a.cl.Affinity(user) }

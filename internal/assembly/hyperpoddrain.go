package assembly

import (
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
)

// HyperPod's maintenance as drains (discovery/maintenance.go): every
// gateway applies what its own discovery sees. A node HyperPod is about
// to patch or replace is drained with discovery.drain_deadline unless a
// drain that ends sooner is in force (cluster.DrainIfSooner: the gateways
// noticing one after another do not push the deadline later); the drain
// ends when the node runs again or has left the listing, and only if
// discovery set it (an admin's drain of the same node stays).

// maintenanceCheckEvery is how often the listing is looked at again for
// drains, besides each change: the gossip member may start after the
// first refresh, and a drain written meanwhile by another gateway may
// have ended.
const maintenanceCheckEvery = 10 * time.Second

// discoveryDrains applies src's maintenance to the gateways' shared state.
func (a *Gateway) discoveryDrains(src *discovery.Source) {
	cl := a.cluster.Load()
	if cl == nil {
		return
	}
	listed := map[string]bool{}
	for _, m := range src.Maintenance() {
		listed[m.Node] = true
		if !m.Drain {
			if ended, err := cl.UndrainIf(m.Node, discovery.DrainBy); err != nil || ended {
				a.log.Info("discovery: node runs again; its drain ended", "node", m.Node, "err", err)
			}
			continue
		}
		deadline := time.Now().Add(src.DrainDeadline())
		wrote, err := cl.DrainIfSooner(m.Node, deadline, m.Message, discovery.DrainBy)
		if err != nil || wrote {
			a.log.Warn("discovery: HyperPod is about to patch or replace a node: drained; its sessions are told and closed at the deadline",
				"node", m.Node, "deadline", deadline, "reason", m.Message, "err", err)
		}
	}
	for _, n := range src.Nodes() {
		listed[n.Name] = true
	}
	for _, d := range cl.Drains() {
		if d.By == discovery.DrainBy && !listed[d.Node] {
			if ended, err := cl.UndrainIf(d.Node, discovery.DrainBy); err != nil || ended {
				a.log.Info("discovery: node left the cluster; its drain ended", "node", d.Node, "err", err)
			}
		}
	}
}

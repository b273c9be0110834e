package assembly

import (
	"fmt"
	"slices"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/maintenance"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// Maintenance drains in the gateway process: the admin API's drain with a
// deadline, the watcher that tells and closes this process's sessions on
// drained nodes, the drains in the node view, the status and the metrics,
// and HyperPod discovery's own drains (hyperpoddrain.go).
//
// The watcher reads the drains from whichever gossip member is current on
// every step: a reload keeps both; after an upgrade handed the member
// over, the old process keeps the drains it last knew for the sessions it
// still relays, and the new one reads them from the gateways' shared
// state, where they outlive any process.

var _ admin.DrainSource = (*Gateway)(nil)

// DrainUntil drains a node with a deadline (admin.DrainSource): no new
// sessions; every gateway tells the users of its sessions there and
// closes them at deadline.
func (a *Gateway) DrainUntil(name string, deadline time.Time, message, by string) error {
	cl := a.cluster.Load()
	if cl == nil {
		return ErrNoCluster
	}
	if !node.ValidName(name) {
		return fmt.Errorf("invalid node name %q", name)
	}
	if !slices.ContainsFunc(a.Router.Nodes(), func(n route.Node) bool { return n.Name == name }) {
		if _, ok := a.Inventory.NotTaking()[name]; !ok {
			return fmt.Errorf("no login node named %q is known to this gateway (see frontdoor nodes)", name)
		}
	}
	return cl.DrainUntil(name, deadline, message, by)
}

// clusterDrains are the drains in the gateways' shared state (none
// without a cluster); after a handover, as the successor last sent them.
func (a *Gateway) clusterDrains() []cluster.MaintenanceDrain {
	cl := a.cluster.Load()
	if h := a.handedDrains.Load(); h != nil && h.member == cl {
		return h.drains
	}
	if cl != nil {
		return cl.Drains()
	}
	return nil
}

// MaintenanceDrains are the drains in force as this process knows them:
// what a process that took over sends the one it replaced.
func (a *Gateway) MaintenanceDrains() []cluster.MaintenanceDrain { return a.clusterDrains() }

// successorDrains are the drains the successor sent, for the member this
// process handed over (a Resume starts another, and they no longer apply).
type successorDrains struct {
	member *cluster.Cluster
	drains []cluster.MaintenanceDrain
}

// SuccessorDrains takes the drains from the process this one handed its
// place to: its gossip member is gone, and its sessions follow the
// successor's view of the shared state.
func (a *Gateway) SuccessorDrains(ds []cluster.MaintenanceDrain) {
	a.handedDrains.Store(&successorDrains{member: a.cluster.Load(), drains: ds})
}

// startMaintenance starts the watcher over this process's sessions.
func (a *Gateway) startMaintenance() {
	w := maintenance.New(maintenance.Options{Sessions: a.SSH, Log: a.log, Drains: func() []maintenance.Drain {
		var out []maintenance.Drain
		for _, d := range a.clusterDrains() {
			if !d.Deadline.IsZero() {
				out = append(out, maintenance.Drain{Node: d.Node, Deadline: d.Deadline, Message: d.Message})
			}
		}
		return out
	}})
	a.Registry.MustRegister(w.Collectors()...)
	a.loop(a.bg, w.Run)
}

// withDrains adds what the shared state says of each drained node to the
// node view.
func (a *Gateway) withDrains(nodes []admin.NodeInfo) []admin.NodeInfo {
	byNode := map[string]cluster.MaintenanceDrain{}
	for _, d := range a.clusterDrains() {
		byNode[d.Node] = d
	}
	for i, n := range nodes {
		if d, ok := byNode[n.Name]; ok {
			nodes[i].DrainDeadline, nodes[i].DrainMessage, nodes[i].DrainBy = d.Deadline, d.Message, d.By
		}
	}
	return nodes
}

// maintenanceDrains lists the drains with who set them, their deadline
// and message, for the status (Reporters.Drains).
type maintenanceDrains struct{ a *Gateway }

func (m maintenanceDrains) Drains() []admin.Drain {
	cl := m.a.cluster.Load()
	if cl == nil {
		return nil
	}
	var out []admin.Drain
	for _, d := range cl.Drains() {
		// The sessions every gateway still has there, also on a node
		// that left the node view (HyperPod no longer runs it).
		n, _ := cl.SessionsOn(d.Node)
		out = append(out, admin.Drain{Node: d.Node, By: d.By, Deadline: d.Deadline, Message: d.Message, Sessions: n})
	}
	return out
}

package assembly

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// The gateway process as the admin API sees it (admin.Source, and its
// status: status.go).
var (
	_ admin.Source       = (*Gateway)(nil)
	_ admin.StatusSource = (*Gateway)(nil)
)

// Sessions lists the live sessions through this gateway, oldest first.
func (a *Gateway) Sessions() []admin.Session {
	ss := a.SSH.Sessions()
	out := make([]admin.Session, 0, len(ss))
	for _, x := range ss {
		out = append(out, admin.Session{ID: x.ID, User: x.User, Node: x.Node, Src: x.Src, Method: x.Method,
			Started: x.Started, BytesUp: x.BytesUp, BytesDown: x.BytesDown, Channels: x.Channels})
	}
	return out
}

// Nodes is the gateway's current view of the login nodes, with the score
// routing gives each and the sessions through this gateway.
func (a *Gateway) Nodes() []admin.NodeInfo {
	here := a.SSH.SessionsPerNode()
	weights := a.Config.Route.Weights
	var warnings map[string][]string
	if a.Cluster != nil {
		warnings = a.Cluster.NodeWarnings()
	}
	var out []admin.NodeInfo
	for _, n := range a.Router.Nodes() {
		out = append(out, admin.NodeInfo{Name: n.Name, Pool: n.Pool, Addr: n.Addr, Alive: n.Alive, SSHDUp: n.SSHDUp,
			Draining: n.Draining, HealthAt: n.HealthAt, Sessions: n.Sessions, MaxSessions: n.MaxSessions, Users: n.Users,
			Load1: n.Load1, CPUs: n.CPUs, MemAvailFrac: n.MemAvailFrac, CPUPressure: n.CPUPressure,
			MemPressure: n.MemPressure, RecentlyRouted: n.RecentlyRouted, Score: route.Score(n, weights),
			Here: here[n.Name], NoAgent: n.NoAgent, Lied: n.Lied, Warnings: warnings[n.Name]})
	}
	for name, why := range a.Inventory.NotTaking() {
		out = append(out, admin.NodeInfo{Name: name, NotTaking: why, Here: here[name]})
	}
	slices.SortFunc(out, func(x, y admin.NodeInfo) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// Explain shows how a login by user would be decided now.
func (a *Gateway) Explain(ctx context.Context, user string) (string, error) {
	return a.SSH.Explain(ctx, user)
}

// ErrNoCluster: the operation needs the gossip cluster.
var ErrNoCluster = errors.New("this gateway has no gossip cluster (no cluster section in its config)")

// Drain sets or clears an admin drain of a node, cluster-wide: no new
// sessions go there; existing ones are untouched.
func (a *Gateway) Drain(name string, drain bool, by string) error {
	if a.Cluster == nil {
		return ErrNoCluster
	}
	if !node.ValidName(name) {
		return fmt.Errorf("invalid node name %q", name)
	}
	// A typo must not "succeed" by draining nothing. Undrain stays allowed
	// for names no agent reports any more, to clear a stale drain.
	if drain && !slices.ContainsFunc(a.Router.Nodes(), func(n route.Node) bool { return n.Name == name }) {
		return fmt.Errorf("no login node named %q is known to this gateway (see frontdoor nodes)", name)
	}
	return a.Cluster.Drain(name, drain, by)
}

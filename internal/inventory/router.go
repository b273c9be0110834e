package inventory

import (
	"context"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// Router is the gateway's live view of the login nodes and their use: it
// gathers what the login decision needs (login.View) and records what
// became of each login. Safe for concurrent use.
type Router struct {
	src    nodeSource
	cl     *cluster.Cluster // nil without gossip
	static *staticNodes     // without gossip
	probes *agentless       // with gossip: nodes without an agent
	now    func() time.Time

	mu       sync.Mutex           // mu protects the following
	fail     map[string]time.Time // node → last node-level failure
	userFail map[failKey]time.Time
	ends     map[string][]func() // user/node → cluster session enders
}

// failKey is a login failure that concerned one user on one node (the node
// refused that user's certificate): it says nothing about the node for
// anyone else.
type failKey struct{ user, node string }

// nodeSource is where the router's view of the login nodes comes from: the
// gossip cluster, or the static node list. Only the methods the router uses.
type nodeSource interface {
	Nodes() []route.Node
	Affinity(user string) *route.Affinity
}

// NewRouter routes over the gossip cluster if cl is non-nil (health judged
// against inv), else over inv's nodes (assumed healthy; load = this
// gateway's sessions). staleAfter is route.stale_after.
func NewRouter(inv *Inventory, cl *cluster.Cluster, staleAfter time.Duration) *Router {
	r := &Router{cl: cl, now: time.Now, fail: map[string]time.Time{}, userFail: map[failKey]time.Time{}, ends: map[string][]func(){}}
	if cl != nil {
		r.probes = newAgentless(cl, inv, staleAfter)
		r.src = r.probes
	} else {
		r.static = newStaticNodes(inv.List, time.Now)
		r.src = r.static
	}
	return r
}

// Run probes the nodes that have no agent until ctx ends (with gossip; a
// router without returns at once).
func (r *Router) Run(ctx context.Context) {
	if r.probes != nil {
		r.probes.run(ctx)
	}
}

// Nodes is the current view of the login nodes.
func (r *Router) Nodes() []route.Node { return r.src.Nodes() }

// View is a snapshot for the login decision of user ("" for the guess made
// before the user is known: no affinity, node-level failures only).
func (r *Router) View(user string) login.View {
	v := login.View{Nodes: r.src.Nodes()}
	if user != "" {
		v.Affinity = r.src.Affinity(user)
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	note := func(node string, t time.Time) {
		if v.Failed == nil {
			v.Failed = map[string]time.Time{}
		}
		if t.After(v.Failed[node]) {
			v.Failed[node] = t
		}
	}
	for n, t := range r.fail {
		if now.Sub(t) >= login.FailPenalty {
			delete(r.fail, n)
			continue
		}
		note(n, t)
	}
	for k, t := range r.userFail {
		if now.Sub(t) >= login.FailPenalty {
			delete(r.userFail, k)
			continue
		}
		if k.user == user && user != "" {
			note(k.node, t)
		}
	}
	return v
}

// SessionStarted records a live session of user on node.
func (r *Router) SessionStarted(user, node string) {
	r.mu.Lock()
	delete(r.fail, node)
	delete(r.userFail, failKey{user, node})
	r.mu.Unlock()
	if r.static != nil {
		r.static.started(user, node)
		return
	}
	r.cl.NoteRouted(node)
	end := r.cl.StartSession(user, node)
	r.mu.Lock()
	r.ends[user+"/"+node] = append(r.ends[user+"/"+node], end)
	r.mu.Unlock()
}

// SessionEnded records the end of a session SessionStarted recorded.
func (r *Router) SessionEnded(user, node string) {
	if r.static != nil {
		r.static.ended(user, node)
		return
	}
	key := user + "/" + node
	r.mu.Lock()
	ends := r.ends[key]
	var end func()
	if len(ends) > 0 {
		end, ends = ends[len(ends)-1], ends[:len(ends)-1]
	}
	if len(ends) == 0 {
		delete(r.ends, key)
	} else {
		r.ends[key] = ends
	}
	r.mu.Unlock()
	if end != nil {
		end()
	}
}

// maxUserFailures bounds the per-user failure memory; only proven users
// reach a node, but a gateway must not grow without bound all the same.
const maxUserFailures = 10000

// NodeFailed records a login to node that failed. nodeLevel failures (the
// node did not answer, or failed the key exchange or its host key check)
// push the node back for every login; others (the node refused this user's
// certificate) only for user's own logins.
func (r *Router) NodeFailed(node, user string, nodeLevel bool) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if nodeLevel {
		r.fail[node] = now
		return
	}
	if len(r.userFail) >= maxUserFailures {
		for k, t := range r.userFail {
			if now.Sub(t) >= login.FailPenalty {
				delete(r.userFail, k)
			}
		}
		if len(r.userFail) >= maxUserFailures {
			return
		}
	}
	r.userFail[failKey{user, node}] = now
}

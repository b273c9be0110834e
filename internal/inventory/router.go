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
//
// It also keeps the count of live sessions per user and node (sessions.go)
// and publishes it where the count matters: to the gossip cluster, to the
// static view without gossip, or, after an upgrade handed the process's
// place over, to the process that took it.
type Router struct {
	static *staticNodes // without gossip
	probes *agentless   // with gossip: nodes without an agent
	now    func() time.Time

	mu       sync.Mutex           // mu protects the following
	fail     map[string]time.Time // node → last node-level failure
	userFail map[failKey]time.Time
	// cl is the member counts are published through (nil without
	// gossip); after a handover, handedTo receives them instead.
	cl        *cluster.Cluster
	handedTo  func(user, node string, n int)
	own       map[sessionKey]int // live sessions relayed by this process
	inherited map[sessionKey]int // live sessions of the process this one took over from
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
	r := &Router{cl: cl, now: time.Now, fail: map[string]time.Time{}, userFail: map[failKey]time.Time{},
		own: map[sessionKey]int{}, inherited: map[sessionKey]int{}}
	if cl != nil {
		r.probes = newAgentless(cl, inv, staleAfter)
	} else {
		r.static = newStaticNodes(inv.List, time.Now)
	}
	return r
}

// src is the node source.
func (r *Router) src() nodeSource {
	if r.probes != nil {
		return r.probes
	}
	return r.static
}

// Run probes the nodes that have no agent until ctx ends (with gossip; a
// router without returns at once).
func (r *Router) Run(ctx context.Context) {
	if r.probes != nil {
		r.probes.run(ctx)
	}
}

// SetStaleAfter takes a new route.stale_after (a reload).
func (r *Router) SetStaleAfter(d time.Duration) {
	if r.probes != nil {
		r.probes.stale.Store(int64(d))
	}
}

// Nodes is the current view of the login nodes.
func (r *Router) Nodes() []route.Node { return r.src().Nodes() }

// View is a snapshot for the login decision of user ("" for the guess made
// before the user is known: no affinity, node-level failures only).
func (r *Router) View(user string) login.View {
	src := r.src()
	v := login.View{Nodes: src.Nodes()}
	if user != "" {
		v.Affinity = src.Affinity(user)
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
	cl := r.cl
	if r.handedTo != nil {
		cl = nil // a login finishing after the handover: routing is the successor's now
	}
	r.mu.Unlock()
	if cl != nil {
		cl.NoteRouted(node)
	}
	r.count(r.own, user, node, +1)
}

// SessionEnded records the end of a session SessionStarted recorded.
func (r *Router) SessionEnded(user, node string) { r.count(r.own, user, node, -1) }

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

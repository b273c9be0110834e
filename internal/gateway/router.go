package gateway

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// RouteRequest is what the router needs to know about one login.
type RouteRequest struct {
	// User is empty for the speculative preconnect guess, made before the
	// user is known: then Pools is nil too and means every pool.
	User     string
	Pools    []string // pools the policy allows
	Explicit string   // node named with user+node, or ""
	// Prefer is the node a preconnection already goes to: taken when it is
	// an equally valid least-loaded choice for this user (see Route).
	Prefer string
}

// Router orders the login nodes a session may try. Implementations must be
// safe for concurrent use.
type Router interface {
	// Route returns the nodes to try, best first, or an error whose
	// *RouteError text can be shown to the user.
	Route(ctx context.Context, req RouteRequest) ([]Target, error)
	// Explain is Route's full reasoning, for `frontdoor explain`.
	Explain(req RouteRequest) (route.Decision, error)
	// SessionStarted / SessionEnded keep the view of load and affinity
	// current.
	SessionStarted(user, node string)
	SessionEnded(user, node string)
	// NodeFailed reports a node the gateway could not log in to.
	NodeFailed(node string, err error)
	// Nodes is the current view of the login nodes.
	Nodes() []route.Node
}

// RouteError is a refusal whose message is meant for the user.
type RouteError struct{ Msg string }

func (e *RouteError) Error() string { return e.Msg }

// nodeSource is where the router's view of the login nodes comes from: the
// gossip cluster, or the static node list. Only the methods the router uses.
type nodeSource interface {
	Nodes() []route.Node
	Affinity(user string) *route.Affinity
}

// router routes with route.Decide over a nodeSource.
type router struct {
	src nodeSource
	cfg route.Config
	cl  *cluster.Cluster // nil without gossip
	now func() time.Time

	mu   sync.Mutex // mu protects the following
	rnd  *rand.Rand
	fail map[string]time.Time // node → last failed login
	ends map[string][]func()  // user/node → cluster session enders
}

// failPenalty is how long a node that failed a login is tried last.
const failPenalty = 30 * time.Second

// NewRouter routes over the gossip cluster if cl is non-nil, else over the
// configured nodes (assumed healthy; load = this gateway's sessions).
func NewRouter(nodes []config.Node, cl *cluster.Cluster, cfg route.Config) Router {
	r := &router{cfg: cfg, cl: cl, now: time.Now, rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		fail: map[string]time.Time{}, ends: map[string][]func(){}}
	if cl != nil {
		r.src = cl
	} else {
		r.src = newStaticNodes(nodes, time.Now)
	}
	return r
}

// NewStaticRouter routes over a fixed node list with default settings.
func NewStaticRouter(nodes []config.Node) Router {
	return NewRouter(nodes, nil, route.DefaultConfig())
}

func (r *router) decide(req RouteRequest) (route.Decision, []route.Node, error) {
	nodes := r.src.Nodes()
	rr := route.Request{User: req.User, Pools: req.Pools, Explicit: req.Explicit, Now: r.now()}
	if req.User == "" {
		rr.Pools = allPools(nodes)
	} else {
		rr.Affinity = r.src.Affinity(req.User)
	}
	r.mu.Lock()
	d, err := route.Decide(rr, nodes, r.cfg, r.rnd)
	r.mu.Unlock()
	return d, nodes, err
}

func (r *router) Nodes() []route.Node { return r.src.Nodes() }

func (r *router) Explain(req RouteRequest) (route.Decision, error) {
	d, _, err := r.decide(req)
	return d, err
}

func (r *router) Route(_ context.Context, req RouteRequest) ([]Target, error) {
	d, nodes, err := r.decide(req)
	if err != nil {
		return nil, userRouteError(req, d, err)
	}
	order := d.Order
	// The preconnection's node was itself a power-of-two choice among the
	// same healthy nodes moments ago; if it is a candidate for this user
	// too, it is as good a least-loaded pick as a fresh draw, and its sshd
	// has already forked.
	if req.Prefer != "" && d.Reason == "least-loaded" && order[0] != req.Prefer {
		for _, v := range d.Verdicts {
			if v.Node == req.Prefer && v.Candidate {
				order = append([]string{req.Prefer}, slices.DeleteFunc(slices.Clone(order), func(n string) bool { return n == req.Prefer })...)
				order = order[:min(len(order), max(len(d.Order), 1))]
				break
			}
		}
	}
	// Nodes that just failed a login go last.
	r.mu.Lock()
	now := r.now()
	var good, failed []string
	for _, n := range order {
		if t, ok := r.fail[n]; ok && now.Sub(t) < failPenalty {
			failed = append(failed, n)
		} else {
			good = append(good, n)
		}
	}
	r.mu.Unlock()
	addrs := map[string]route.Node{}
	for _, n := range nodes {
		addrs[n.Name] = n
	}
	var out []Target
	for _, name := range append(good, failed...) {
		n := addrs[name]
		out = append(out, Target{Name: n.Name, Addr: n.Addr, Pool: n.Pool})
	}
	return out, nil
}

// userRouteError turns a routing refusal into words for the user.
func userRouteError(req RouteRequest, d route.Decision, err error) error {
	var re *route.RefusedError
	switch {
	case errors.Is(err, route.ErrUnknownNode):
		return &RouteError{Msg: fmt.Sprintf("there is no login node named %q", req.Explicit)}
	case errors.As(err, &re) && re.Reason == route.WhyPool:
		pool := ""
		for _, v := range d.Verdicts {
			if v.Node == re.Node {
				pool = v.Pool
			}
		}
		return &RouteError{Msg: fmt.Sprintf("node %s is in pool %s, which your access does not include", re.Node, pool)}
	case errors.As(err, &re):
		return &RouteError{Msg: fmt.Sprintf("login node %s is not available right now (%s); try again shortly, or log in without +%s", re.Node, re.Reason, re.Node)}
	}
	return &RouteError{Msg: "no login node is available right now; try again shortly"}
}

func allPools(nodes []route.Node) []string {
	var pools []string
	for _, n := range nodes {
		if !slices.Contains(pools, n.Pool) {
			pools = append(pools, n.Pool)
		}
	}
	return pools
}

func (r *router) SessionStarted(user, node string) {
	r.mu.Lock()
	delete(r.fail, node)
	r.mu.Unlock()
	if s, ok := r.src.(*staticNodes); ok {
		s.started(user, node)
		return
	}
	r.cl.NoteRouted(node)
	end := r.cl.StartSession(user, node)
	r.mu.Lock()
	r.ends[user+"/"+node] = append(r.ends[user+"/"+node], end)
	r.mu.Unlock()
}

func (r *router) SessionEnded(user, node string) {
	if s, ok := r.src.(*staticNodes); ok {
		s.ended(user, node)
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

func (r *router) NodeFailed(node string, _ error) {
	r.mu.Lock()
	r.fail[node] = r.now()
	r.mu.Unlock()
}

// staticNodes is the node source without gossip: the configured nodes,
// assumed healthy (a failed login moves a node last for a while), with this
// gateway's own session counts as their load and affinity kept locally.
type staticNodes struct {
	nodes []config.Node
	now   func() time.Time

	mu       sync.Mutex                 // mu protects the following
	sessions map[string]int             // node → live sessions
	users    map[string]map[string]bool // node → users with live sessions
	affinity map[string]*route.Affinity // user → last node
}

func newStaticNodes(nodes []config.Node, now func() time.Time) *staticNodes {
	return &staticNodes{nodes: nodes, now: now, sessions: map[string]int{},
		users: map[string]map[string]bool{}, affinity: map[string]*route.Affinity{}}
}

func (s *staticNodes) Nodes() []route.Node {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]route.Node, 0, len(s.nodes))
	for _, n := range s.nodes {
		out = append(out, route.Node{Name: n.Name, Pool: n.Pool, Addr: n.Addr, Alive: true, SSHDUp: true,
			HealthAt: now, CPUs: 1, MemAvailFrac: 1, Sessions: s.sessions[n.Name], Users: len(s.users[n.Name])})
	}
	return out
}

func (s *staticNodes) Affinity(user string) *route.Affinity {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.affinity[user]
	if !ok {
		return nil
	}
	c := *a
	return &c
}

func (s *staticNodes) started(user, node string) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[node]++
	if s.users[node] == nil {
		s.users[node] = map[string]bool{}
	}
	s.users[node][user] = true
	a := s.affinity[user]
	if a == nil || a.Node != node {
		a = &route.Affinity{Node: node}
		s.affinity[user] = a
	}
	a.Live++
	a.LastSeen = now
}

func (s *staticNodes) ended(user, node string) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[node]--; s.sessions[node] <= 0 {
		delete(s.sessions, node)
		delete(s.users, node)
	}
	if a := s.affinity[user]; a != nil && a.Node == node {
		a.Live = max(a.Live-1, 0)
		a.LastSeen = now
	}
}

package gateway

import (
	"slices"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// Router is the gateway's view of the login nodes and their use: it
// gathers what Decide needs and records what happened. Implementations
// must be safe for concurrent use.
type Router interface {
	// View is a snapshot of the nodes and of user's affinity ("" for the
	// speculative guess made before the user is known).
	View(user string) View
	// SessionStarted / SessionEnded keep the view of load and affinity
	// current.
	SessionStarted(user, node string)
	SessionEnded(user, node string)
	// NodeFailed reports a node the gateway could not log in to.
	NodeFailed(node string, err error)
	// Nodes is the current view of the login nodes.
	Nodes() []route.Node
}

// nodeSource is where the router's view of the login nodes comes from: the
// gossip cluster, or the static node list. Only the methods the router uses.
type nodeSource interface {
	Nodes() []route.Node
	Affinity(user string) *route.Affinity
}

// router keeps the view over a nodeSource.
type router struct {
	src    nodeSource
	cl     *cluster.Cluster // nil without gossip
	probes *agentless       // with gossip: nodes without an agent
	now    func() time.Time

	mu   sync.Mutex           // mu protects the following
	fail map[string]time.Time // node → last failed login
	ends map[string][]func()  // user/node → cluster session enders
}

// newRouter routes over the gossip cluster if cl is non-nil (which judges
// health by the inventory), else over the inventory's nodes (assumed
// healthy; load = this gateway's sessions).
func newRouter(inv *inventory, cl *cluster.Cluster, staleAfter time.Duration) *router {
	r := &router{cl: cl, now: time.Now, fail: map[string]time.Time{}, ends: map[string][]func(){}}
	if cl != nil {
		r.probes = newAgentless(cl, inv, staleAfter)
		r.src = r.probes
	} else {
		r.src = newStaticNodes(inv.list, time.Now)
	}
	return r
}

func (r *router) Nodes() []route.Node { return r.src.Nodes() }

func (r *router) View(user string) View {
	v := View{Nodes: r.src.Nodes()}
	if user != "" {
		v.Affinity = r.src.Affinity(user)
	}
	now := r.now()
	r.mu.Lock()
	for n, t := range r.fail {
		if now.Sub(t) >= failPenalty {
			delete(r.fail, n)
			continue
		}
		if v.Failed == nil {
			v.Failed = map[string]time.Time{}
		}
		v.Failed[n] = t
	}
	r.mu.Unlock()
	return v
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
	nodes func() []config.Node // the inventory's current list
	now   func() time.Time

	mu       sync.Mutex                 // mu protects the following
	sessions map[string]int             // node → live sessions
	users    map[string]map[string]bool // node → users with live sessions
	affinity map[string]*route.Affinity // user → last node
}

func newStaticNodes(nodes func() []config.Node, now func() time.Time) *staticNodes {
	return &staticNodes{nodes: nodes, now: now, sessions: map[string]int{},
		users: map[string]map[string]bool{}, affinity: map[string]*route.Affinity{}}
}

func (s *staticNodes) Nodes() []route.Node {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := s.nodes()
	out := make([]route.Node, 0, len(nodes))
	for _, n := range nodes {
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

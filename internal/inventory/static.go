package inventory

import (
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// staticNodes is the node source without gossip: the listed nodes, assumed
// healthy (a failed login moves a node last for a while), with this
// gateway's own session counts as their load and affinity kept locally.
type staticNodes struct {
	nodes func() []node.Node // the inventory's current list
	now   func() time.Time

	mu       sync.Mutex                 // mu protects the following
	sessions map[string]int             // node → live sessions
	users    map[string]map[string]bool // node → users with live sessions
	affinity map[string]*route.Affinity // user → last node
}

func newStaticNodes(nodes func() []node.Node, now func() time.Time) *staticNodes {
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
		out = append(out, route.Node{Node: n, Alive: true, SSHDUp: true,
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

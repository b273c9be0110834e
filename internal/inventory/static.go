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

	mu       sync.Mutex         // mu protects the following
	counts   map[sessionKey]int // live sessions by user and node
	affinity map[string]*route.Affinity
}

func newStaticNodes(nodes func() []node.Node, now func() time.Time) *staticNodes {
	return &staticNodes{nodes: nodes, now: now, counts: map[sessionKey]int{}, affinity: map[string]*route.Affinity{}}
}

func (s *staticNodes) Nodes() []route.Node {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sessions, users := map[string]int{}, map[string]int{}
	for k, n := range s.counts {
		sessions[k.node] += n
		users[k.node]++
	}
	nodes := s.nodes()
	out := make([]route.Node, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, route.Node{Node: n, Alive: true, SSHDUp: true,
			HealthAt: now, CPUs: 1, MemAvailFrac: 1, Sessions: sessions[n.Name], Users: users[n.Name]})
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
	c.Live = s.counts[sessionKey{user, a.Node}]
	return &c
}

// set records that user has n live sessions on node; the user's affinity
// moves there when one starts, and is refreshed when one ends.
func (s *staticNodes) set(user, node string, n int) {
	now := s.now()
	k := sessionKey{user, node}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.counts[k]
	if n <= 0 {
		delete(s.counts, k)
	} else {
		s.counts[k] = n
	}
	a := s.affinity[user]
	switch {
	case n > prev && (a == nil || a.Node != node):
		s.affinity[user] = &route.Affinity{Node: node, LastSeen: now}
	case a != nil && a.Node == node:
		a.LastSeen = now
	}
}

// clear forgets every count (affinity stays).
func (s *staticNodes) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.counts)
}

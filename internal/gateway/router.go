package gateway

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// RouteRequest is what the router needs to know about one login.
type RouteRequest struct {
	// User is empty for the speculative preconnect guess, made before the
	// user is known: then Pools is nil too and means every pool.
	User     string
	Pools    []string // pools the policy allows
	Explicit string   // node named with user+node, or ""
}

// Router orders the login nodes a session may try. Implementations must be
// safe for concurrent use.
type Router interface {
	// Route returns the nodes to try, best first, or an error whose text can
	// be shown to the user ("node login9 is draining").
	Route(ctx context.Context, req RouteRequest) ([]Target, error)
	// SessionStarted / SessionEnded keep the router's view of load current.
	SessionStarted(user, node string)
	SessionEnded(user, node string)
	// NodeFailed reports a node the gateway could not log in to.
	NodeFailed(node string, err error)
}

// RouteError is a refusal whose message is meant for the user.
type RouteError struct{ Msg string }

func (e *RouteError) Error() string { return e.Msg }

// staticRouter routes over the nodes in the configuration: least
// connections from this gateway, random among equals, nodes that failed
// recently last.
type staticRouter struct {
	nodes []config.Node
	now   func() time.Time

	mu       sync.Mutex // mu protects the following
	sessions map[string]int
	failedAt map[string]time.Time
}

// failPenalty is how long a failed node is tried last.
const failPenalty = 30 * time.Second

// NewStaticRouter routes over a fixed node list.
func NewStaticRouter(nodes []config.Node) Router {
	return &staticRouter{nodes: nodes, now: time.Now, sessions: map[string]int{}, failedAt: map[string]time.Time{}}
}

func (r *staticRouter) Route(_ context.Context, req RouteRequest) ([]Target, error) {
	if req.Explicit != "" {
		for _, n := range r.nodes {
			if n.Name != req.Explicit {
				continue
			}
			if !slices.Contains(req.Pools, n.Pool) {
				return nil, &RouteError{Msg: fmt.Sprintf("node %s is in pool %s, which your access does not include", n.Name, n.Pool)}
			}
			return []Target{{Name: n.Name, Addr: n.Addr, Pool: n.Pool}}, nil
		}
		return nil, &RouteError{Msg: fmt.Sprintf("there is no login node named %q", req.Explicit)}
	}
	type cand struct {
		t      Target
		failed bool
		load   int
		tie    uint64
	}
	var cs []cand
	r.mu.Lock()
	now := r.now()
	for _, n := range r.nodes {
		if req.Pools != nil && !slices.Contains(req.Pools, n.Pool) {
			continue
		}
		f, ok := r.failedAt[n.Name]
		cs = append(cs, cand{
			t:      Target{Name: n.Name, Addr: n.Addr, Pool: n.Pool},
			failed: ok && now.Sub(f) < failPenalty,
			load:   r.sessions[n.Name],
			tie:    rand.Uint64(),
		})
	}
	r.mu.Unlock()
	if len(cs) == 0 {
		return nil, &RouteError{Msg: "no login node is configured for your access"}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		switch {
		case a.failed != b.failed:
			if a.failed {
				return 1
			}
			return -1
		case a.load != b.load:
			return a.load - b.load
		case a.tie < b.tie:
			return -1
		case a.tie > b.tie:
			return 1
		}
		return 0
	})
	out := make([]Target, len(cs))
	for i, c := range cs {
		out[i] = c.t
	}
	return out, nil
}

func (r *staticRouter) SessionStarted(_, node string) {
	r.mu.Lock()
	r.sessions[node]++
	delete(r.failedAt, node)
	r.mu.Unlock()
}

func (r *staticRouter) SessionEnded(_, node string) {
	r.mu.Lock()
	if r.sessions[node]--; r.sessions[node] <= 0 {
		delete(r.sessions, node)
	}
	r.mu.Unlock()
}

func (r *staticRouter) NodeFailed(node string, _ error) {
	r.mu.Lock()
	r.failedAt[node] = r.now()
	r.mu.Unlock()
}

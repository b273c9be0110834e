// Package route picks the login node for a new SSH session.
//
// It is pure: it takes a snapshot of the cluster (nodes, the user's affinity,
// the current time and a random source) and returns an ordered list of nodes
// to try. No I/O, no goroutines, no global clock or random source, so every
// rule can be table-tested and `frontdoor explain` can show exactly why a
// node was or was not picked.
package route

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// Node is one login node as the gateway sees it at decision time: the node
// (name, address, pool; from the gateways' inventory) and its health.
type Node struct {
	node.Node

	Alive    bool      // the agent's signed health keeps arriving (or, NoAgent, the gateway's probe answers)
	SSHDUp   bool      // the agent's last probe saw an SSH-2.0 banner
	Draining bool      // agent drain file or admin drain
	HealthAt time.Time // when the health below was measured

	Sessions    int // live SSH sessions on the node
	MaxSessions int // session cap; 0 means no cap
	Users       int // distinct users logged in

	Load1        float64 // 1-minute load average
	CPUs         int     // online CPUs; <1 is treated as 1
	MemAvailFrac float64 // MemAvailable / MemTotal, 0..1
	CPUPressure  float64 // PSI cpu some avg10 as a fraction, 0..1
	MemPressure  float64 // PSI memory some avg10 as a fraction, 0..1

	// RecentlyRouted counts logins sent to this node cluster-wide in the
	// last few seconds that may not show in Sessions yet. It is what keeps
	// several gateways from herding onto the same node between gossip rounds.
	RecentlyRouted int

	// Lied: the node's agent recently sent health signed with the node's
	// own key that no real node could report (impossible figures, another
	// address or pool). It takes no new logins until that is forgotten.
	Lied bool

	// NoAgent: no agent reports for this node; Alive and SSHDUp are the
	// gateway's own banner probe, and the load figures are neutral, so the
	// node is scored by its sessions (the gateways' counts) alone.
	NoAgent bool
}

// Affinity is what the cluster remembers about a user's recent sessions.
type Affinity struct {
	Node     string    // node of the user's live or most recent session
	Live     int       // live sessions of the user on Node, cluster-wide
	LastSeen time.Time // last session start or end on Node
}

// Request is one login to route.
type Request struct {
	User     string
	Pools    []string // pools the user's policy allows; empty allows none
	Explicit string   // node named by the user as user+node; "" if none
	Affinity *Affinity
	Now      time.Time
}

// Weights scale each term of a node's score; a lower score is a better node.
type Weights struct {
	// Load weighs the 1-minute load average per CPU.
	Load float64 `yaml:"load"`
	// Memory weighs the fraction of memory in use (1 - MemAvailable/MemTotal).
	Memory float64 `yaml:"memory"`
	// Pressure weighs CPU plus memory pressure (PSI "some" avg10, as fractions).
	Pressure float64 `yaml:"pressure"`
	// Sessions weighs sessions (live and just routed) per CPU.
	Sessions float64 `yaml:"sessions"`
	// Users weighs distinct users per CPU.
	Users float64 `yaml:"users"`
}

// Config tunes the decision. The zero value is not useful; start from
// DefaultConfig.
type Config struct {
	// StaleAfter is how old health may be before a node stops being a
	// candidate. It should be a few agent intervals.
	StaleAfter time.Duration `yaml:"stale_after"`
	// StickyFor is how long after a user's last session ends new logins
	// still go to the same node. VS Code keeps its server for 3 h; 8 h
	// covers a working day.
	StickyFor time.Duration `yaml:"sticky_for"`
	// Choices is d in power-of-d-choices: that many distinct candidates are
	// drawn at random and the best of them is chosen. 1 is random, a value
	// at or above the number of candidates is greedy. 2 is the classic
	// choice: near-optimal balance without herding.
	Choices int `yaml:"choices"`
	// MaxTries bounds the nodes a decision lists: the chosen node plus
	// fallbacks.
	MaxTries int `yaml:"max_tries"`
	// Weights scale the terms of a node's score; the lowest score wins.
	Weights Weights `yaml:"weights"`
}

// DefaultConfig returns the defaults described on each Config field.
func DefaultConfig() Config {
	return Config{
		StaleAfter: 15 * time.Second,
		StickyFor:  8 * time.Hour,
		Choices:    2,
		MaxTries:   3,
		Weights: Weights{
			Load:     1.0,
			Memory:   1.0,
			Pressure: 1.0,
			Sessions: 0.25,
			Users:    0.05,
		},
	}
}

// Validate reports a configuration that cannot route.
func (c Config) Validate() error {
	switch {
	case c.StaleAfter <= 0:
		return errors.New("route.stale_after: must be positive")
	case c.StickyFor < 0:
		return errors.New("route.sticky_for: must not be negative")
	case c.Choices < 1:
		return errors.New("route.choices: must be at least 1")
	case c.MaxTries < 1:
		return errors.New("route.max_tries: must be at least 1")
	case c.Weights.Load < 0 || c.Weights.Memory < 0 || c.Weights.Pressure < 0 ||
		c.Weights.Sessions < 0 || c.Weights.Users < 0:
		return errors.New("route.weights: must not be negative")
	}
	return nil
}

// Why a node is not a candidate. Stable strings: they show in explain output
// and in the refusal a user sees for user+node.
const (
	WhyPool     = "pool not allowed"
	WhyDead     = "not alive in cluster"
	WhyLied     = "agent lied about the node"
	WhySSHDDown = "sshd not answering"
	WhyStale    = "health stale"
	WhyDraining = "draining"
	WhyFull     = "at session cap"
)

// Sentinel errors; Decide wraps them so callers branch with errors.Is.
var (
	ErrNoCandidates = errors.New("no login node available")
	ErrUnknownNode  = errors.New("no such login node")
	ErrRefused      = errors.New("login node refused")
)

// RefusedError says why an explicitly named node cannot take the login.
// It wraps ErrRefused.
type RefusedError struct {
	Node   node.Node
	Reason string // one of the Why constants
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("login node %s is not available: %s", e.Node.Name, e.Reason)
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// Verdict is the decision's view of one node, for explain.
type Verdict struct {
	Node      node.Node
	Candidate bool
	Why       string  // reason it is not a candidate; "" for candidates
	Score     float64 // lower is better; only meaningful for candidates
	Rank      int     // 1-based position in Decision.Order; 0 if not in it
}

// Decision is the outcome of Decide.
type Decision struct {
	// Order lists the nodes to try, first choice first. Retry the next one
	// if the dial or backend authentication fails.
	Order []node.Node
	// Reason is a short phrase for logs and explain: "explicit", "sticky",
	// "least-loaded", possibly with a note ("sticky node x: draining").
	Reason string
	// Verdicts covers every node given to Decide, sorted by name.
	Verdicts []Verdict
}

// Decide routes one login. It returns a Decision with at least one node, or
// an error wrapping ErrNoCandidates, ErrUnknownNode or ErrRefused (as a
// *RefusedError). The Decision is filled in (Verdicts) even on error so
// explain can show it. rnd may be nil: the choice is then greedy.
func Decide(req Request, nodes []Node, cfg Config, rnd *rand.Rand) (Decision, error) {
	var d Decision
	byName := make(map[string]int, len(nodes))
	var cands []scored
	for i, n := range nodes {
		byName[n.Name] = i
		why := rejects(req, n, cfg)
		v := Verdict{Node: n.Node, Candidate: why == "", Why: why}
		if why == "" {
			v.Score = Score(n, cfg.Weights)
			cands = append(cands, scored{node: n.Node, score: v.Score})
		}
		d.Verdicts = append(d.Verdicts, v)
	}
	slices.SortFunc(d.Verdicts, func(a, b Verdict) int { return cmpString(a.Node.Name, b.Node.Name) })
	// Best first; name breaks ties so the order is deterministic.
	slices.SortFunc(cands, func(a, b scored) int {
		if a.score != b.score {
			if a.score < b.score {
				return -1
			}
			return 1
		}
		return cmpString(a.node.Name, b.node.Name)
	})

	if req.Explicit != "" {
		i, ok := byName[req.Explicit]
		if !ok {
			d.Reason = "explicit node unknown"
			return d, fmt.Errorf("route %s: %q: %w", req.User, req.Explicit, ErrUnknownNode)
		}
		if why := rejects(req, nodes[i], cfg); why != "" {
			d.Reason = "explicit node refused: " + why
			return d, fmt.Errorf("route %s: %w", req.User, &RefusedError{Node: nodes[i].Node, Reason: why})
		}
		// The user asked for this node: no silent fallback elsewhere.
		d.Order = []node.Node{nodes[i].Node}
		d.Reason = "explicit"
		d.rank()
		return d, nil
	}

	if len(cands) == 0 {
		d.Reason = "no candidates"
		return d, fmt.Errorf("route %s: %w", req.User, ErrNoCandidates)
	}

	var first node.Node
	note := ""
	if a := req.Affinity; a != nil && a.Node != "" && sticky(*a, req.Now, cfg) {
		if i, ok := byName[a.Node]; ok {
			if why := rejects(req, nodes[i], cfg); why == "" {
				first = nodes[i].Node
				d.Reason = "sticky"
			} else {
				note = fmt.Sprintf(" (sticky node %s: %s)", a.Node, why)
			}
		} else {
			note = fmt.Sprintf(" (sticky node %s: unknown)", a.Node)
		}
	}
	if first.Name == "" {
		first = choose(cands, cfg.Choices, rnd)
		d.Reason = "least-loaded" + note
	}

	d.Order = append(d.Order, first)
	for _, c := range cands {
		if len(d.Order) >= cfg.MaxTries {
			break
		}
		if c.node.Name != first.Name {
			d.Order = append(d.Order, c.node)
		}
	}
	d.rank()
	return d, nil
}

// Score is a node's load score; lower is better. Exported so `frontdoor
// nodes` can show the same number routing uses. Every figure is clamped to
// what a node can physically report (bounds.go), so the score is never
// negative and no claim, however absurd, beats an idle honest node.
func Score(n Node, w Weights) float64 {
	cpus := float64(ClampCPUs(n.CPUs))
	return w.Load*clampLoad(n.Load1)/cpus +
		w.Memory*clamp01(1-n.MemAvailFrac) +
		w.Pressure*(clamp01(n.CPUPressure)+clamp01(n.MemPressure)) +
		w.Sessions*float64(ClampCount(n.Sessions)+ClampCount(n.RecentlyRouted))/cpus +
		w.Users*float64(ClampCount(n.Users))/cpus
}

type scored struct {
	node  node.Node
	score float64
}

// rejects returns why n cannot take a new session for req, or "".
// The order is the order an operator would check things in.
func rejects(req Request, n Node, cfg Config) string {
	switch {
	case !slices.Contains(req.Pools, n.Pool):
		return WhyPool
	case n.Lied:
		return WhyLied
	case !n.Alive:
		return WhyDead
	case !n.SSHDUp:
		return WhySSHDDown
	case n.HealthAt.IsZero() || req.Now.Sub(n.HealthAt) > cfg.StaleAfter:
		return WhyStale
	case n.Draining:
		return WhyDraining
	case n.MaxSessions > 0 && ClampCount(n.Sessions)+ClampCount(n.RecentlyRouted) >= n.MaxSessions:
		return WhyFull
	}
	return ""
}

// sticky reports whether the affinity still binds: live sessions, or the
// last one ended less than StickyFor ago.
func sticky(a Affinity, now time.Time, cfg Config) bool {
	return a.Live > 0 || now.Sub(a.LastSeen) < cfg.StickyFor
}

// choose implements power-of-d-choices over cands (sorted best first): draw
// d distinct candidates uniformly and keep the best. Random draws spread
// concurrent decisions made on the same stale snapshot by different
// gateways, while always preferring the better of the draws keeps the
// maximum load within a small additive term of the mean.
func choose(cands []scored, d int, rnd *rand.Rand) node.Node {
	if rnd == nil || d >= len(cands) {
		return cands[0].node
	}
	best := len(cands)
	// Partial Fisher-Yates over indices; the lowest index drawn is the best
	// candidate because cands is sorted.
	idx := make([]int, len(cands))
	for i := range idx {
		idx[i] = i
	}
	for i := 0; i < d; i++ {
		j := i + rnd.IntN(len(idx)-i)
		idx[i], idx[j] = idx[j], idx[i]
		best = min(best, idx[i])
	}
	return cands[best].node
}

func (d *Decision) rank() {
	for i := range d.Verdicts {
		d.Verdicts[i].Rank = slices.IndexFunc(d.Order, func(n node.Node) bool { return n.Name == d.Verdicts[i].Node.Name }) + 1
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

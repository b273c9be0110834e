// Package login decides where a proven identity goes. Decide is the one
// decision of a login — principal checks, policy, session cap, routing,
// fallback order — as a pure function: identity, configuration, the nodes
// as this gateway sees them and the time in; the nodes to try, or a refusal
// with the words for the user and the reason for the audit log, out. A real
// login and `frontdoor explain` both call it, so explain shows exactly what
// a login would do. Everything around it (looking the user up, reading the
// cluster, dialling, minting certificates) is I/O at the gateway's edges.
//
// This package does no I/O: no network, no files, no clock and no global
// randomness (both are inputs).
package login

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// View is what the gateway knows about the login nodes and the user at the
// moment of a decision.
type View struct {
	Nodes    []route.Node
	Affinity *route.Affinity
	// Failed holds when a login through this gateway last failed on a node
	// in a way that concerns this user: a node-level failure (connect,
	// handshake, host key) for everyone, a refused certificate for this
	// user only. Such nodes are tried last for FailPenalty.
	Failed map[string]time.Time
	// UserSessions are the user's sessions that count against the
	// policy's session cap (live and being set up, all gateways).
	UserSessions int
}

// Input is one login to decide.
type Input struct {
	Ident      directory.Identity
	Explicit   string // node named with user+node, or ""
	Policy     policy.Config
	Principals Principals
	Route      route.Config
	View       View
	// MaxAttempts bounds Outcome.Targets.
	MaxAttempts int
	// Prefer names a node a connection is already open to: taken when it
	// is an equally good least-loaded choice.
	Prefer string
	Now    time.Time
	Rand   *rand.Rand
}

// Outcome is a decision: Targets to try in order, or a Refusal.
type Outcome struct {
	// Policy is the matched rule's grant (Policy.Rule is set on a policy
	// refusal too).
	Policy policy.Decision
	// Route is the routing reasoning, for explain; empty when the login
	// was refused before routing.
	Route   route.Decision
	Targets []node.Node
	Refusal *Refusal
}

// Refusal stages: where a decision stopped.
const (
	StagePrincipal  = "principal"
	StagePolicy     = "policy"
	StageSessionCap = "session-cap"
	StageRoute      = "route"
)

// Refusal is why a proven user cannot be served.
type Refusal struct {
	// Stage is one of the Stage constants.
	Stage string
	// UserMsg is shown to the user, after they proved who they are: short
	// and actionable, no internals.
	UserMsg string
	// Reason goes to the audit log.
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }

// FailPenalty is how long a node that failed a login is tried last.
const FailPenalty = 30 * time.Second

// Decide decides one login. It has no side effects.
func Decide(in Input) Outcome {
	var out Outcome
	if r := in.Principals.Check(in.Ident); r != nil {
		out.Refusal = r
		return out
	}
	d, err := in.Policy.Evaluate(in.Ident.Name, in.Ident.Groups)
	out.Policy = d
	if err != nil {
		out.Refusal = &Refusal{Stage: StagePolicy, Reason: err.Error(), UserMsg: d.Message}
		return out
	}
	if r := CheckSessionCap(in.View.UserSessions, d.MaxSessions); r != nil {
		out.Refusal = r
		return out
	}
	rr := route.Request{User: in.Ident.Name, Pools: d.Pools, Explicit: in.Explicit, Affinity: in.View.Affinity, Now: in.Now}
	rd, err := route.Decide(rr, in.View.Nodes, in.Route, in.Rand)
	out.Route = rd
	if err != nil {
		out.Refusal = &Refusal{Stage: StageRoute, Reason: "route: " + err.Error(), UserMsg: routeMessage(in.Explicit, err)}
		return out
	}
	out.Targets = targets(in, rd)
	return out
}

// CheckSessionCap refuses a login when the user already holds max sessions
// (max 0: no cap). The gateway calls it again when it takes the session
// slot, so two logins racing for the last place cannot both get it.
func CheckSessionCap(have, max int) *Refusal {
	if max <= 0 || have < max {
		return nil
	}
	return &Refusal{Stage: StageSessionCap, Reason: fmt.Sprintf("session limit reached (%d of %d)", have, max),
		UserMsg: fmt.Sprintf("you already have %d sessions open, the most your access allows; close one and try again", max)}
}

// Guess is the node a login will most likely use, before its user is known
// (the gateway preconnects to it): the least-loaded pick among every pool.
func Guess(v View, cfg route.Config, now time.Time, rnd *rand.Rand) (node.Node, bool) {
	d, err := route.Decide(route.Request{Pools: pools(v.Nodes), Now: now}, v.Nodes, cfg, rnd)
	if err != nil || len(d.Order) == 0 {
		return node.Node{}, false
	}
	return d.Order[0], true
}

func pools(nodes []route.Node) []string {
	var out []string
	for _, n := range nodes {
		if !slices.Contains(out, n.Pool) {
			out = append(out, n.Pool)
		}
	}
	return out
}

// targets orders the routed nodes: the preconnected node first when it is
// as good a least-loaded pick, nodes that just failed a login last, at most
// MaxAttempts.
func targets(in Input, d route.Decision) []node.Node {
	order := d.Order
	// The preconnection's node was itself a power-of-two choice among the
	// same healthy nodes moments ago; if it is a candidate for this user
	// too, it is as good a least-loaded pick as a fresh draw, and its sshd
	// has already forked.
	if in.Prefer != "" && d.Reason == "least-loaded" && len(order) > 0 && order[0].Name != in.Prefer {
		for _, v := range d.Verdicts {
			if v.Node.Name == in.Prefer && v.Candidate {
				n := len(order)
				rest := slices.DeleteFunc(slices.Clone(order), func(o node.Node) bool { return o.Name == in.Prefer })
				order = append([]node.Node{v.Node}, rest...)
				order = order[:min(len(order), max(n, 1))]
				break
			}
		}
	}
	var good, failed []node.Node
	for _, n := range order {
		if t, ok := in.View.Failed[n.Name]; ok && in.Now.Sub(t) < FailPenalty {
			failed = append(failed, n)
		} else {
			good = append(good, n)
		}
	}
	out := append(good, failed...)
	if in.MaxAttempts > 0 && len(out) > in.MaxAttempts {
		out = out[:in.MaxAttempts]
	}
	return out
}

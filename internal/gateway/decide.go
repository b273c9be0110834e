package gateway

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// Where a proven identity goes. Decide is the one decision of a login —
// principal checks, policy, session cap, routing, fallback order — as a
// pure function: identity, configuration, the nodes as this gateway sees
// them and the time in; the nodes to try, or a refusal with the words for
// the user and the reason for the audit log, out. A real login and
// `frontdoor explain` both call it, so explain shows exactly what a login
// would do. Everything around it (looking the user up, reading the
// cluster, dialling, minting certificates) is I/O at the edges.

// Principals are the accounts a certificate may never name, whoever the
// directory says they are.
type Principals struct {
	// MinUID refuses identities whose POSIX uid is known and below it
	// (system accounts). 0 disables the floor.
	MinUID int
	// Deny lists account names refused outright (root, the HyperPod admin
	// user, service accounts), compared case-insensitively.
	Deny []string
}

// View is what the gateway knows about the login nodes and the user at the
// moment of a decision.
type View struct {
	Nodes    []route.Node
	Affinity *route.Affinity
	// Failed holds when this gateway last failed to log in to a node:
	// such nodes are tried last for failPenalty.
	Failed map[string]time.Time
	// UserSessions are the user's sessions that count against the
	// policy's session cap (live and being set up).
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
	// Prefer is a node a connection is already open to: taken when it is
	// an equally good least-loaded choice.
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
	Targets []Target
	Refusal *Refusal
}

// Refusal is why a proven user cannot be served.
type Refusal struct {
	// Stage is where the decision stopped: "principal", "policy",
	// "session-cap" or "route".
	Stage string
	// UserMsg is shown to the user, after they proved who they are: short
	// and actionable, no internals.
	UserMsg string
	// Reason goes to the audit log.
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }

// failPenalty is how long a node that failed a login is tried last.
const failPenalty = 30 * time.Second

// Decide decides one login. It has no side effects.
func Decide(in Input) Outcome {
	var out Outcome
	if r := checkPrincipal(in.Ident, in.Principals); r != nil {
		out.Refusal = r
		return out
	}
	d, err := in.Policy.Evaluate(in.Ident.Name, in.Ident.Groups)
	out.Policy = d
	if err != nil {
		out.Refusal = &Refusal{Stage: "policy", Reason: err.Error(), UserMsg: d.Message}
		return out
	}
	if d.MaxSessions > 0 && in.View.UserSessions >= d.MaxSessions {
		out.Refusal = &Refusal{Stage: "session-cap", Reason: fmt.Sprintf("session limit reached (%d of %d)", in.View.UserSessions, d.MaxSessions),
			UserMsg: fmt.Sprintf("you already have %d sessions open, the most your access allows; close one and try again", d.MaxSessions)}
		return out
	}
	rr := route.Request{User: in.Ident.Name, Pools: d.Pools, Explicit: in.Explicit, Affinity: in.View.Affinity, Now: in.Now}
	rd, err := route.Decide(rr, in.View.Nodes, in.Route, in.Rand)
	out.Route = rd
	if err != nil {
		out.Refusal = &Refusal{Stage: "route", Reason: "route: " + err.Error(), UserMsg: userRouteMessage(in.Explicit, rd, err)}
		return out
	}
	out.Targets = targets(in, rd)
	return out
}

// checkPrincipal refuses accounts no certificate may name.
func checkPrincipal(id directory.Identity, p Principals) *Refusal {
	msg := "this account cannot log in through frontdoor; log in with your personal account"
	if slices.ContainsFunc(p.Deny, func(d string) bool { return strings.EqualFold(d, id.Name) }) {
		return &Refusal{Stage: "principal", UserMsg: msg, Reason: fmt.Sprintf("principal %q is on backend.deny_principals", id.Name)}
	}
	if p.MinUID > 0 && (id.UID > 0 || id.UIDSet) && id.UID < p.MinUID {
		return &Refusal{Stage: "principal", UserMsg: msg, Reason: fmt.Sprintf("principal %q has uid %d, below backend.min_uid %d", id.Name, id.UID, p.MinUID)}
	}
	if strings.EqualFold(id.Name, "root") {
		// root is refused even when an admin emptied the deny list.
		return &Refusal{Stage: "principal", UserMsg: msg, Reason: "principal root is never allowed"}
	}
	return nil
}

// targets orders the routed nodes: the preconnected node first when it is
// as good a least-loaded pick, nodes that just failed a login last, at most
// MaxAttempts.
func targets(in Input, d route.Decision) []Target {
	order := d.Order
	// The preconnection's node was itself a power-of-two choice among the
	// same healthy nodes moments ago; if it is a candidate for this user
	// too, it is as good a least-loaded pick as a fresh draw, and its sshd
	// has already forked.
	if in.Prefer != "" && d.Reason == "least-loaded" && len(order) > 0 && order[0] != in.Prefer {
		for _, v := range d.Verdicts {
			if v.Node == in.Prefer && v.Candidate {
				n := len(order)
				order = append([]string{in.Prefer}, slices.DeleteFunc(slices.Clone(order), func(s string) bool { return s == in.Prefer })...)
				order = order[:min(len(order), max(n, 1))]
				break
			}
		}
	}
	var good, failed []string
	for _, n := range order {
		if t, ok := in.View.Failed[n]; ok && in.Now.Sub(t) < failPenalty {
			failed = append(failed, n)
		} else {
			good = append(good, n)
		}
	}
	byName := map[string]route.Node{}
	for _, n := range in.View.Nodes {
		byName[n.Name] = n
	}
	var out []Target
	for _, name := range append(good, failed...) {
		n := byName[name]
		out = append(out, Target{Name: n.Name, Addr: n.Addr, Pool: n.Pool})
	}
	if in.MaxAttempts > 0 && len(out) > in.MaxAttempts {
		out = out[:in.MaxAttempts]
	}
	return out
}

// userRouteMessage words a routing refusal for the user.
func userRouteMessage(explicit string, d route.Decision, err error) string {
	var re *route.RefusedError
	switch {
	case errors.Is(err, route.ErrUnknownNode):
		return fmt.Sprintf("there is no login node named %q", explicit)
	case errors.As(err, &re) && re.Reason == route.WhyPool:
		pool := ""
		for _, v := range d.Verdicts {
			if v.Node == re.Node {
				pool = v.Pool
			}
		}
		return fmt.Sprintf("node %s is in pool %s, which your access does not include", re.Node, pool)
	case errors.As(err, &re):
		return fmt.Sprintf("login node %s is not available right now (%s); try again shortly, or log in without +%s", re.Node, re.Reason, re.Node)
	}
	return "no login node is available right now; try again shortly"
}

// Explain writes the decision in words, for `frontdoor explain`.
func (o Outcome) Explain(in Input) string {
	var b strings.Builder
	id := in.Ident
	fmt.Fprintf(&b, "user %s (uid %s, groups %s, from %s%s)\n", id.Name, uidText(id.UID), groupsText(id.Groups), id.Source, cachedText(id))
	if o.Refusal != nil && o.Refusal.Stage == "principal" {
		fmt.Fprintf(&b, "refused: %s\nthe user would see: %s\n", o.Refusal.Reason, o.Refusal.UserMsg)
		return b.String()
	}
	if o.Policy.Rule != "" {
		fmt.Fprintf(&b, "policy: rule %q", o.Policy.Rule)
		if o.Refusal == nil || o.Refusal.Stage != "policy" {
			fmt.Fprintf(&b, ", pools %v, forwarding %s", o.Policy.Pools, rightsText(o.Policy.Rights))
			fmt.Fprintf(&b, " to %s", strings.Join(o.Policy.ForwardTo, ", "))
			if o.Policy.MaxSessions > 0 {
				fmt.Fprintf(&b, ", sessions %d of %d (all gateways)", in.View.UserSessions, o.Policy.MaxSessions)
			}
			if o.Policy.IdleTimeout > 0 {
				fmt.Fprintf(&b, ", idle timeout %v (warning %v before)", o.Policy.IdleTimeout, o.Policy.IdleWarning)
			}
			if sl := o.Policy.Slurm; sl != nil {
				parts := strings.Join(sl.Partitions, ",")
				if parts == "" {
					parts = "all"
				}
				fmt.Fprintf(&b, "\nslurm: account %s, partitions %s (default %s), QOS %s, GPU limit %s per user",
					sl.Account, parts, orDash(sl.Partition()), orDash(strings.Join(o.Policy.QOS, ",")), o.Policy.GPULimit())
				if sl.GPUsPerAccount > 0 {
					fmt.Fprintf(&b, ", %d for the account", sl.GPUsPerAccount)
				}
				if sl.DenyOnLimit {
					b.WriteString(", jobs over the limit refused")
				}
				if sl.SetJobDefaults {
					b.WriteString(", job defaults set in the session")
				}
			}
		}
		b.WriteString("\n")
	}
	if o.Refusal != nil && o.Refusal.Stage != "route" {
		fmt.Fprintf(&b, "refused: %s\nthe user would see: %s\n", o.Refusal.Reason, o.Refusal.UserMsg)
		return b.String()
	}
	var rerr error
	if o.Refusal != nil {
		rerr = errors.New(strings.TrimPrefix(o.Refusal.Reason, "route: "))
	}
	b.WriteString(route.Explain(id.Name, o.Route, rerr))
	if o.Refusal != nil {
		fmt.Fprintf(&b, "the user would see: %s\n", o.Refusal.UserMsg)
		return b.String()
	}
	names := make([]string, len(o.Targets))
	for i, t := range o.Targets {
		names[i] = t.Name
	}
	fmt.Fprintf(&b, "a login now would try, in order: %s\n", strings.Join(names, ", "))
	return b.String()
}

func uidText(uid int) string {
	if uid <= 0 {
		return "unknown"
	}
	return fmt.Sprint(uid)
}

func groupsText(gs []string) string {
	if len(gs) == 0 {
		return "none"
	}
	return strings.Join(gs, ", ")
}

func cachedText(id directory.Identity) string {
	if id.Cached {
		return ", cached: directory unreachable"
	}
	return ""
}

func rightsText(r policy.Rights) string {
	var out []string
	for _, x := range []struct {
		on   bool
		name string
	}{{r.Agent, policy.FwdAgent}, {r.X11, policy.FwdX11}, {r.Local, policy.FwdLocal}, {r.Remote, policy.FwdRemote}, {r.StreamLocal, policy.FwdStreamLocal}} {
		if x.on {
			out = append(out, x.name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

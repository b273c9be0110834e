// Package policy turns a user's identity into what that user may do: which
// login-node pools they may reach, which forwardings they get, session limits
// and (later) their Slurm account. Pure functions over values: no I/O.
package policy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Config is the "policy" section of the gateway configuration. Rules are
// evaluated in order; the first rule matching the user wins. A user no rule
// matches is denied.
type Config struct {
	Rules []Rule `yaml:"rules"`
}

// Rule grants (or denies) access to users by name or group membership.
type Rule struct {
	// Name appears in logs, audit events and `frontdoor explain`.
	Name string `yaml:"name"`
	// Users and Groups select who the rule applies to: a user matches if
	// their name is in Users or they are a member of any group in Groups
	// (nested membership counts). "*" in Groups matches everyone.
	Users  []string `yaml:"users"`
	Groups []string `yaml:"groups"`
	// Deny refuses matching users outright.
	Deny bool `yaml:"deny"`
	// Pools are the login-node pools the user may be routed to.
	Pools []string `yaml:"pools"`
	// Forwarding lists what the user may forward: agent, x11, local (ssh -L,
	// -D), remote (ssh -R), streamlocal (Unix sockets, both directions).
	// Omitted: everything but x11. An explicit empty list forbids all.
	Forwarding []string `yaml:"forwarding"`
	// MaxSessions caps this user's concurrent SSH connections through one
	// gateway (0 = no cap).
	MaxSessions int `yaml:"max_sessions"`
}

// Forwarding kinds a rule can grant.
const (
	FwdAgent       = "agent"
	FwdX11         = "x11"
	FwdLocal       = "local"
	FwdRemote      = "remote"
	FwdStreamLocal = "streamlocal"
)

var allForwardings = []string{FwdAgent, FwdX11, FwdLocal, FwdRemote, FwdStreamLocal}

// DefaultForwarding is what a rule without a forwarding list grants. VS Code
// Remote-SSH needs local and streamlocal; X11 is rarely wanted on a cluster.
var DefaultForwarding = []string{FwdAgent, FwdLocal, FwdRemote, FwdStreamLocal}

// Rights are the forwarding rights of one session.
type Rights struct {
	Agent, X11, Local, Remote, StreamLocal bool
}

// Decision is the outcome of evaluating the policy for one user.
type Decision struct {
	Rule        string
	Pools       []string
	Rights      Rights
	MaxSessions int
}

// ErrDenied is returned (wrapped) when no rule grants access or a deny rule
// matches.
var ErrDenied = errors.New("denied by policy")

// Evaluate applies the rules to a user.
func (c Config) Evaluate(user string, groups []string) (Decision, error) {
	for i, r := range c.Rules {
		if !r.matches(user, groups) {
			continue
		}
		name := r.Name
		if name == "" {
			name = fmt.Sprintf("rule %d", i+1)
		}
		if r.Deny {
			return Decision{Rule: name}, fmt.Errorf("%w: rule %q", ErrDenied, name)
		}
		fwd := r.Forwarding
		if fwd == nil {
			fwd = DefaultForwarding
		}
		return Decision{
			Rule:        name,
			Pools:       slices.Clone(r.Pools),
			Rights:      rightsOf(fwd),
			MaxSessions: r.MaxSessions,
		}, nil
	}
	return Decision{}, fmt.Errorf("%w: no rule matches user %q", ErrDenied, user)
}

func (r Rule) matches(user string, groups []string) bool {
	if slices.Contains(r.Users, user) {
		return true
	}
	for _, g := range r.Groups {
		if g == "*" {
			return true
		}
		for _, ug := range groups {
			// AD group names are case-insensitive.
			if strings.EqualFold(g, ug) {
				return true
			}
		}
	}
	return false
}

func rightsOf(kinds []string) Rights {
	var r Rights
	for _, k := range kinds {
		switch k {
		case FwdAgent:
			r.Agent = true
		case FwdX11:
			r.X11 = true
		case FwdLocal:
			r.Local = true
		case FwdRemote:
			r.Remote = true
		case FwdStreamLocal:
			r.StreamLocal = true
		}
	}
	return r
}

// Problem is one validation problem; Key is relative to the policy section.
type Problem struct {
	Key, Msg string
}

var poolName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Validate checks the rules and returns every problem found.
func (c Config) Validate() []Problem {
	var ps []Problem
	for i, r := range c.Rules {
		key := fmt.Sprintf("rules[%d]", i)
		if len(r.Users) == 0 && len(r.Groups) == 0 {
			ps = append(ps, Problem{key, "a rule needs users or groups to match (use groups: [\"*\"] for everyone)"})
		}
		if !r.Deny && len(r.Pools) == 0 {
			ps = append(ps, Problem{key + ".pools", "an allow rule needs at least one pool"})
		}
		for j, p := range r.Pools {
			if !poolName.MatchString(p) {
				ps = append(ps, Problem{fmt.Sprintf("%s.pools[%d]", key, j), fmt.Sprintf("%q is not a valid pool name", p)})
			}
		}
		for j, f := range r.Forwarding {
			if !slices.Contains(allForwardings, f) {
				ps = append(ps, Problem{fmt.Sprintf("%s.forwarding[%d]", key, j),
					fmt.Sprintf("unknown forwarding %q (want one of %s)", f, strings.Join(allForwardings, ", "))})
			}
		}
		if r.MaxSessions < 0 {
			ps = append(ps, Problem{key + ".max_sessions", "must not be negative"})
		}
	}
	if len(c.Rules) == 0 {
		ps = append(ps, Problem{"rules", "no rules: every user would be denied"})
	}
	return ps
}

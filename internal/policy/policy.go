// Package policy turns a user's identity into what that user may do: which
// login-node pools they may reach, which forwardings they get and where to,
// session limits and idle timeout, and their Slurm account, partitions, QOS
// and GPU limits. Pure functions over values: no I/O.
package policy

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Config is the "policy" section of the gateway configuration. Rules are
// evaluated in order; the first rule matching the user wins. A user no rule
// matches is denied.
type Config struct {
	// Rules are tried in order; the first that selects the user decides.
	Rules []Rule `yaml:"rules"`
	// RefusalMessage is what a user no rule matches is told (and a user a
	// deny rule without a message of its own refuses); say whom to ask.
	RefusalMessage string `yaml:"refusal_message"`
}

// DefaultRefusalMessage is told to a user no rule matches.
const DefaultRefusalMessage = "your account has no access to this cluster; ask the cluster's administrators to add you to a group that has"

// DefaultConfig returns the defaults: no rules (everyone is refused) and
// DefaultRefusalMessage.
func DefaultConfig() Config { return Config{RefusalMessage: DefaultRefusalMessage} }

// Rule grants (or denies) access to users by name or group membership.
type Rule struct {
	// Name appears in logs, audit events and `frontdoor explain`.
	Name string `yaml:"name"`
	// Users select who the rule applies to by name; with Groups, a user
	// matches if their name is in this list or they are a member of any
	// group in Groups (nested membership counts).
	Users []string `yaml:"users"`
	// Groups select users by directory group (see Users); "*" matches
	// everyone.
	Groups []string `yaml:"groups"`
	// Deny refuses matching users outright.
	Deny bool `yaml:"deny"`
	// Pools are the login-node pools the user may be routed to.
	Pools []string `yaml:"pools"`
	// Forwarding lists what the user may forward: agent, x11, local (ssh -L,
	// -D), remote (ssh -R), streamlocal (Unix sockets, both directions).
	// Omitted: everything but x11. An explicit empty list forbids all.
	Forwarding []string `yaml:"forwarding"`
	// ForwardTo limits where -L and -D may lead: "node" (the user's own
	// login node: localhost, its name and address; the default), "any",
	// or host names (a leading "*." matches subdomains) and CIDRs, which
	// may be combined with "node".
	ForwardTo []string `yaml:"forward_to"`
	// MaxSessions caps this user's concurrent SSH connections across all
	// gateways (0 = no cap). Gateways share counts by gossip, so two
	// logins racing on two gateways within the propagation delay (tens
	// of ms) can both pass.
	MaxSessions int `yaml:"max_sessions"`
	// IdleTimeout closes a connection that relayed nothing for this long
	// (0 = never), after a warning IdleWarning before.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// IdleWarning is how long before IdleTimeout the user is warned. 0:
	// 5m, or half the timeout if that is shorter.
	IdleWarning time.Duration `yaml:"idle_warning"`
	// Message is what a deny rule tells the users it refuses.
	Message string `yaml:"message"`
	// Slurm is what the rule's users get in Slurm. Absent: nothing
	// (`frontdoor slurm` leaves them alone).
	Slurm *Slurm `yaml:"slurm"`
	// MFA asks the rule's users for a second factor (through the mfa
	// section's RADIUS servers) after their key or password: "required",
	// "optional" (asked the same way, but while no RADIUS server answers
	// the login goes on without: a mode for rolling MFA out; a wrong
	// answer still refuses it) or "off" (the default). See docs/mfa.md.
	MFA string `yaml:"mfa"`
	// MFAWindow is how long a second factor unlocks the key it was given
	// with (0: 12h). A password login is never unlocked by an earlier one.
	MFAWindow time.Duration `yaml:"mfa_window"`
	// MFASKCounts lets a FIDO security key (sk-ssh-ed25519@openssh.com,
	// sk-ecdsa-sha2-nistp256@openssh.com) whose signature proved a touch
	// stand for the second factor by itself.
	MFASKCounts bool `yaml:"mfa_sk_counts"`
}

// Slurm is a rule's grant in Slurm's terms. `frontdoor slurm apply` makes
// Slurm's accounting match it; the login shows it in the environment and
// banner.
type Slurm struct {
	// Account is the Slurm account the rule's users are associated with
	// (their default account), created under slurm.parent_account.
	Account string `yaml:"account"`
	// Partitions the users may submit to (their associations); empty: all.
	Partitions []string `yaml:"partitions"`
	// DefaultPartition is the one FRONTDOOR_PARTITION (and with
	// SetJobDefaults, SBATCH_PARTITION) names. Empty: the first of
	// Partitions.
	DefaultPartition string `yaml:"default_partition"`
	// QOS lists extra QOS the users may use (they must exist in Slurm).
	QOS []string `yaml:"qos"`
	// GPUsPerUser caps the GPUs one user holds at once (gres/gpu, through
	// MaxTRESPerUser of the QOS frontdoor makes for the rule, fd-RULE).
	// 0: no cap.
	GPUsPerUser int `yaml:"gpus_per_user"`
	// GPUsPerUserByType caps one GPU type per user (gres/gpu:h100), by
	// type. Empty: no cap.
	GPUsPerUserByType map[string]int `yaml:"gpus_per_user_by_type"`
	// GPUsPerAccount caps the GPUs the whole account holds (GrpTRES). 0:
	// no cap.
	GPUsPerAccount int `yaml:"gpus_per_account"`
	// GPUsPerAccountByType caps one GPU type for the whole account, by
	// type. Empty: no cap.
	GPUsPerAccountByType map[string]int `yaml:"gpus_per_account_by_type"`
	// DenyOnLimit refuses a job over a per-user limit at submission,
	// rather than holding it pending until the user's GPUs free up.
	DenyOnLimit bool `yaml:"deny_on_limit"`
	// SetJobDefaults also sets SBATCH_ACCOUNT, SALLOC_ACCOUNT,
	// SLURM_ACCOUNT, SBATCH_PARTITION, SALLOC_PARTITION, SLURM_PARTITION
	// (and *_QOS with one QOS) in each session. Opt-in: these environment
	// variables override #SBATCH lines in job scripts.
	SetJobDefaults bool `yaml:"set_job_defaults"`
}

// QOSName is the QOS frontdoor manages for a rule with per-user GPU
// limits.
func QOSName(rule string) string { return "fd-" + rule }

// HasUserLimits reports whether the grant needs its own QOS.
func (s *Slurm) HasUserLimits() bool {
	return s != nil && (s.GPUsPerUser > 0 || len(s.GPUsPerUserByType) > 0)
}

// Partition is the default partition ("" if none).
func (s *Slurm) Partition() string {
	switch {
	case s == nil:
		return ""
	case s.DefaultPartition != "":
		return s.DefaultPartition
	case len(s.Partitions) > 0:
		return s.Partitions[0]
	}
	return ""
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
	ForwardTo   []string // see Rule.ForwardTo; never empty ("node" by default)
	MaxSessions int
	IdleTimeout time.Duration
	IdleWarning time.Duration
	// Slurm is the rule's Slurm grant (nil: none); QOS, if the rule has
	// per-user GPU limits, is the QOS frontdoor manages for it.
	Slurm *Slurm
	QOS   []string
	// Message is what to tell a refused user.
	Message string
	// MFA is the rule's second-factor requirement.
	MFA MFA
}

// Second-factor modes of a rule.
const (
	MFAOff      = "off"
	MFAOptional = "optional"
	MFARequired = "required"
)

// DefaultMFAWindow is how long an unlock lasts when the rule says nothing.
const DefaultMFAWindow = 12 * time.Hour

// MFA is a rule's second-factor requirement, as decided.
type MFA struct {
	Mode     string        // MFAOptional, MFARequired, or "" (off)
	Window   time.Duration // how long an unlock lasts
	SKCounts bool          // a touched FIDO key is the second factor
}

// GPULimit is the per-user GPU limit as the environment states it: "4",
// "h100=4,a100=2" with types, "none" without a limit.
func (d Decision) GPULimit() string {
	if d.Slurm == nil {
		return "none"
	}
	var parts []string
	if d.Slurm.GPUsPerUser > 0 {
		parts = append(parts, strconv.Itoa(d.Slurm.GPUsPerUser))
	}
	for _, t := range slices.Sorted(maps.Keys(d.Slurm.GPUsPerUserByType)) {
		parts = append(parts, t+"="+strconv.Itoa(d.Slurm.GPUsPerUserByType[t]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
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
			msg := r.Message
			if msg == "" {
				msg = c.RefusalMessage
			}
			return Decision{Rule: name, Message: msg}, fmt.Errorf("%w: rule %q", ErrDenied, name)
		}
		fwd := r.Forwarding
		if fwd == nil {
			fwd = DefaultForwarding
		}
		to := slices.Clone(r.ForwardTo)
		if len(to) == 0 {
			to = []string{ForwardToNode}
		}
		d := Decision{
			Rule:        name,
			Pools:       slices.Clone(r.Pools),
			Rights:      rightsOf(fwd),
			ForwardTo:   to,
			MaxSessions: r.MaxSessions,
			IdleTimeout: r.IdleTimeout,
			IdleWarning: r.idleWarning(),
			MFA:         r.mfa(),
		}
		if r.Slurm != nil {
			sl := *r.Slurm
			d.Slurm = &sl
			d.QOS = slices.Clone(sl.QOS)
			if sl.HasUserLimits() {
				d.QOS = append([]string{QOSName(name)}, d.QOS...)
			}
		}
		return d, nil
	}
	return Decision{Message: c.RefusalMessage}, fmt.Errorf("%w: no rule matches user %q", ErrDenied, user)
}

// Forward destinations with a meaning of their own.
const (
	ForwardToNode = "node"
	ForwardToAny  = "any"
)

// mfa is the rule's requirement; the zero MFA (off) when it asks none.
func (r Rule) mfa() MFA {
	if r.MFA == "" || r.MFA == MFAOff {
		return MFA{}
	}
	m := MFA{Mode: r.MFA, Window: r.MFAWindow, SKCounts: r.MFASKCounts}
	if m.Window == 0 {
		m.Window = DefaultMFAWindow
	}
	return m
}

func (r Rule) idleWarning() time.Duration {
	switch {
	case r.IdleTimeout <= 0:
		return 0
	case r.IdleWarning > 0:
		return r.IdleWarning
	}
	return min(5*time.Minute, r.IdleTimeout/2)
}

// RuleName is the name rule i goes by.
func (c Config) RuleName(i int) string {
	if c.Rules[i].Name != "" {
		return c.Rules[i].Name
	}
	return fmt.Sprintf("rule %d", i+1)
}

func (r Rule) matches(user string, groups []string) bool {
	// Directory names are case-insensitive (AD lower-cases what it
	// returns; a rule may be written "Alice").
	for _, u := range r.Users {
		if strings.EqualFold(u, user) {
			return true
		}
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

// Known is what the rest of the configuration defines, for checking the
// names rules use. A nil list is not checked.
type Known struct {
	Pools      []string
	Partitions []string
	// MFA says the configuration has an mfa section.
	MFA bool
}

// Validate checks the section against what the rest of the configuration
// defines and reports every problem, each as "policy.key: problem"
// (errors.Join'ed).
func (c Config) Validate(known Known) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("policy.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.RefusalMessage == "" {
		add("refusal_message", "must not be empty: it is all a refused user is told")
	}
	ruleNames := map[string]int{}
	accountGPUs := map[string]int{} // account → rule index first limiting it
	for i, r := range c.Rules {
		key := fmt.Sprintf("rules[%d]", i)
		if r.Name != "" {
			if j, dup := ruleNames[strings.ToLower(r.Name)]; dup {
				add(key+".name", "%q is also the name of rules[%d]", r.Name, j)
			}
			ruleNames[strings.ToLower(r.Name)] = i
		}
		if len(r.Users) == 0 && len(r.Groups) == 0 {
			add(key, "a rule needs users or groups to match (use groups: [\"*\"] for everyone)")
		}
		if !r.Deny && len(r.Pools) == 0 {
			add(key+".pools", "an allow rule needs at least one pool")
		}
		for j, p := range r.Pools {
			switch {
			case !names.Node.Valid(p):
				add(fmt.Sprintf("%s.pools[%d]", key, j), "%q is not a valid pool name", p)
			case known.Pools != nil && !slices.Contains(known.Pools, p):
				add(fmt.Sprintf("%s.pools[%d]", key, j), "pool %q has no login nodes (pools: %s)", p, listOr(known.Pools))
			}
		}
		for j, f := range r.Forwarding {
			if !slices.Contains(allForwardings, f) {
				add(fmt.Sprintf("%s.forwarding[%d]", key, j), "unknown forwarding %q (want one of %s)", f, strings.Join(allForwardings, ", "))
			}
		}
		for j, d := range r.ForwardTo {
			if !validDestination(d) {
				add(fmt.Sprintf("%s.forward_to[%d]", key, j), "%q is not \"node\", \"any\", a host name, \"*.domain\" or a CIDR", d)
			}
		}
		if slices.Contains(r.ForwardTo, ForwardToAny) && len(r.ForwardTo) > 1 {
			add(key+".forward_to", "\"any\" already allows everything; list it alone")
		}
		if r.MaxSessions < 0 {
			add(key+".max_sessions", "must not be negative")
		}
		if r.IdleTimeout < 0 {
			add(key+".idle_timeout", "must not be negative")
		}
		if r.IdleWarning < 0 || (r.IdleWarning > 0 && r.IdleWarning >= r.IdleTimeout) {
			add(key+".idle_warning", "must be positive and shorter than idle_timeout")
		}
		switch r.MFA {
		case "", MFAOff, MFAOptional, MFARequired:
			if r.MFA != "" && r.MFA != MFAOff && !known.MFA {
				add(key+".mfa", "needs the mfa section (the RADIUS servers that check the second factor)")
			}
		default:
			add(key+".mfa", "unknown mode %q (want required, optional or off)", r.MFA)
		}
		if r.MFAWindow < 0 {
			add(key+".mfa_window", "must not be negative")
		}
		if r.Deny && (r.MFA != "" || r.MFAWindow != 0 || r.MFASKCounts) {
			add(key, "a deny rule asks for no second factor: remove mfa, mfa_window and mfa_sk_counts")
		}
		if r.Deny && (r.Slurm != nil || len(r.Pools) > 0) {
			add(key, "a deny rule grants nothing: remove pools and slurm")
		}
		if r.Message != "" && !r.Deny {
			add(key+".message", "only a deny rule has a refusal message (policy.refusal_message is for users no rule matches)")
		}
		if r.Slurm != nil {
			r.Slurm.validate(key+".slurm", r.Name, known, add)
			if a := r.Slurm.Account; a != "" && (r.Slurm.GPUsPerAccount > 0 || len(r.Slurm.GPUsPerAccountByType) > 0) {
				if j, ok := accountGPUs[a]; ok {
					o := c.Rules[j].Slurm
					if o.GPUsPerAccount != r.Slurm.GPUsPerAccount || !maps.Equal(o.GPUsPerAccountByType, r.Slurm.GPUsPerAccountByType) {
						add(key+".slurm.gpus_per_account", "account %q is limited differently by rules[%d]; an account has one limit", a, j)
					}
				} else {
					accountGPUs[a] = i
				}
			}
		}
	}
	for j := range c.Rules {
		for i := range j {
			if c.Rules[i].covers(c.Rules[j]) {
				add(fmt.Sprintf("rules[%d]", j), "never matches: everyone it selects is matched first by rules[%d] (%s)", i, c.RuleName(i))
				break
			}
		}
	}
	if len(c.Rules) == 0 {
		add("rules", "no rules: every user would be denied")
	}
	return errors.Join(errs...)
}

func (s *Slurm) validate(key, rule string, known Known, add func(key, format string, args ...any)) {
	if !names.SlurmAccount.Valid(rule) || !names.SlurmAccount.Valid(QOSName(rule)) {
		add(key, "a rule with a slurm section needs a name usable in Slurm, also as %q (%s): frontdoor names its QOS after it", QOSName(rule), names.SlurmAccount.Syntax)
	}
	if s.Account == "" {
		add(key+".account", "required")
	} else if !names.SlurmAccount.Valid(s.Account) {
		add(key+".account", "%q is not a valid Slurm account name (%s)", s.Account, names.SlurmAccount.Syntax)
	}
	for j, p := range s.Partitions {
		switch {
		case !names.SlurmName.Valid(p):
			add(fmt.Sprintf("%s.partitions[%d]", key, j), "%q is not a valid partition name", p)
		case known.Partitions != nil && !slices.Contains(known.Partitions, p):
			add(fmt.Sprintf("%s.partitions[%d]", key, j), "partition %q is not in slurm.partitions (%s)", p, listOr(known.Partitions))
		}
	}
	if d := s.DefaultPartition; d != "" {
		switch {
		case len(s.Partitions) > 0 && !slices.Contains(s.Partitions, d):
			add(key+".default_partition", "%q is not one of this rule's partitions", d)
		case known.Partitions != nil && !slices.Contains(known.Partitions, d):
			add(key+".default_partition", "partition %q is not in slurm.partitions (%s)", d, listOr(known.Partitions))
		case !names.SlurmName.Valid(d):
			add(key+".default_partition", "%q is not a valid partition name", d)
		}
	}
	for j, q := range s.QOS {
		if !names.SlurmAccount.Valid(q) {
			add(fmt.Sprintf("%s.qos[%d]", key, j), "%q is not a valid QOS name", q)
		}
	}
	if s.GPUsPerUser < 0 || s.GPUsPerAccount < 0 {
		add(key, "GPU limits must not be negative")
	}
	for name, m := range map[string]map[string]int{"gpus_per_user_by_type": s.GPUsPerUserByType, "gpus_per_account_by_type": s.GPUsPerAccountByType} {
		for t, n := range m {
			if !names.GPUType.Valid(t) {
				add(key+"."+name, "%q is not a valid GPU type", t)
			}
			if n < 0 {
				add(key+"."+name+"."+t, "must not be negative")
			}
		}
	}
	if s.DenyOnLimit && !s.HasUserLimits() {
		add(key+".deny_on_limit", "has no effect without gpus_per_user or gpus_per_user_by_type")
	}
}

// covers reports whether every user r2 can match is matched by r (so r2,
// after r, never matches).
func (r Rule) covers(r2 Rule) bool {
	if slices.Contains(r.Groups, "*") {
		return true
	}
	if slices.Contains(r2.Groups, "*") {
		return false
	}
	for _, u := range r2.Users {
		if !slices.ContainsFunc(r.Users, func(x string) bool { return strings.EqualFold(x, u) }) {
			return false
		}
	}
	for _, g := range r2.Groups {
		if !slices.ContainsFunc(r.Groups, func(x string) bool { return strings.EqualFold(x, g) }) {
			return false
		}
	}
	return len(r2.Users)+len(r2.Groups) > 0
}

func validDestination(d string) bool {
	if d == ForwardToNode || d == ForwardToAny {
		return true
	}
	if _, err := netip.ParsePrefix(d); err == nil {
		return true
	}
	return names.Host.Valid(strings.TrimPrefix(d, "*."))
}

func listOr(xs []string) string {
	if len(xs) == 0 {
		return "none defined"
	}
	return strings.Join(xs, ", ")
}

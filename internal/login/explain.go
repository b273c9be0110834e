package login

import (
	"errors"
	"fmt"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// Explain writes the decision in words, for `frontdoor explain`.
func (o Outcome) Explain(in Input) string {
	var b strings.Builder
	id := in.Ident
	fmt.Fprintf(&b, "user %s (uid %s, groups %s, from %s%s)\n", id.Name, uidText(id.UID), groupsText(id.Groups), id.Source, cachedText(id))
	if o.Refusal != nil && o.Refusal.Stage == StagePrincipal {
		fmt.Fprintf(&b, "refused: %s\nthe user would see: %s\n", o.Refusal.Reason, o.Refusal.UserMsg)
		return b.String()
	}
	if o.Policy.Rule != "" {
		fmt.Fprintf(&b, "policy: rule %q", o.Policy.Rule)
		if o.Refusal == nil || o.Refusal.Stage != StagePolicy {
			fmt.Fprintf(&b, ", pools %v, forwarding %s", o.Policy.Pools, rightsText(o.Policy.Rights))
			fmt.Fprintf(&b, " to %s", strings.Join(o.Policy.ForwardTo, ", "))
			if o.Policy.MaxSessions > 0 {
				fmt.Fprintf(&b, ", sessions %d of %d (all gateways)", in.View.UserSessions, o.Policy.MaxSessions)
			}
			if o.Policy.IdleTimeout > 0 {
				fmt.Fprintf(&b, ", idle timeout %v (warning %v before)", o.Policy.IdleTimeout, o.Policy.IdleWarning)
			}
			if m := o.Policy.MFA; m.Mode != "" && m.Mode != policy.MFAOff {
				fmt.Fprintf(&b, ", second factor %s (a key stays unlocked %v", m.Mode, m.Window)
				if m.SKCounts {
					b.WriteString("; a touched FIDO key counts")
				}
				b.WriteString(")")
			}
			if sl := o.Policy.Slurm; sl != nil {
				parts := strings.Join(sl.Partitions, ",")
				if parts == "" {
					parts = "all"
				}
				fmt.Fprintf(&b, "\nslurm: account %s, partitions %s (default %s), QOS %s, GPU limit %s per user",
					sl.Account, parts, OrDash(sl.Partition()), OrDash(strings.Join(o.Policy.QOS, ",")), o.Policy.GPULimit())
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
	if o.Refusal != nil && o.Refusal.Stage != StageRoute {
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
	fmt.Fprintf(&b, "a login now would try, in order: %s\n", strings.Join(route.Names(o.Targets), ", "))
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

// OrDash is s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

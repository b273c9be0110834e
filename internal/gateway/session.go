package gateway

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/proxy"
)

// What a relayed session gets from the gateway besides bytes: the
// environment the node's shell sees, the banner an interactive login
// shows, where -L/-D may lead, and when an idle session is closed. All of
// it follows from the login's policy decision and node.

// sessionEnv is the environment sent to the node for every session
// channel. The deploy/ sshd drop-in carries the matching AcceptEnv.
func sessionEnv(d policy.Decision, n node.Node, session string) map[string]string {
	env := map[string]string{
		"FRONTDOOR_NODE":    n.Name,
		"FRONTDOOR_POOL":    n.Pool,
		"FRONTDOOR_SESSION": session,
		"FRONTDOOR_RULE":    d.Rule,
	}
	sl := d.Slurm
	if sl == nil {
		return env
	}
	env["FRONTDOOR_ACCOUNT"] = sl.Account
	env["FRONTDOOR_PARTITION"] = sl.Partition()
	env["FRONTDOOR_PARTITIONS"] = strings.Join(sl.Partitions, ",")
	env["FRONTDOOR_QOS"] = strings.Join(d.QOS, ",")
	env["FRONTDOOR_GPU_LIMIT"] = d.GPULimit()
	if sl.SetJobDefaults {
		// sbatch, salloc and srun each read their own variables. These
		// override #SBATCH lines, which is why they are opt-in.
		for _, tool := range []string{"SBATCH", "SALLOC", "SLURM"} {
			env[tool+"_ACCOUNT"] = sl.Account
			if p := sl.Partition(); p != "" {
				env[tool+"_PARTITION"] = p
			}
			if len(d.QOS) == 1 {
				env[tool+"_QOS"] = d.QOS[0]
			}
		}
	}
	return env
}

// JobDefaultEnv lists the Slurm variables a rule with set_job_defaults
// sets (the login nodes' sshd must AcceptEnv them).
var JobDefaultEnv = []string{"SBATCH_ACCOUNT", "SBATCH_PARTITION", "SBATCH_QOS", "SALLOC_ACCOUNT", "SALLOC_PARTITION",
	"SALLOC_QOS", "SLURM_ACCOUNT", "SLURM_PARTITION", "SLURM_QOS"}

// GPUUsage tells how many GPUs a user and an account hold right now (from
// Slurm). Implementations answer from a cache and must honour ctx: a login
// never waits on a slow Slurm.
type GPUUsage interface {
	GPUsHeld(ctx context.Context, user, account string) (userGPUs, accountGPUs int, err error)
}

// sessionBanner is the short banner of an interactive login: where the
// user is and, with a Slurm grant, what they may use and hold now.
func sessionBanner(user string, d policy.Decision, n node.Node, usage GPUUsage, wait time.Duration, budget func(account string) string) func() string {
	return func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "frontdoor: %s on %s (pool %s, access %q)", user, n.Name, n.Pool, d.Rule)
		sl := d.Slurm
		if sl == nil {
			return b.String()
		}
		parts := sl.Partitions
		if len(parts) == 0 {
			parts = []string{"all"}
		}
		fmt.Fprintf(&b, "\nSlurm: account %s, partitions %s (default %s)", sl.Account, strings.Join(parts, ","), login.OrDash(sl.Partition()))
		if len(d.QOS) > 0 {
			fmt.Fprintf(&b, ", QOS %s", strings.Join(d.QOS, ","))
		}
		fmt.Fprintf(&b, "\nGPU limit: %s per user", d.GPULimit())
		if sl.GPUsPerAccount > 0 {
			fmt.Fprintf(&b, ", %d for account %s", sl.GPUsPerAccount, sl.Account)
		}
		if usage != nil {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			u, a, err := usage.GPUsHeld(ctx, user, sl.Account)
			cancel()
			if err != nil {
				b.WriteString("; GPUs held now: unknown (Slurm did not answer in time)")
			} else {
				fmt.Fprintf(&b, "; GPUs held now: you %d, %s %d", u, sl.Account, a)
			}
		}
		if budget != nil {
			if w := budget(sl.Account); w != "" {
				b.WriteString("\n" + w)
			}
		}
		return b.String()
	}
}

// allowDirect is where the user's -L and -D may lead (policy forward_to):
// by default the login node's own services only (localhost, its name and
// address); "any"; or listed hosts, "*.domain" suffixes and CIDRs.
func allowDirect(n node.Node, to []string) func(host string, port uint32) bool {
	if slices.Contains(to, policy.ForwardToAny) {
		return nil
	}
	own := proxy.LocalDestinations(ownNames(n)...)
	var hosts, suffixes []string
	var nets []netip.Prefix
	nodeToo := len(to) == 0
	for _, d := range to {
		switch {
		case d == policy.ForwardToNode:
			nodeToo = true
		case strings.HasPrefix(d, "*."):
			suffixes = append(suffixes, strings.ToLower(d[1:]))
		default:
			if p, err := netip.ParsePrefix(d); err == nil {
				nets = append(nets, p.Masked())
			} else {
				hosts = append(hosts, strings.ToLower(d))
			}
		}
	}
	return func(host string, port uint32) bool {
		if nodeToo && own(host, port) {
			return true
		}
		h := strings.ToLower(strings.TrimSuffix(host, "."))
		if slices.Contains(hosts, h) {
			return true
		}
		for _, s := range suffixes {
			if strings.HasSuffix(h, s) {
				return true
			}
		}
		if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			for _, p := range nets {
				if p.Contains(a.Unmap()) {
					return true
				}
			}
		}
		return false
	}
}

func ownNames(n node.Node) []string {
	own := []string{n.Name}
	if h := n.Host(); h != "" {
		own = append(own, h)
	}
	return own
}

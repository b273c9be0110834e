package cluster

import (
	"fmt"
	"slices"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// Health is what an agent publishes about its login node. Every figure is
// a claim of a machine whose root may be lost: a gateway takes it only
// within the physical bounds of route/bounds.go (Check), weighs the
// sessions it observes itself above the claimed ones (Nodes), and takes
// Pool and Addr from its inventory, never from here.
type Health struct {
	Pool        string    `json:"p"`
	Addr        string    `json:"a"` // sshd host:port gateways dial
	SSHDUp      bool      `json:"up"`
	Draining    bool      `json:"dr,omitempty"`
	At          time.Time `json:"t"` // when measured
	Sessions    int       `json:"s"`
	Users       int       `json:"u"`
	MaxSessions int       `json:"max,omitempty"`

	Load1        float64 `json:"l1"`
	Load5        float64 `json:"l5"`
	Load15       float64 `json:"l15"`
	CPUs         int     `json:"c"`
	CPUUtil      float64 `json:"cu"` // 0..1 over the last interval
	MemAvailFrac float64 `json:"m"`
	HasPSI       bool    `json:"psi,omitempty"`
	CPUPressure  float64 `json:"cp"` // PSI some avg10, 0..1
	MemPressure  float64 `json:"mp"`

	// Warnings are things about the node an operator should fix, from a
	// fixed vocabulary (Warn*): the gateways show them in `frontdoor
	// nodes` and as frontdoor_node_warning. Codes a gateway does not know
	// are dropped, so an agent cannot put text of its own in front of an
	// operator.
	Warnings []string `json:"w,omitempty"`
}

// Warnings an agent may raise.
const (
	// WarnPenaltyNotExempt: the node's sshd (OpenSSH ≥ 9.8) penalises
	// source addresses (PerSourcePenalties) and its effective config does
	// not exempt every gateway (PerSourcePenaltyExemptList): anyone who
	// makes the gateway abort a few connections to the node gets the
	// gateway refused by it. See deploy/.
	WarnPenaltyNotExempt = "sshd_penalty_not_exempt"
	// WarnSSHDCheckFailed: the agent could not run the sshd checks
	// (`sshd -V`, `sshd -T`); see its log.
	WarnSSHDCheckFailed = "sshd_check_failed"
)

var knownWarnings = []string{WarnPenaltyNotExempt, WarnSSHDCheckFailed}

// maxWarnings bounds Health.Warnings: the vocabulary is small.
const maxWarnings = 8

// Check reports a figure no real node can have (route's physical bounds)
// as an error naming it; at is when the health arrived, skew how far
// ahead of it a measurement time may be. Gateways refuse such health and
// count the node as lying; an agent checks its own before sending.
func (h Health) Check(at time.Time, skew time.Duration) error {
	counts := []struct {
		name string
		v    int
	}{{"sessions", h.Sessions}, {"users", h.Users}, {"max_sessions", h.MaxSessions}}
	for _, c := range counts {
		if c.v < 0 || c.v > route.MaxTasks {
			return fmt.Errorf("%s %d outside 0..%d", c.name, c.v, route.MaxTasks)
		}
	}
	if h.CPUs < 1 || h.CPUs > route.MaxCPUs {
		return fmt.Errorf("cpus %d outside 1..%d", h.CPUs, route.MaxCPUs)
	}
	loads := []struct {
		name string
		v    float64
	}{{"load1", h.Load1}, {"load5", h.Load5}, {"load15", h.Load15}}
	for _, l := range loads {
		if !(l.v >= 0 && l.v <= route.MaxTasks) { // NaN fails both
			return fmt.Errorf("%s %g outside 0..%d", l.name, l.v, route.MaxTasks)
		}
	}
	fracs := []struct {
		name string
		v    float64
	}{{"cpu_util", h.CPUUtil}, {"mem_avail_frac", h.MemAvailFrac}, {"cpu_pressure", h.CPUPressure}, {"mem_pressure", h.MemPressure}}
	for _, f := range fracs {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("%s %g outside 0..1", f.name, f.v)
		}
	}
	if h.At.IsZero() || h.At.After(at.Add(skew)) {
		return fmt.Errorf("measured at %v, arrived at %v", h.At.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
	}
	if len(h.Warnings) > maxWarnings {
		return fmt.Errorf("%d warnings", len(h.Warnings))
	}
	return nil
}

// knownWarningsOf keeps the warnings of the fixed vocabulary, once each.
func knownWarningsOf(ws []string) []string {
	var out []string
	for _, w := range ws {
		if slices.Contains(knownWarnings, w) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// Inventory is the gateway's list of login nodes: the only nodes whose
// health it takes, at the address and in the pool it says.
type Inventory interface {
	// Node returns the listed node called name.
	Node(name string) (node.Node, bool)
	// CheckHostKey reports whether key is a host key of the node called
	// name (nil if it is).
	CheckHostKey(name string, key ssh.PublicKey) error
}

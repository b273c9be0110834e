package soak

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Network faults between the gateways, with nftables on loopback.
//
// The gateways talk to each other only in their own gossip pool
// (cluster.gateway_port): SWIM probes and sealed state over UDP between
// the pool ports, push/pull and state sync over TCP to a pool port. Nothing
// else connects to those ports (agents send health to the other port), so
// a rule on the pool ports alone cuts the gateways apart and nothing else.
// The rules sit in the input hook: the sender's write succeeds and the
// packet is lost on the way, as on a real network (a drop in the output
// hook would fail the send at once with EPERM, which no network does).
//
// Everything lives in one table of its own, deleted afterwards; nothing
// else on the machine is touched.

// nftTable is the soak's nftables table (inet family).
const nftTable = "frontdoor_soak"

// NetFault is a set of rules between gateway pool ports.
type NetFault struct {
	ports []int
}

// NewNetFault is for the gateways whose pool ports are given.
func NewNetFault(poolPorts ...int) *NetFault { return &NetFault{ports: poolPorts} }

// Loss drops pct percent of the packets between the gateways' pools, both
// ways (TCP included: it retransmits).
func (f *NetFault) Loss(ctx context.Context, pct int) error {
	return f.apply(ctx, fmt.Sprintf("numgen random mod 100 < %d ", pct))
}

// Partition drops every packet between the gateways' pools.
func (f *NetFault) Partition(ctx context.Context) error { return f.apply(ctx, "") }

// apply replaces the table with rules dropping (with cond) UDP between
// two pool ports and TCP to or from one.
func (f *NetFault) apply(ctx context.Context, cond string) error {
	f.Heal(ctx)
	var ports []string
	for _, p := range f.ports {
		ports = append(ports, strconv.Itoa(p))
	}
	set := "{ " + strings.Join(ports, ", ") + " }"
	script := fmt.Sprintf(`table inet %[1]s {
	chain input {
		type filter hook input priority -10; policy accept;
		udp sport %[2]s udp dport %[2]s %[3]sdrop
		tcp dport %[2]s %[3]sdrop
		tcp sport %[2]s %[3]sdrop
	}
}
`, nftTable, set, cond)
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %v: %s", err, out)
	}
	return nil
}

// Heal removes every rule (and the table); harmless when there is none.
func (f *NetFault) Heal(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "nft", "delete", "table", "inet", nftTable).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "No such file") {
		return fmt.Errorf("nft delete table: %v: %s", err, out)
	}
	return nil
}

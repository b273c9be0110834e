// Package node is the one description of a login node that every part of
// frontdoor carries: the configuration and discovery produce it, the
// inventory lists it, gossiped health is checked against it, routing
// returns it and the backend dial goes to it. Its three facts come from the
// gateways' own sources (configuration, discovery), never from the node:
// who trusts whom is in docs/ARCHITECTURE.md.
package node

import (
	"fmt"
	"net"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Node is one login node.
type Node struct {
	// Name is what users type after "+" (alice+login2), what logs and
	// metrics show, and the name its host key is checked under.
	Name string `yaml:"name" json:"name"`
	// Addr is the node's sshd, host:port, as the gateway dials it.
	Addr string `yaml:"addr" json:"addr"`
	// Pool groups nodes; policy rules grant pools.
	Pool string `yaml:"pool" json:"pool"`
}

// DefaultPool is the pool of a node listed without one.
const DefaultPool = "default"

// SetDefaults sets n to a listed node's defaults (yamlconf.Defaulter:
// every nodes entry of the configuration starts from them).
func (n *Node) SetDefaults() { *n = Node{Pool: DefaultPool} }

func (n Node) String() string { return n.Name }

// Validate reports what is wrong with n, each problem as "key: message"
// with keys relative to the node (name, addr, pool).
func (n Node) Validate() []Problem {
	var out []Problem
	if !ValidName(n.Name) {
		out = append(out, Problem{"name", fmt.Sprintf("%q is not a valid node name (%s)", n.Name, names.Node.Syntax)})
	}
	if _, _, err := net.SplitHostPort(n.Addr); err != nil {
		out = append(out, Problem{"addr", fmt.Sprintf("not host:port: %v", err)})
	}
	if !ValidName(n.Pool) {
		out = append(out, Problem{"pool", fmt.Sprintf("%q is not a valid pool name (%s)", n.Pool, names.Node.Syntax)})
	}
	return out
}

// Problem is one thing wrong with a node, at a key relative to it.
type Problem struct{ Key, Msg string }

// ValidName reports whether s is an acceptable node (or pool) name: what
// may follow "+" in a login name, appear in logs unescaped and be a
// known_hosts host name (the rule is names.Node).
func ValidName(s string) bool { return names.Node.Valid(s) }

// Pools lists the distinct pools of nodes, in first-seen order.
func Pools(nodes []Node) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if !seen[n.Pool] {
			seen[n.Pool] = true
			out = append(out, n.Pool)
		}
	}
	return out
}

// Host is the host part of n's address, without brackets.
func (n Node) Host() string {
	h, _, err := net.SplitHostPort(n.Addr)
	if err != nil {
		return ""
	}
	return strings.Trim(h, "[]")
}

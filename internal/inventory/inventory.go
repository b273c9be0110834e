// Package inventory is a gateway's knowledge of the login nodes: which
// nodes exist (configured, or found by discovery), where they are and in
// which pool — the gateway's own word, never a node's — and how they are
// doing now (health gossiped by their agents, or the gateway's own probe of
// a node that has no agent), with the sessions and failures the gateway saw
// itself. It hands the login decision its View and hears back what became
// of each login.
package inventory

import (
	"log/slog"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// Inventory is the gateway's own list of login nodes, the source of truth
// for a node's address and pool: the configured nodes plus those discovery
// finds eligible. Gossiped health is taken only for nodes listed here,
// signed with the node's host key by name (cluster.Inventory); agents claim
// nothing the gateway believes about where a node is. A configured node
// wins over a discovered one of the same name. Safe for concurrent use.
type Inventory struct {
	log *slog.Logger

	// update serialises the writers (discovery, a reload): each computes
	// the lists from the other's last input.
	update sync.Mutex

	mu         sync.RWMutex // mu protects the following
	keys       *node.HostKeys
	static     []node.Node      // configured (written under update too)
	found      []discovery.Node // discovery's last list (likewise)
	nodes      map[string]node.Node
	order      []node.Node       // eligible nodes, sorted by name
	ineligible map[string]string // discovered, not taking logins: why
}

var _ cluster.Inventory = (*Inventory)(nil)

// New lists the configured nodes; keys checks their host keys.
func New(nodes []node.Node, keys *node.HostKeys, log *slog.Logger) *Inventory {
	inv := &Inventory{keys: keys, log: log, static: slices.Clone(nodes)}
	inv.SetDiscovered(nil)
	return inv
}

// Reload replaces the configured nodes and the host keys (a configuration
// reload); the discovered part stays.
func (inv *Inventory) Reload(nodes []node.Node, keys *node.HostKeys) {
	inv.update.Lock()
	defer inv.update.Unlock()
	inv.mu.Lock()
	inv.keys = keys
	inv.mu.Unlock()
	inv.set(slices.Clone(nodes), inv.found)
}

// SetDiscovered replaces the discovered part.
func (inv *Inventory) SetDiscovered(found []discovery.Node) {
	inv.update.Lock()
	defer inv.update.Unlock()
	inv.set(inv.static, found)
}

// set computes the lists from the configured and the discovered nodes;
// update held.
func (inv *Inventory) set(static []node.Node, found []discovery.Node) {
	m := make(map[string]node.Node, len(static)+len(found))
	var order []node.Node
	for _, n := range static {
		m[n.Name] = n
		order = append(order, n)
	}
	ineligible := map[string]string{}
	for _, d := range found {
		if _, dup := m[d.Name]; dup {
			inv.log.Warn("discovery: a node of this name is configured; the configured one is used", "node", d.Name, "instance", d.InstanceID)
			continue
		}
		if !d.Eligible || d.Addr == "" {
			reason := d.Reason
			if reason == "" {
				reason = "address not known yet"
			}
			ineligible[d.Name] = d.Status + ": " + reason
			continue
		}
		m[d.Name] = d.Node
		order = append(order, d.Node)
	}
	slices.SortFunc(order, func(a, b node.Node) int { return strings.Compare(a.Name, b.Name) })
	inv.mu.Lock()
	inv.static, inv.found = static, found
	inv.nodes, inv.order, inv.ineligible = m, order, ineligible
	inv.mu.Unlock()
}

// Node returns the listed node called name.
func (inv *Inventory) Node(name string) (node.Node, bool) {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	n, ok := inv.nodes[name]
	return n, ok
}

// List returns the eligible nodes, sorted by name. The caller must not
// modify the slice.
func (inv *Inventory) List() []node.Node {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return inv.order
}

// NotTaking lists discovered nodes that take no new logins, and why.
func (inv *Inventory) NotTaking() map[string]string {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return inv.ineligible
}

// CheckHostKey reports whether key is a host key of the node called name.
func (inv *Inventory) CheckHostKey(name string, key ssh.PublicKey) error {
	inv.mu.RLock()
	keys := inv.keys
	inv.mu.RUnlock()
	if keys.Insecure() {
		return nil
	}
	return keys.Check(name, key)
}

package gateway

import (
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"golang.org/x/crypto/ssh"
)

// inventory is the gateway's own list of login nodes, the source of truth
// for a node's address and pool: the configured nodes plus those discovery
// finds eligible. Gossiped health is taken only for nodes listed here,
// signed with the node's host key by name (cluster.Inventory); agents
// claim nothing the gateway believes about where a node is. A configured
// node wins over a discovered one of the same name.
type inventory struct {
	keys *hostKeys
	log  *slog.Logger

	mu         sync.RWMutex // mu protects the following
	static     []config.Node
	nodes      map[string]cluster.InventoryNode
	order      []config.Node     // eligible nodes, sorted by name
	ineligible map[string]string // discovered, not taking logins: why
}

var _ cluster.Inventory = (*inventory)(nil)

func newInventory(nodes []config.Node, keys *hostKeys, log *slog.Logger) *inventory {
	inv := &inventory{keys: keys, log: log, static: slices.Clone(nodes)}
	inv.setDiscovered(nil)
	return inv
}

// setDiscovered replaces the discovered part.
func (inv *inventory) setDiscovered(found []discovery.Node) {
	m := make(map[string]cluster.InventoryNode, len(inv.static)+len(found))
	var order []config.Node
	for _, n := range inv.static {
		m[n.Name] = cluster.InventoryNode{Name: n.Name, Addr: n.Addr, Pool: n.Pool}
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
		m[d.Name] = cluster.InventoryNode{Name: d.Name, Addr: d.Addr, Pool: d.Pool}
		order = append(order, config.Node{Name: d.Name, Addr: d.Addr, Pool: d.Pool})
	}
	slices.SortFunc(order, func(a, b config.Node) int { return strings.Compare(a.Name, b.Name) })
	inv.mu.Lock()
	inv.nodes, inv.order, inv.ineligible = m, order, ineligible
	inv.mu.Unlock()
}

func (inv *inventory) Node(name string) (cluster.InventoryNode, bool) {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	n, ok := inv.nodes[name]
	return n, ok
}

// list returns the eligible nodes, sorted by name.
func (inv *inventory) list() []config.Node {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return inv.order
}

// notTaking lists discovered nodes that take no new logins, and why.
func (inv *inventory) notTaking() map[string]string {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return inv.ineligible
}

func (inv *inventory) CheckHostKey(name string, key ssh.PublicKey) error {
	if inv.keys.insecure {
		return nil
	}
	return inv.keys.check(name, key)
}

package gateway

import (
	"sync"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"golang.org/x/crypto/ssh"
)

// inventory is the gateway's own list of login nodes, the source of truth
// for a node's address and pool: gossiped health is taken only for nodes
// listed here, signed with the node's host key by name (cluster.Inventory).
// Agents claim nothing the gateway believes about where a node is.
type inventory struct {
	keys *hostKeys

	mu    sync.RWMutex // mu protects nodes
	nodes map[string]cluster.InventoryNode
}

var _ cluster.Inventory = (*inventory)(nil)

func newInventory(nodes []config.Node, keys *hostKeys) *inventory {
	inv := &inventory{keys: keys}
	inv.set(nodes)
	return inv
}

// set replaces the list (discovery refreshes it).
func (inv *inventory) set(nodes []config.Node) {
	m := make(map[string]cluster.InventoryNode, len(nodes))
	for _, n := range nodes {
		m[n.Name] = cluster.InventoryNode{Name: n.Name, Addr: n.Addr, Pool: n.Pool}
	}
	inv.mu.Lock()
	inv.nodes = m
	inv.mu.Unlock()
}

func (inv *inventory) Node(name string) (cluster.InventoryNode, bool) {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	n, ok := inv.nodes[name]
	return n, ok
}

func (inv *inventory) CheckHostKey(name string, key ssh.PublicKey) error {
	if inv.keys.insecure {
		return nil
	}
	return inv.keys.check(name, key)
}

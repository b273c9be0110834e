package gateway

import (
	"net"
	"net/netip"
	"sync"
)

// Limits on what strangers can make the gateway (and the login nodes) do:
// admission (admission.go) bounds unauthenticated connections; specBudget
// bounds the node connections opened ahead of a proof; the password gates
// (throttle.go) bound directory binds.

// SourceKey is the key under which a client address is limited and
// throttled: the IPv4 address, or the /64 of an IPv6 address (one
// subscriber usually holds a whole /64, so per-address limits on IPv6 would
// be per-attempt limits). addr is "host:port" or a bare address.
func SourceKey(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}

// specBudget bounds node connections opened before a client proved
// anything, in all and per node.
type specBudget struct {
	max, perNode int

	mu       sync.Mutex // mu protects the following
	total    int
	perNodeN map[string]int
}

func newSpecBudget(max, perNode int) *specBudget {
	return &specBudget{max: max, perNode: perNode, perNodeN: map[string]int{}}
}

// acquire takes a place for a speculative connection to node; the release
// func returns it (once; extra calls are ignored).
func (b *specBudget) acquire(node string) (release func(), ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total >= b.max || b.perNodeN[node] >= b.perNode {
		return nil, false
	}
	b.total++
	b.perNodeN[node]++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.total--
			if b.perNodeN[node]--; b.perNodeN[node] <= 0 {
				delete(b.perNodeN, node)
			}
		})
	}, true
}

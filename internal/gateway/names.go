package gateway

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// SplitUser splits "user+node" into its parts. The user part is returned as
// typed (the directory normalises it); the node part must be a valid node
// name.
func SplitUser(s string) (user, node string, err error) {
	if i := strings.LastIndexByte(s, '+'); i >= 0 {
		user, node = s[:i], s[i+1:]
		if !names.Node.Valid(node) {
			return "", "", fmt.Errorf("%w: invalid node name after '+'", directory.ErrInvalidName)
		}
	} else {
		user = s
	}
	if user == "" || len(user) > 256 {
		return "", "", fmt.Errorf("%w: empty or overlong", directory.ErrInvalidName)
	}
	return user, node, nil
}

// sanitize makes an untrusted name safe to log: quoted printable ASCII,
// bounded.
func sanitize(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

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

// canonicalizer is implemented by directories where one user may type
// several names (AD: alice, HPC\alice, alice@hpc.example.edu).
type canonicalizer interface {
	CanonicalName(typed string) string
}

// accountKey is the per-account throttling key of a name that could not be
// resolved: every form of a name counts against the same allowance.
func (g *Gateway) accountKey(name string) string {
	if c, ok := g.dir.(canonicalizer); ok {
		return c.CanonicalName(name)
	}
	return name
}

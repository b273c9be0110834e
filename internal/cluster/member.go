package cluster

import (
	"log/slog"
	"maps"
	"slices"
	"strings"
)

// Members: what a member is (a gateway or an agent) and the node meta a
// gateway shows the others in the gateways' pool (transport.go).

// Role is what a member is.
type Role string

const (
	RoleGateway Role = "gateway"
	RoleAgent   Role = "agent"
)

// Member is one member of the gateways' pool as this gateway sees it.
type Member struct {
	Name string
	Addr string // gossip address host:port
	Role Role
	Meta map[string]string
}

// Node meta is "role" then "key=value" pairs, newline separated: small and
// trivially parsed. encodeMeta drops the extras, with a warning, rather
// than exceed limit.
func encodeMeta(role Role, extra map[string]string, limit int, log *slog.Logger) []byte {
	var b strings.Builder
	b.WriteString(string(role))
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		b.WriteString("\n" + k + "=" + extra[k])
	}
	if b.Len() <= limit {
		return []byte(b.String())
	}
	log.Warn("cluster: node meta too large; sending role only", "bytes", b.Len(), "limit", limit)
	if len(role) > limit {
		return nil
	}
	return []byte(role)
}

func decodeMeta(b []byte) (Role, map[string]string) {
	lines := strings.Split(string(b), "\n")
	meta := map[string]string{}
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, "="); ok {
			meta[k] = v
		}
	}
	return Role(lines[0]), meta
}

// fitMeta is meta, or none if it is over limit (memberlist panics on
// more).
func fitMeta(meta []byte, limit int) []byte {
	if len(meta) > limit {
		return nil
	}
	return meta
}

// sortMembers sorts members by name.
func sortMembers(ms []Member) {
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
}

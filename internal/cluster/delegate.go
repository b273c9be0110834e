package cluster

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/memberlist"
)

// delegate implements memberlist.Delegate and memberlist.EventDelegate.
// memberlist calls these from its packet and probe loops, sometimes with
// its own locks held, so every method only takes c.mu briefly, never
// blocks, and never calls back into memberlist while holding c.mu.
type delegate struct{ c *Cluster }

var (
	_ memberlist.Delegate      = (*delegate)(nil)
	_ memberlist.EventDelegate = (*delegate)(nil)
)

// NodeMeta returns the meta computed once at Start, already fitted to the
// limit (memberlist panics on more).
func (d *delegate) NodeMeta(limit int) []byte {
	if len(d.c.meta) > limit {
		return nil
	}
	return d.c.meta
}

// NotifyMsg takes one broadcast or direct message. memberlist reuses buf
// after we return, so we copy it before decoding.
func (d *delegate) NotifyMsg(buf []byte) {
	if len(buf) < 2 {
		return
	}
	b := slices.Clone(buf[1:])
	switch buf[0] {
	case msgEntry:
		var e entry
		if err := json.Unmarshal(b, &e); err != nil {
			d.c.log.Debug("cluster: bad broadcast", "err", err)
			return
		}
		d.c.apply([]entry{e}, true)
	case msgBatch:
		var es []entry
		if err := json.Unmarshal(b, &es); err != nil {
			d.c.log.Debug("cluster: bad batch", "err", err)
			return
		}
		d.c.apply(es, false)
	}
}

// GetBroadcasts hands memberlist our queued entries to piggyback.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.c.queue.GetBroadcasts(overhead, limit)
}

// pushPull is the full state exchanged over TCP.
type pushPull struct {
	Entries []entry `json:"e"`
}

// LocalState sends every entry, tombstones included, for push/pull.
func (d *delegate) LocalState(join bool) []byte {
	d.c.mu.Lock()
	pp := pushPull{Entries: d.c.st.snapshot()}
	d.c.mu.Unlock()
	b, err := json.Marshal(pp)
	if err != nil {
		d.c.log.Error("cluster: encode state", "err", err)
		return nil
	}
	return b
}

// MergeRemoteState merges a peer's full state.
func (d *delegate) MergeRemoteState(buf []byte, join bool) {
	var pp pushPull
	if err := json.Unmarshal(buf, &pp); err != nil {
		d.c.log.Warn("cluster: bad remote state", "err", err)
		return
	}
	d.c.apply(pp.Entries, false)
}

// apply merges entries and sends what we must answer. memberlist does not
// relay user broadcasts: with relay set (entries that came by broadcast),
// every health entry new to us is queued again, which is what makes the
// spread epidemic. Entries from push/pull or direct sends are not relayed:
// a joiner would otherwise rebroadcast the whole state.
func (c *Cluster) apply(in []entry, relay bool) {
	now := c.now()
	var answers []entry
	changed := false
	c.mu.Lock()
	for _, e := range in {
		ch, ans := c.st.merge(e, now)
		changed = changed || ch
		answers = append(answers, ans...)
		if ch && relay && epidemic(e.Key) {
			answers = append(answers, e)
		}
	}
	c.mu.Unlock()
	for _, e := range answers {
		c.send(e)
	}
	if changed {
		c.notify()
	}
}

func (d *delegate) NotifyJoin(n *memberlist.Node)   { d.c.memberUp(n) }
func (d *delegate) NotifyUpdate(n *memberlist.Node) { d.c.memberUp(n) }

func (d *delegate) NotifyLeave(n *memberlist.Node) {
	c := d.c
	c.mu.Lock()
	delete(c.alive, n.Name)
	delete(c.gateways, n.Name)
	c.numMembers.Store(int32(len(c.alive)))
	c.mu.Unlock()
	c.notify()
}

func (c *Cluster) memberUp(n *memberlist.Node) {
	role, meta := decodeMeta(n.Meta)
	m := Member{
		Name: n.Name,
		Addr: net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port))),
		Role: role,
		Meta: meta,
	}
	c.mu.Lock()
	c.alive[n.Name] = m
	if role == RoleGateway && n.Name != c.cfg.Name {
		// A copy: memberlist owns n and changes it under its own lock.
		c.gateways[n.Name] = &memberlist.Node{Name: n.Name, Addr: slices.Clone(n.Addr), Port: n.Port}
	}
	c.numMembers.Store(int32(len(c.alive)))
	c.mu.Unlock()
	c.notify()
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

func sortMembers(ms []Member) {
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
}

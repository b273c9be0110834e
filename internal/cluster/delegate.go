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
		d.c.apply([]entry{e}, true, false)
	case msgBatch:
		var es []entry
		if err := json.Unmarshal(b, &es); err != nil {
			d.c.log.Debug("cluster: bad batch", "err", err)
			return
		}
		d.c.apply(es, false, false)
	case msgSealed:
		if d.c.role != RoleGateway {
			return // gateway state is none of an agent's business
		}
		es, err := d.c.openEntries(msgSealed, b)
		if err != nil {
			d.c.noteRefusal(&entry{Origin: "(sealed message)"}, refuse(refusedSealedOpen, "%v", err))
			return
		}
		d.c.apply(es, false, true)
	}
}

// GetBroadcasts hands memberlist our queued entries to piggyback.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.c.queue.GetBroadcasts(overhead, limit)
}

// pushPull is the full state exchanged over TCP: health in clear (signed
// by each node), gateway state sealed for the gateways.
type pushPull struct {
	Entries []entry `json:"e"`
	Sealed  []byte  `json:"s,omitempty"`
}

// LocalState sends every entry, tombstones included, for push/pull. An
// agent holds health only; a gateway adds the gateway state, sealed, so an
// agent on the other end can neither read nor change it.
func (d *delegate) LocalState(join bool) []byte {
	c := d.c
	c.mu.Lock()
	all := c.st.snapshot()
	c.mu.Unlock()
	var pp pushPull
	var gw []entry
	for _, e := range all {
		if epidemic(e.Key) || c.sealer == nil {
			pp.Entries = append(pp.Entries, e)
		} else {
			gw = append(gw, e)
		}
	}
	if len(gw) > 0 {
		sealed, err := c.sealEntries(msgSealed, gw)
		if err != nil {
			c.log.Error("cluster: seal state", "err", err)
			return nil
		}
		pp.Sealed = sealed
	}
	b, err := json.Marshal(pp)
	if err != nil {
		c.log.Error("cluster: encode state", "err", err)
		return nil
	}
	return b
}

// MergeRemoteState merges a peer's full state.
func (d *delegate) MergeRemoteState(buf []byte, join bool) {
	c := d.c
	var pp pushPull
	if err := json.Unmarshal(buf, &pp); err != nil {
		c.log.Warn("cluster: bad remote state", "err", err)
		return
	}
	c.apply(pp.Entries, false, false)
	if len(pp.Sealed) > 0 && c.role == RoleGateway {
		es, err := c.openEntries(msgSealed, pp.Sealed)
		if err != nil {
			c.noteRefusal(&entry{Origin: "(sealed state)"}, refuse(refusedSealedOpen, "%v", err))
			return
		}
		c.apply(es, false, true)
	}
}

// apply merges entries and sends what we must answer. memberlist does not
// relay user broadcasts: with relay set (entries that came by broadcast),
// every health entry new to us is queued again, which is what makes the
// spread epidemic. Entries from push/pull or direct sends are not relayed:
// a joiner would otherwise rebroadcast the whole state. sealed says the
// entries came sealed with a gateway key; admit (trust.go) decides what
// may be merged at all.
func (c *Cluster) apply(in []entry, relay, sealed bool) {
	now := c.now()
	// Entries no newer than ours change nothing: drop them before the
	// (costlier) checks, so a flood of stale copies costs little.
	fresh := make([]entry, 0, len(in))
	c.mu.Lock()
	for _, e := range in {
		if cur := c.st.entries[e.Key]; cur == nil || e.newer(cur) {
			fresh = append(fresh, e)
		}
	}
	c.mu.Unlock()
	kept := fresh[:0]
	for i := range fresh {
		e := &fresh[i]
		skip, err := c.admit(e, sealed, now)
		if err != nil {
			c.noteRefusal(e, err)
			continue
		}
		if !skip {
			kept = append(kept, *e)
		}
	}
	var answers []entry
	changed := false
	c.mu.Lock()
	for _, e := range kept {
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

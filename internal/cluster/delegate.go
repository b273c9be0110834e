package cluster

import (
	"encoding/json"
	"slices"

	"github.com/hashicorp/memberlist"
)

// The delegates of the two transports (transport.go). memberlist calls
// them from its packet and probe loops, sometimes with its own locks held,
// so every method only takes c.mu briefly, never blocks, and never calls
// back into memberlist while holding c.mu.

// gatewayDelegate serves the gateways' pool: only gateways can put a
// packet in it (its keys derive from gateway_keys), it carries gateway
// state, and its membership is gateway liveness.
type gatewayDelegate struct{ c *Cluster }

var (
	_ memberlist.Delegate      = (*gatewayDelegate)(nil)
	_ memberlist.EventDelegate = (*gatewayDelegate)(nil)
)

// NodeMeta returns the meta computed once at Start, already fitted to the
// limit (memberlist panics on more).
func (d *gatewayDelegate) NodeMeta(limit int) []byte { return fitMeta(d.c.meta, limit) }

// NotifyMsg takes one direct message from another gateway. memberlist
// reuses buf after we return, so it is copied before decoding.
func (d *gatewayDelegate) NotifyMsg(buf []byte) {
	if len(buf) < 2 {
		return
	}
	d.c.takeMessage(buf[0], slices.Clone(buf[1:]), true)
}

// GetBroadcasts: nothing travels by epidemic broadcast (send.go).
func (d *gatewayDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState sends the gateway state, sealed, for push/pull with another
// gateway. Health is not part of it: each gateway judges a node by what
// the node's own agent sends it.
func (d *gatewayDelegate) LocalState(join bool) []byte {
	return d.c.localState(false)
}

// MergeRemoteState merges another gateway's state.
func (d *gatewayDelegate) MergeRemoteState(buf []byte, join bool) {
	d.c.mergeState(buf, true)
}

func (d *gatewayDelegate) NotifyJoin(n *memberlist.Node)   { d.c.gatewayUp(n) }
func (d *gatewayDelegate) NotifyUpdate(n *memberlist.Node) { d.c.gatewayUp(n) }

// NotifyLeave: a peer left or was declared dead. Its sessions and routed
// counts stop counting here (ownerAlive), so an operator must be able to
// see when: a partition looks like this on both sides.
func (d *gatewayDelegate) NotifyLeave(n *memberlist.Node) {
	c := d.c
	c.mu.Lock()
	_, was := c.alive[n.Name]
	delete(c.alive, n.Name)
	delete(c.gateways, n.Name)
	left := len(c.alive)
	c.mu.Unlock()
	if was && n.Name != c.cfg.Name {
		c.log.Warn("cluster: gateway gone from the gateways' pool (left, or unreachable and declared dead); its sessions no longer count here",
			"gateway", n.Name, "addr", n.Address(), "gateways_alive", left)
	}
	c.notify()
}

func (c *Cluster) gatewayUp(n *memberlist.Node) {
	role, meta := decodeMeta(n.Meta)
	m := Member{Name: n.Name, Addr: n.Address(), Role: role, Meta: meta}
	c.mu.Lock()
	_, was := c.alive[n.Name]
	c.alive[n.Name] = m
	if n.Name != c.cfg.Name {
		// A copy: memberlist owns n and changes it under its own lock.
		c.gateways[n.Name] = &memberlist.Node{Name: n.Name, Addr: slices.Clone(n.Addr), Port: n.Port}
	}
	c.mu.Unlock()
	if !was && n.Name != c.cfg.Name {
		c.log.Info("cluster: gateway joined the gateways' pool", "gateway", n.Name, "addr", n.Address())
	}
	c.notify()
}

// agentPortDelegate serves the agent port: on a gateway, agents' signed
// health (and, with SinglePoolCompat, the previous release's single pool);
// on an agent, nothing comes in that it takes.
type agentPortDelegate struct{ c *Cluster }

var (
	_ memberlist.Delegate      = (*agentPortDelegate)(nil)
	_ memberlist.EventDelegate = (*agentPortDelegate)(nil)
)

func (d *agentPortDelegate) NodeMeta(limit int) []byte { return fitMeta(d.c.meta, limit) }

// NotifyMsg takes one message from whoever holds secret_keys.
func (d *agentPortDelegate) NotifyMsg(buf []byte) {
	if len(buf) < 2 || d.c.role != RoleGateway {
		return // an agent takes nothing from anyone
	}
	d.c.takeMessage(buf[0], slices.Clone(buf[1:]), false)
}

func (d *agentPortDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState is empty, except for gateways of the previous release in the
// single pool (SinglePoolCompat): they get what they got from a gateway
// before, health in clear and the gateway state sealed.
func (d *agentPortDelegate) LocalState(join bool) []byte {
	c := d.c
	if c.role != RoleGateway || !c.cfg.SinglePoolCompat {
		// Empty, but valid for the previous release's agents, which
		// still push/pull with the gateways they joined.
		return []byte("{}")
	}
	return c.localState(true)
}

// MergeRemoteState takes the health in a push/pull (old agents and
// gateways send theirs), and, with SinglePoolCompat, the sealed gateway
// state of gateways of the previous release.
func (d *agentPortDelegate) MergeRemoteState(buf []byte, join bool) {
	if d.c.role != RoleGateway || len(buf) == 0 {
		return
	}
	d.c.mergeState(buf, d.c.cfg.SinglePoolCompat)
}

// Membership of the agent port means nothing, except that with
// SinglePoolCompat a member with the gateway role is a gateway of the
// previous release (or one of this release, found in the gateways' pool
// too, where it counts).
func (d *agentPortDelegate) NotifyJoin(n *memberlist.Node)   { d.c.legacyUp(n) }
func (d *agentPortDelegate) NotifyUpdate(n *memberlist.Node) { d.c.legacyUp(n) }
func (d *agentPortDelegate) NotifyLeave(n *memberlist.Node) {
	c := d.c
	c.mu.Lock()
	delete(c.legacy, n.Name)
	delete(c.poolMembers, n.Name)
	c.mu.Unlock()
}

func (c *Cluster) legacyUp(n *memberlist.Node) {
	if c.role != RoleGateway || !c.cfg.SinglePoolCompat {
		return
	}
	role, _ := decodeMeta(n.Meta)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.poolMembers[n.Name] = n.Address()
	if role == RoleGateway && n.Name != c.cfg.Name {
		c.legacy[n.Name] = &memberlist.Node{Name: n.Name, Addr: slices.Clone(n.Addr), Port: n.Port}
	}
}

// takeMessage decodes a direct message; fromGateways says it arrived in
// the gateways' pool.
func (c *Cluster) takeMessage(tag byte, b []byte, fromGateways bool) {
	switch tag {
	case msgEntry, msgBatch:
		var es []entry
		if tag == msgEntry {
			var e entry
			if err := json.Unmarshal(b, &e); err != nil {
				c.log.Debug("cluster: bad message", "err", err)
				return
			}
			es = []entry{e}
		} else if err := json.Unmarshal(b, &es); err != nil {
			c.log.Debug("cluster: bad batch", "err", err)
			return
		}
		c.apply(es, false)
	case msgSealed:
		if !fromGateways && !c.cfg.SinglePoolCompat {
			c.noteRefusal(&entry{Origin: "(sealed message)"}, refuse(refusedSealedAgentPort,
				"gateway state on the agent port: a gateway of the previous release? set single_pool_compat while upgrading"))
			return
		}
		es, r := c.openEntries(msgSealed, b)
		if r != nil {
			c.noteRefusal(&entry{Origin: "(sealed message)"}, r)
			return
		}
		c.apply(es, true)
	}
}

// pushPull is the full state exchanged over TCP: health in clear (signed
// by each node; only in the single pool), gateway state sealed.
type pushPull struct {
	Entries []entry `json:"e"`
	Sealed  []byte  `json:"s,omitempty"`
}

// localState encodes the gateway state for push/pull, sealed, and with
// withHealth the health too (for the previous release's gateways).
func (c *Cluster) localState(withHealth bool) []byte {
	c.mu.Lock()
	all := c.st.snapshot()
	c.mu.Unlock()
	var pp pushPull
	var gw []entry
	for _, e := range all {
		switch {
		case isHealth(e.Key):
			if withHealth {
				pp.Entries = append(pp.Entries, e)
			}
		case c.sealer == nil:
			pp.Entries = append(pp.Entries, e)
		default:
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

// mergeState merges a push/pull; sealed parts only if takeSealed.
func (c *Cluster) mergeState(buf []byte, takeSealed bool) {
	var pp pushPull
	if err := json.Unmarshal(buf, &pp); err != nil {
		c.log.Warn("cluster: bad remote state", "err", err)
		return
	}
	c.apply(pp.Entries, false)
	if len(pp.Sealed) == 0 || !takeSealed {
		return
	}
	es, r := c.openEntries(msgSealed, pp.Sealed)
	if r != nil {
		c.noteRefusal(&entry{Origin: "(sealed state)"}, r)
		return
	}
	c.apply(es, true)
}

// apply merges entries and sends what we must answer. sealed says the
// entries came sealed with a gateway key; admit (trust.go) decides what
// may be merged at all. Nothing is relayed: each gateway hears each agent
// itself.
func (c *Cluster) apply(in []entry, sealed bool) {
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
		if skip {
			continue
		}
		kept = append(kept, *e)
		if h, ok := decode[Health](e); ok && isHealth(e.Key) {
			c.noteOffset(e.Origin, h.At.Sub(now))
		}
	}
	var answers []entry
	changed := false
	c.mu.Lock()
	for _, e := range kept {
		ch, ans := c.st.merge(e, now)
		changed = changed || ch
		answers = append(answers, ans...)
	}
	c.mu.Unlock()
	for _, e := range answers {
		c.send(e)
	}
	if changed {
		c.notify()
	}
}

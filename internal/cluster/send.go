package cluster

import (
	"encoding/json"
	"time"

	"github.com/hashicorp/memberlist"
)

// How entries travel (transport.go has the two transports; send, in
// write.go, queues what this member writes for the sender here).
//
// An agent's health goes straight to every gateway of its Join list, one
// UDP packet per gateway, coalesced for sendEvery: at once on a change,
// and every HeartbeatInterval the last value again under a new version
// (heartbeat), which is what keeps the node alive on the gateways. Nothing
// relays health: each gateway judges a node by what reaches it from the
// node, so a gateway a node cannot reach counts it dead, and no member
// can stretch another node's life by replaying it.
//
// Gateway state (sessions, affinity, routing counts, drains, bans) changes
// with every login and matters only to gateways. It goes straight to each
// live gateway of the gateways' pool in coalesced, sealed UDP packets, and
// every GatewaySyncInterval each gateway sends the gateway state it wrote
// since its previous sync (all of it every fullSyncEvery syncs) to the
// others over TCP, to repair losses. Push/pull in the gateways' pool
// carries all of it, so a restarted gateway gets the state back from
// whichever gateway it syncs with. With SinglePoolCompat, the same goes to
// the previous release's gateways over the old pool.

// sendEvery is how long direct sends are coalesced: long enough to fill
// packets and fold repeated writes of a key during a login burst, short
// next to the heartbeat.
const sendEvery = 20 * time.Millisecond

// fullSyncEvery: every this many gateway syncs sends everything; the others
// send what changed since the previous sync.
const fullSyncEvery = 15

// maxPacket bounds one direct message so it fits one UDP packet with
// memberlist's label, compression and encryption headers; larger entries
// travel by push/pull or gateway sync only.
const maxPacket = 1200

// Direct message tags (the first byte of a user message), which the
// delegates take apart (delegate.go).
const (
	// msgEntry carries one entry: a broadcast of the previous release's
	// agents (they still send them).
	msgEntry byte = 'E'
	// msgBatch carries a JSON array of entries in clear: an agent's
	// signed health.
	msgBatch byte = 'B'
	// msgSealed carries entries sealed with a gateway key (trust.go).
	msgSealed byte = 'S'
)

// heartbeat re-signs and sends an agent's last health every
// HeartbeatInterval: a new version each time, the node's proof of life.
func (c *Cluster) heartbeat() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.HeartbeatInterval)
	defer t.Stop()
	key := kindHealth + "/" + c.cfg.Name
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.mu.Lock()
		var e entry
		var err error
		cur := c.st.live(key)
		if cur != nil {
			e, err = c.st.put(key, cur.Val, c.now())
		}
		c.mu.Unlock()
		switch {
		case cur == nil:
			// Nothing measured yet: silence, so the node counts dead
			// rather than idle.
		case err != nil:
			c.log.Error("cluster: heartbeat", "err", err)
		default:
			c.send(e)
		}
	}
}

// sender flushes pending writes: an agent's to its gateways, a gateway's
// to the other gateways.
func (c *Cluster) sender() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		// Coalesce a burst of writes into few packets.
		select {
		case <-c.stop:
			return
		case <-time.After(sendEvery):
		}
		c.mu.Lock()
		es := make([]entry, 0, len(c.pending))
		for _, e := range c.pending {
			es = append(es, e)
		}
		clear(c.pending)
		targets := c.targets
		gws, legacy := c.peers()
		c.mu.Unlock()
		pkts := c.packets(es)
		if c.role == RoleAgent {
			for _, pkt := range pkts {
				for _, a := range targets {
					if err := c.agentPort.SendToAddress(a, pkt); err != nil {
						c.log.Debug("cluster: send health", "to", a.Addr, "err", err)
					}
				}
			}
			continue
		}
		for _, pkt := range pkts {
			c.eachPeer(gws, legacy, func(ml *memberlist.Memberlist, p *memberlist.Node) {
				if err := ml.SendBestEffort(p, pkt); err != nil {
					c.log.Debug("cluster: direct send", "to", p.Name, "err", err)
				}
			})
		}
	}
}

// peers copies the gateways to send gateway state to: the others of the
// gateways' pool, and the previous release's in the single pool that are
// not in it (SinglePoolCompat). mu held.
func (c *Cluster) peers() (gws, legacy []*memberlist.Node) {
	for _, n := range c.gateways {
		gws = append(gws, n)
	}
	for name, n := range c.legacy {
		if _, ok := c.alive[name]; !ok {
			legacy = append(legacy, n)
		}
	}
	return gws, legacy
}

// eachPeer calls f with each peer and the transport that reaches it.
func (c *Cluster) eachPeer(gws, legacy []*memberlist.Node, f func(*memberlist.Memberlist, *memberlist.Node)) {
	for _, p := range gws {
		f(c.gw, p)
	}
	for _, p := range legacy {
		f(c.agentPort, p)
	}
}

// packets encodes entries into direct messages that fit one UDP packet:
// sealed batches on a gateway with gateway keys, clear ones otherwise (an
// agent's own health, signed).
func (c *Cluster) packets(es []entry) [][]byte {
	if c.sealer == nil {
		return pack(es, maxPacket)
	}
	// Room for the seal: tag, key id, nonce, GCM tag and the batch's time.
	const sealOverhead = 1 + 4 + 12 + 16 + 32
	var out [][]byte
	for _, p := range pack(es, maxPacket-sealOverhead) {
		var group []entry
		if err := json.Unmarshal(p[1:], &group); err != nil {
			continue
		}
		msg, err := c.sealEntries(msgSealed, group)
		if err != nil {
			c.log.Error("cluster: seal", "err", err)
			continue
		}
		out = append(out, append([]byte{msgSealed}, msg...))
	}
	return out
}

// pack encodes entries into batch messages of at most limit bytes. An
// entry too large on its own is left to push/pull.
func pack(es []entry, limit int) [][]byte {
	var out [][]byte
	cur := []byte{msgBatch, '['}
	n := 0
	for _, e := range es {
		b, err := json.Marshal(e)
		if err != nil || len(b)+3 > limit {
			continue
		}
		if len(cur)+len(b)+2 > limit {
			out = append(out, append(cur, ']'))
			cur, n = []byte{msgBatch, '['}, 0
		}
		if n > 0 {
			cur = append(cur, ',')
		}
		cur = append(cur, b...)
		n++
	}
	if n > 0 {
		out = append(out, append(cur, ']'))
	}
	return out
}

// syncGateways sends gateway state to every other gateway over TCP: the
// entries this gateway wrote since the previous sync (with a margin) —
// repairing its own lost direct packets without echoing everybody else's —
// and all of it every fullSyncEvery syncs. Agents do not take part.
func (c *Cluster) syncGateways() {
	if c.role != RoleGateway {
		return
	}
	now := c.now()
	c.mu.Lock()
	full := c.syncs%fullSyncEvery == 0
	since := c.lastSync.Add(-time.Second)
	c.syncs++
	c.lastSync = now
	var es []entry
	for k, e := range c.st.entries {
		if !isHealth(k) && (full || (e.Origin == c.cfg.Name && !e.recv.Before(since))) {
			es = append(es, *e)
		}
	}
	gws, legacy := c.peers()
	c.mu.Unlock()
	if len(es) == 0 || len(gws)+len(legacy) == 0 {
		return
	}
	var msg []byte
	if c.sealer != nil {
		sealed, err := c.sealEntries(msgSealed, es)
		if err != nil {
			c.log.Error("cluster: seal gateway sync", "err", err)
			return
		}
		msg = append([]byte{msgSealed}, sealed...)
	} else {
		b, err := json.Marshal(es)
		if err != nil {
			c.log.Error("cluster: encode gateway sync", "err", err)
			return
		}
		msg = append([]byte{msgBatch}, b...)
	}
	c.eachPeer(gws, legacy, func(ml *memberlist.Memberlist, p *memberlist.Node) {
		select {
		case <-c.stop:
			return
		default:
		}
		if err := ml.SendReliable(p, msg); err != nil {
			c.log.Debug("cluster: gateway sync", "to", p.Name, "err", err)
		}
	})
}

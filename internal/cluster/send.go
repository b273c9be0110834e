package cluster

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// How entries travel. Health changes matter to every gateway and are few
// (one per node every few seconds), so they spread epidemically: queued as
// named broadcasts, piggybacked on memberlist's gossip, relayed by every
// member that learns something new. An epidemic leaves the odd member
// without an update until push/pull (tens of seconds on 50 members), and
// the members that must not miss one are the gateways, so an agent also
// sends its own health straight to every gateway. Gateway state (sessions, affinity,
// routing counts, drains, bans) changes with every login and matters only
// to gateways: relaying it through every agent would flood the gossip
// queues and starve health. It goes straight to each live gateway in
// coalesced UDP packets, and every GatewaySyncInterval each gateway sends
// its whole gateway state to the others over TCP to repair losses.
// Push/pull carries everything to every member, so a restarted gateway
// gets the state back from whichever member it syncs with.

// msgBatch tags a direct message carrying a JSON array of entries.
const msgBatch byte = 'B'

// sendEvery is how long direct sends are coalesced: long enough to fill
// packets and fold repeated writes of a key during a login burst, short
// next to the gossip interval.
const sendEvery = 20 * time.Millisecond

// fullSyncEvery: every this many gateway syncs sends everything; the others
// send what changed since the previous sync.
const fullSyncEvery = 15

// epidemic reports whether entries under key spread by gossip broadcast.
func epidemic(key string) bool {
	return strings.HasPrefix(key, kindHealth+"/")
}

// send distributes a local write or an answer. The caller must not hold mu.
func (c *Cluster) send(e entry) {
	if epidemic(e.Key) {
		c.broadcast(e)
		if e.Origin != c.cfg.Name {
			return // a relay: the origin already sent it to the gateways
		}
	}
	c.mu.Lock()
	c.pending[e.Key] = e // a newer write of the key replaces an unsent one
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// sender flushes pending gateway state to the other gateways.
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
		peers := c.peerGateways()
		c.mu.Unlock()
		if len(peers) == 0 {
			continue
		}
		for _, pkt := range c.packets(es) {
			for _, p := range peers {
				if err := c.ml.SendBestEffort(p, pkt); err != nil {
					c.log.Debug("cluster: direct send", "to", p.Name, "err", err)
				}
			}
		}
	}
}

// peerGateways copies the gateway list; mu held.
func (c *Cluster) peerGateways() []*memberlist.Node {
	out := make([]*memberlist.Node, 0, len(c.gateways))
	for _, n := range c.gateways {
		out = append(out, n)
	}
	return out
}

// packets encodes entries into direct messages that fit one UDP packet:
// sealed batches on a gateway with gateway keys, clear ones otherwise (an
// agent's own health, signed).
func (c *Cluster) packets(es []entry) [][]byte {
	if c.sealer == nil {
		return pack(es, maxBroadcast)
	}
	// Room for the seal: tag, key id, nonce, GCM tag and the batch's time.
	const sealOverhead = 1 + 4 + 12 + 16 + 32
	var out [][]byte
	for _, p := range pack(es, maxBroadcast-sealOverhead) {
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
		if !epidemic(k) && (full || (e.Origin == c.cfg.Name && !e.recv.Before(since))) {
			es = append(es, *e)
		}
	}
	peers := c.peerGateways()
	c.mu.Unlock()
	if len(es) == 0 || len(peers) == 0 {
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
	for _, p := range peers {
		select {
		case <-c.stop:
			return
		default:
		}
		if err := c.ml.SendReliable(p, msg); err != nil {
			c.log.Debug("cluster: gateway sync", "to", p.Name, "err", err)
		}
	}
}

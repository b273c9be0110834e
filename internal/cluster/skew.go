package cluster

import "time"

// How far other members' clocks are from ours.
//
// Nothing on a gateway's login path compares another member's wall clock
// with its own: a node's health is aged from its arrival on this member's
// monotonic clock (api.go, Nodes), and the hybrid clock restarts after our
// own clock steps back (state.go, rebase). Two checks do compare, because
// they must: the version clamp (MaxClockSkew, so nobody publishes a value
// no later write beats) and the sealed messages' replay window (sealMaxAge
// old, MaxClockSkew ahead). What a clock off costs there is the gateway
// state of the member whose clock is off, refused while it is off; it must
// never be silent. So every signed health and every sealed message says
// how far its sender's clock is from ours (its time minus our arrival
// time; the one-hop delay included): frontdoor_gossip_clock_offset_seconds
// by member, and a warning once a minute per member while the offset is
// beyond MaxClockSkew.

// maxOffsets bounds the members whose offset is kept: nodes come from the
// inventory, gateways from holders of the gateway keys, but the map must
// not grow without bound either way.
const maxOffsets = 1024

// noteOffset records member's clock offset (positive: ahead of ours) and
// warns when it is beyond MaxClockSkew. The caller must not hold mu.
func (c *Cluster) noteOffset(member string, off time.Duration) {
	if member == "" || member == c.cfg.Name {
		return
	}
	member = clip(member)
	now := c.now()
	beyond := off > c.cfg.MaxClockSkew || off < -c.cfg.MaxClockSkew
	c.mu.Lock()
	if c.offsets == nil {
		c.offsets = map[string]time.Duration{}
	}
	if _, ok := c.offsets[member]; !ok && len(c.offsets) >= maxOffsets {
		clear(c.offsets)
	}
	c.offsets[member] = off
	key := member + "\x00clock"
	last, seen := c.refusalLogged[key]
	log := beyond && (!seen || now.Sub(last) >= time.Minute)
	if log {
		c.refusalLogged[key] = now
	}
	c.mu.Unlock()
	if log {
		c.log.Warn("cluster: a member's clock is off from ours beyond max_clock_skew; its gateway state is refused while it is (logged once a minute)",
			"peer", member, "offset", off.Round(time.Millisecond).String(), "max_clock_skew", c.cfg.MaxClockSkew.String())
	}
}

// ClockOffsets returns how far each member's clock was from ours when its
// last signed health or sealed message arrived (positive: ahead).
func (c *Cluster) ClockOffsets() map[string]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]time.Duration, len(c.offsets))
	for k, v := range c.offsets {
		out[k] = v
	}
	return out
}

package cluster

import (
	"errors"
	"fmt"
	"time"
)

// Refusals: why an entry from a peer or from the locks file was not taken
// (a reason from a fixed vocabulary, the metric's label), counted by
// reason and logged at most once a minute per origin and reason; and the
// nodes whose own host key signed a lie, remembered for LiarPenalty.
// trust.go decides what is refused.

// refusal is why an entry was not taken.
type refusal struct {
	reason string // a metric label: short, fixed vocabulary
	detail string
}

func (r *refusal) Error() string { return r.reason + ": " + r.detail }

func refuse(reason, format string, args ...any) *refusal {
	return &refusal{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// Refusal reasons.
const (
	refusedMalformed  = "malformed"
	refusedFuture     = "version_ahead"
	refusedUnsealed   = "gateway_state_unsealed"
	refusedNotOwner   = "not_owner"
	refusedUnknown    = "unknown_node"
	refusedSignature  = "bad_signature"
	refusedHostKey    = "host_key"
	refusedAddrClaim  = "addr_mismatch"
	refusedPoolClaim  = "pool_mismatch"
	refusedImpossible = "impossible_health"
	refusedSealedOpen = "sealed_unreadable"
	// refusedClockSkew: a sealed message outside the replay window, its
	// sender's clock or ours off (skew.go).
	refusedClockSkew = "clock_skew"
	// refusedSealedAgentPort: gateway state arrived on the agent port,
	// from a gateway of the previous release, without SinglePoolCompat.
	refusedSealedAgentPort = "sealed_on_agent_port"
)

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// liar reports whether a refusal follows a verified signature: the node's
// own key signed it, nobody can forge it for another node.
func liar(reason string) bool {
	return reason == refusedAddrClaim || reason == refusedPoolClaim || reason == refusedImpossible
}

// noteRefusal counts and logs a refused entry.
func (c *Cluster) noteRefusal(e *entry, err error) {
	var r *refusal
	if !errors.As(err, &r) {
		r = &refusal{reason: refusedMalformed, detail: err.Error()}
	}
	now := c.now()
	key := clip(e.Origin) + "\x00" + r.reason
	c.mu.Lock()
	c.refusals[r.reason]++
	if liar(r.reason) {
		// Bounded by the inventory: only listed nodes get this far.
		if c.lied == nil {
			c.lied = map[string]time.Time{}
		}
		c.lied[e.Origin] = now
	}
	last, seen := c.refusalLogged[key]
	log := !seen || now.Sub(last) >= time.Minute
	if log {
		if len(c.refusalLogged) > 4096 {
			clear(c.refusalLogged)
		}
		c.refusalLogged[key] = now
	}
	c.mu.Unlock()
	if log {
		c.log.Warn("cluster: refused gossip entry (repeats are counted, logged once a minute)",
			"reason", r.reason, "origin", clip(e.Origin), "detail", r.detail)
	}
}

// LiedSince reports whether node's agent sent health signed with the
// node's host key that no real node could (another address or pool than
// the inventory's, impossible figures), at or after since.
func (c *Cluster) LiedSince(node string, since time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.liedSince(node, since)
}

// liedSince is LiedSince with mu held.
func (c *Cluster) liedSince(node string, since time.Time) bool {
	at, ok := c.lied[node]
	return ok && !at.Before(since)
}

// Refusals returns how many remote entries were refused, by reason.
func (c *Cluster) Refusals() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]uint64, len(c.refusals))
	for k, v := range c.refusals {
		out[k] = v
	}
	return out
}

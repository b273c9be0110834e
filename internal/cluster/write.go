package cluster

import (
	"fmt"
	"time"
)

// Local writes: what this member writes (an agent its health; a gateway
// its sessions and routing counts, and the admins' drains, bans, locks and
// second-factor unlocks) is stored under a new version of the hybrid clock
// (state.go) and queued, like the answers a merge owes its peers
// (delegate.go), for the next direct send, which the sender flushes
// (send.go).

// write stores a local value (nil deletes) and sends it. The caller must
// not hold mu.
func (c *Cluster) write(key string, val any) error {
	c.rebase()
	c.mu.Lock()
	e, err := c.st.put(key, val, c.now())
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("cluster: encode %s: %w", key, err)
	}
	c.send(e)
	return nil
}

// rebase restarts a gateway's hybrid clock after its wall clock stepped
// back (store.rebase), sends what it re-stamped, and says so: the step is
// the operator's to explain. Agents keep theirs: their only key is their
// own health, ordered against nothing but itself. The caller must not hold
// mu.
func (c *Cluster) rebase() {
	if c.role != RoleGateway {
		return
	}
	c.mu.Lock()
	re, ahead := c.st.rebase(c.now())
	c.mu.Unlock()
	if ahead == 0 {
		return
	}
	c.log.Warn("cluster: the wall clock stepped back; versions restarted from it, entries written while it was ahead re-stamped",
		"ahead", ahead.Round(time.Millisecond).String(), "restamped", len(re))
	for _, e := range re {
		c.send(e)
	}
}

// send queues a local write or an answer for the next direct send. The
// caller must not hold mu.
func (c *Cluster) send(e entry) {
	c.mu.Lock()
	c.pending[e.Key] = e // a newer write of the key replaces an unsent one
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

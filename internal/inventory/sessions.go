package inventory

import (
	"slices"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
)

// Session counts. The Router counts the live sessions of each user on each
// node — those this process relays (own) and, after an upgrade, those the
// previous process still relays until they end (inherited, reported by it
// over the handover channel) — and publishes their sum, the whole
// gateway's count, every time it changes. Counts, not starts and ends,
// travel: a count published again is the same count, so the channel to a
// successor, a rejoined cluster member and a republish after a failed
// handover all agree without replaying history.
//
// Where the sum goes (one place at a time, switched under the lock so no
// change is lost or sent twice):
//
//   - the gossip cluster (cluster.SetSessions): per-user caps and node
//     load on every gateway;
//   - without gossip, the static view: node load here;
//   - after HandOver, the function given: the handover channel to the new
//     process, which publishes them as inherited; Resume brings them back
//     if the new process failed.

// sessionKey is one user on one node.
type sessionKey struct{ user, node string }

// count changes one count of m (own or inherited) by delta and publishes
// the sum.
func (r *Router) count(m map[sessionKey]int, user, node string, delta int) {
	k := sessionKey{user, node}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m[k] += delta; m[k] <= 0 {
		delete(m, k)
	}
	r.publishLocked(k)
}

// publishLocked sends the sum of k's counts where counts go now. r.mu held;
// none of the destinations calls back into the router.
func (r *Router) publishLocked(k sessionKey) {
	n := r.own[k] + r.inherited[k]
	switch {
	case r.handedTo != nil:
		r.handedTo(k.user, k.node, n)
	case r.cl != nil:
		r.cl.SetSessions(k.user, k.node, n)
	default:
		r.static.set(k.user, k.node, n)
	}
}

// Inherit sets the live sessions of user on node that the previous
// process (the one this process took over from) still relays.
func (r *Router) Inherit(user, node string, n int) {
	k := sessionKey{user, node}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n <= 0 {
		delete(r.inherited, k)
	} else {
		r.inherited[k] = n
	}
	r.publishLocked(k)
}

// ForgetInherited drops every inherited session: the previous process has
// exited, and its sessions with it.
func (r *Router) ForgetInherited() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.inherited {
		delete(r.inherited, k)
		r.publishLocked(k)
	}
}

// SessionsInherited counts user's sessions in the previous process: the
// cluster counts them as this gateway's, so the session cap adds them here.
func (r *Router) SessionsInherited(user string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, c := range r.inherited {
		if k.user == user {
			n += c
		}
	}
	return n
}

// InheritedTotal counts every session of the previous process.
func (r *Router) InheritedTotal() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.inherited {
		n += c
	}
	return n
}

// Counts lists the gateway's live sessions (own and inherited) by user and
// node, sorted: what a member that takes over publishes from its start.
func (r *Router) Counts() []cluster.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.countsLocked()
}

func (r *Router) countsLocked() []cluster.Session {
	var out []cluster.Session
	for _, k := range r.keysLocked() {
		out = append(out, cluster.Session{User: k.user, Node: k.node, N: r.own[k] + r.inherited[k]})
	}
	return out
}

// keysLocked lists every key with a count, sorted. r.mu held.
func (r *Router) keysLocked() []sessionKey {
	var keys []sessionKey
	for k := range r.own {
		keys = append(keys, k)
	}
	for k := range r.inherited {
		if r.own[k] == 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b sessionKey) int {
		return strings.Compare(a.user+"\x00"+a.node, b.user+"\x00"+b.node)
	})
	return keys
}

// HandOver sends every later change of a count to to (called with the
// router's lock held: it must not block or call back) and returns the
// counts as they are at that moment: from here on the process that takes
// over publishes them. Nothing is published here any more until Resume.
func (r *Router) HandOver(to func(user, node string, n int)) []cluster.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handedTo = to
	return r.countsLocked()
}

// Resume takes publishing back after a handover that failed: through cl
// (a member started with startedWith, the Counts of a moment ago,
// replacing the one stopped for the handover) with gossip, to the static
// view without (cl nil). Every count that is or was in startedWith is
// published again: one that went to zero meanwhile too.
func (r *Router) Resume(cl *cluster.Cluster, startedWith []cluster.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handedTo = nil
	if r.probes != nil && cl != nil {
		r.cl = cl
		r.probes.cl.Store(cl)
	}
	if r.static != nil {
		r.static.clear() // counts that went to zero meanwhile were not published here
	}
	keys := r.keysLocked()
	for _, s := range startedWith {
		if k := (sessionKey{s.User, s.Node}); r.own[k]+r.inherited[k] == 0 {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		r.publishLocked(k)
	}
}

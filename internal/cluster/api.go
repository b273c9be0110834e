package cluster

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// PublishHealth sends this member's health to the gateways (agents) and
// makes it what the heartbeat repeats. The member name is the node name.
func (c *Cluster) PublishHealth(h Health) error {
	return c.write(kindHealth+"/"+c.cfg.Name, h)
}

// StartSession records a live session of user on node through this gateway
// and refreshes the user's affinity. Call the returned func (once; extra
// calls are ignored) when the session ends.
func (c *Cluster) StartSession(user, node string) (end func()) {
	c.addSession(user, node, func(n int) int { return n + 1 })
	var once sync.Once
	return func() { once.Do(func() { c.addSession(user, node, func(n int) int { return n - 1 }) }) }
}

// SetSessions publishes that this gateway holds n live sessions of user on
// node (0: none), and refreshes the user's affinity. A gateway that
// counts its sessions itself (and those it took over from the process it
// replaced) publishes the count rather than each start and end: a count
// set again is the same count, whatever order updates arrive in.
func (c *Cluster) SetSessions(user, node string, n int) {
	c.addSession(user, node, func(int) int { return n })
}

// addSession changes the count of user's sessions on node through this
// gateway to next(current).
func (c *Cluster) addSession(user, node string, next func(int) int) {
	key := kindSession + "/" + c.cfg.Name + "/" + node + "/" + user
	c.rebase()
	now := c.now()
	c.mu.Lock()
	var v sessionVal
	if e := c.st.live(key); e != nil {
		v, _ = decode[sessionVal](e)
	}
	v.N = max(next(v.N), 0)
	var val any = v
	if v.N == 0 {
		val = nil
	}
	se, err1 := c.st.put(key, val, now)
	ae, err2 := c.st.put(kindAffinity+"/"+user, affinityVal{Node: node, Seen: now}, now)
	c.mu.Unlock()
	if err1 == nil {
		c.send(se)
	}
	if err2 == nil {
		c.send(ae)
	}
}

// NoteRouted counts a login this gateway just sent to node. Every gateway
// adds it to route.Node.RecentlyRouted until the node's agent publishes a
// measurement taken after it (which then counts the session itself), or
// RoutedWindow passes.
func (c *Cluster) NoteRouted(node string) {
	now := c.now()
	c.mu.Lock()
	ts := append(c.routed[node], now)
	for len(ts) > 0 && (now.Sub(ts[0]) > c.cfg.RoutedWindow || len(ts) > maxRouted) {
		ts = ts[1:]
	}
	c.routed[node] = ts
	v := routedVal{Base: ts[0].UnixMilli(), D: make([]int64, len(ts))}
	for i, t := range ts {
		v.D[i] = t.UnixMilli() - v.Base
	}
	c.mu.Unlock()
	if err := c.write(kindRouted+"/"+c.cfg.Name+"/"+node, v); err != nil {
		c.log.Error("cluster: publish routed", "node", node, "err", err)
	}
}

// Drain sets or clears an admin drain of node, cluster-wide. A drain
// lapses after DrainTTL unless set again.
func (c *Cluster) Drain(node string, draining bool, by string) error {
	v := drainVal{Draining: draining, By: by}
	if draining {
		v.Until = c.now().Add(c.cfg.DrainTTL)
	}
	return c.write(kindDrain+"/"+node, v)
}

// Ban bans key (a user name or source address; the caller picks the
// namespace, e.g. "user:alice", "addr:192.0.2.1") until until, cluster-wide.
func (c *Cluster) Ban(key string, until time.Time, reason string) error {
	return c.write(kindBan+"/"+key, banVal{Until: until, Reason: reason})
}

// Unban lifts a ban.
func (c *Cluster) Unban(key string) error {
	return c.write(kindBan+"/"+key, nil)
}

// Banned reports whether key is banned now, and until when.
func (c *Cluster) Banned(key string) (until time.Time, ok bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.st.live(kindBan + "/" + key)
	if e == nil {
		return time.Time{}, false
	}
	v, ok := decode[banVal](e)
	if !ok || !now.Before(v.Until) {
		return time.Time{}, false
	}
	return v.Until, true
}

// Affinity returns where user's sessions are or last were, for
// route.Request.Affinity; nil if the cluster knows nothing of the user.
// The node with most live sessions wins; without live sessions, the node
// of the last session start or end.
func (c *Cluster) Affinity(user string) *route.Affinity {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := map[string]int{}
	for k, e := range c.st.userSess[user] {
		gw, node, _, _ := splitSessionKey(k)
		if !c.ownerAlive(gw) {
			continue
		}
		if v, ok := decode[sessionVal](e); ok && v.N > 0 {
			live[node] += v.N
		}
	}
	var a route.Affinity
	if e := c.st.live(kindAffinity + "/" + user); e != nil {
		if v, ok := decode[affinityVal](e); ok {
			a.Node, a.LastSeen = v.Node, v.Seen
		}
	}
	if len(live) > 0 {
		best := ""
		for n, k := range live {
			if best == "" || k > live[best] || (k == live[best] && n < best) {
				best = n
			}
		}
		if best != a.Node {
			a.LastSeen = time.Time{}
		}
		a.Node, a.Live = best, live[best]
	}
	if a.Node == "" {
		return nil
	}
	return &a
}

// Nodes returns the login nodes known from agents' health, combined with
// admin drains, recent routing decisions and the sessions the gateways
// know of, sorted by name: the input of route.Decide.
//
//   - Alive: a new version of the node's signed health arrived within
//     NodeDeadAfter. Nothing else: no membership, which any holder of the
//     gossip key could forge.
//   - HealthAt: when the figures were measured, on our clock
//     (measuredAt): the node's own measurement time while its clock
//     agrees with ours (within sameClock), else this version's arrival
//     less the measurement's age when the node sent it, which the node
//     counts on its own clock (a heartbeat repeats an old measurement
//     under a new version, and route.stale_after must still see it age).
//     So a node's clock off from ours never makes its health look stale
//     or fresh (skew.go). Health is never relayed (send.go): arrival is
//     the sending plus one hop.
//   - Sessions + RecentlyRouted: at least the node's own count plus the
//     logins routed since its measurement, and at least the live sessions
//     the gateways themselves hold there: a node cannot claim to be
//     emptier than the gateways saw it. Users likewise.
//   - Lied: the node's own key signed a lie within LiarPenalty.
func (c *Cluster) Nodes() []route.Node {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	routed := map[string][]int64{}
	drained := map[string]bool{}
	type hv struct {
		h    Health
		recv time.Time
		at   time.Time // measured, on our clock
	}
	health := map[string]hv{}
	for k, e := range c.st.byKind[kindHealth] {
		if h, ok := decode[Health](e); ok {
			health[strings.TrimPrefix(k, kindHealth+"/")] = hv{h, e.recv, measuredAt(h.At, e)}
		}
	}
	for k, e := range c.st.byKind[kindRouted] {
		gw, node, _ := strings.Cut(strings.TrimPrefix(k, kindRouted+"/"), "/")
		if v, ok := decode[routedVal](e); ok && c.ownerAlive(gw) {
			for _, d := range v.D {
				routed[node] = append(routed[node], v.Base+d)
			}
		}
	}
	for k, e := range c.st.byKind[kindDrain] {
		if v, ok := decode[drainVal](e); ok && v.Draining {
			drained[strings.TrimPrefix(k, kindDrain+"/")] = true
		}
	}
	observed := c.sessionsByNode()
	out := make([]route.Node, 0, len(health))
	for name, x := range health {
		h := x.h
		if c.inv != nil {
			// Where the node is and which pool it serves is the
			// inventory's word, never the agent's.
			n, ok := c.inv.Node(name)
			if !ok {
				continue
			}
			h.Addr, h.Pool = n.Addr, n.Pool
		}
		at := x.at
		// Logins routed after the measurement are not in h.Sessions yet.
		since := max(at.UnixMilli(), now.Add(-c.cfg.RoutedWindow).UnixMilli())
		recent := 0
		for _, t := range routed[name] {
			if t >= since {
				recent++
			}
		}
		seen := observed[name]
		out = append(out, route.Node{
			Node:           node.Node{Name: name, Addr: h.Addr, Pool: h.Pool},
			Alive:          now.Sub(x.recv) <= c.cfg.NodeDeadAfter,
			SSHDUp:         h.SSHDUp,
			Draining:       h.Draining || drained[name],
			HealthAt:       at,
			Sessions:       max(route.ClampCount(h.Sessions), seen.sessions-recent),
			MaxSessions:    route.ClampCount(h.MaxSessions),
			Users:          max(route.ClampCount(h.Users), len(seen.users)),
			Load1:          h.Load1,
			CPUs:           route.ClampCPUs(h.CPUs),
			MemAvailFrac:   h.MemAvailFrac,
			CPUPressure:    h.CPUPressure,
			MemPressure:    h.MemPressure,
			RecentlyRouted: recent,
			Lied:           c.liedSince(name, now.Add(-c.cfg.LiarPenalty)),
		})
	}
	slices.SortFunc(out, func(a, b route.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// sameClock is how far a node's clock may be from ours (its version's
// time against the arrival) and still be taken as agreeing: the one hop,
// with room for a loaded machine.
const sameClock = time.Second

// measuredAt is when health measured at (the node's clock) was measured,
// on our clock (see Nodes): the node's own time while its clock agrees
// with ours, else the arrival less the measurement's age as the node
// counts it (version time less measurement time, both its clock). Either
// way as an offset from the arrival, so that it keeps the arrival's
// monotonic reading: a later step of our wall clock must not age it.
func measuredAt(at time.Time, e *entry) time.Time {
	sent := time.Unix(0, int64(min(e.Ver, math.MaxInt64)))
	age := sent.Sub(at) // on the node's clock
	if off := e.recv.Sub(sent); off > -sameClock && off < sameClock {
		age = e.recv.Sub(at) // on ours: the same clock
	}
	return e.recv.Add(-max(age, 0)) // never ahead of its arrival
}

// observedNode is what the live gateways hold on one node.
type observedNode struct {
	sessions int
	users    map[string]bool
}

// sessionsByNode counts the live sessions every live gateway holds, by
// node. mu held.
func (c *Cluster) sessionsByNode() map[string]observedNode {
	out := map[string]observedNode{}
	for k, e := range c.st.byKind[kindSession] {
		gw, node, user, ok := splitSessionKey(k)
		if !ok || !c.ownerAlive(gw) {
			continue
		}
		if v, ok := decode[sessionVal](e); ok && v.N > 0 {
			o := out[node]
			if o.users == nil {
				o.users = map[string]bool{}
			}
			o.sessions += v.N
			o.users[user] = true
			out[node] = o
		}
	}
	return out
}

// AgentActiveSince reports whether node's agent speaks for the node: a new
// version of its signed health arrived at or after since, or it lied
// within LiarPenalty. Either way nobody else may stand in for it (the
// gateway's banner probe of nodes without an agent): an agent that is
// there but cannot measure, or lies, says something is wrong on the node,
// and one that falls silent is dead until since has passed.
func (c *Cluster) AgentActiveSince(node string, since time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.liedSince(node, c.now().Add(-c.cfg.LiarPenalty)) {
		return true
	}
	e := c.st.live(kindHealth + "/" + node)
	return e != nil && !e.recv.Before(since)
}

// NodeWarnings returns the warnings each node's agent raised in its last
// health (Warn*; unknown codes dropped), for `frontdoor nodes` and the
// frontdoor_node_warning metric. Nodes without warnings are left out.
func (c *Cluster) NodeWarnings() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]string{}
	for k, e := range c.st.byKind[kindHealth] {
		if h, ok := decode[Health](e); ok {
			if ws := knownWarningsOf(h.Warnings); len(ws) > 0 {
				out[strings.TrimPrefix(k, kindHealth+"/")] = ws
			}
		}
	}
	return out
}

// SessionsElsewhere counts user's live sessions through the other live
// gateways (this gateway counts its own exactly): with it a session cap
// holds across gateways, up to the propagation delay.
func (c *Cluster) SessionsElsewhere(user string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, e := range c.st.userSess[user] {
		gw, _, _, _ := splitSessionKey(k)
		if gw == c.cfg.Name || !c.ownerAlive(gw) {
			continue
		}
		if v, ok := decode[sessionVal](e); ok && v.N > 0 {
			n += v.N
		}
	}
	return n
}

// SessionsOn counts the live sessions every live gateway has on node, for
// nodes without an agent to count them.
func (c *Cluster) SessionsOn(node string) (sessions, users int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.sessionsByNode()[node]
	return o.sessions, len(o.users)
}

// Session is one gateway's live sessions of a user on a node.
type Session struct {
	Gateway, Node, User string
	N                   int
}

// Sessions lists the live sessions of every live gateway, for
// `frontdoor sessions`, sorted by user, node, gateway.
func (c *Cluster) Sessions() []Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Session
	for k, e := range c.st.byKind[kindSession] {
		gw, node, user, ok := splitSessionKey(k)
		if v, vok := decode[sessionVal](e); ok && vok && c.ownerAlive(gw) && v.N > 0 {
			out = append(out, Session{Gateway: gw, Node: node, User: user, N: v.N})
		}
	}
	slices.SortFunc(out, func(a, b Session) int {
		return strings.Compare(a.User+"\x00"+a.Node+"\x00"+a.Gateway, b.User+"\x00"+b.Node+"\x00"+b.Gateway)
	})
	return out
}

// HealthOf returns the last health node published, for `frontdoor nodes`.
func (c *Cluster) HealthOf(node string) (Health, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.st.live(kindHealth + "/" + node)
	if e == nil {
		return Health{}, false
	}
	return decode[Health](e)
}

// ownerAlive reports whether the gateway owning a session or routing entry
// is a live member of the gateways' pool (with SinglePoolCompat, or of the
// previous release's single pool): a crashed gateway's sessions died with
// it. No agent can speak in the gateways' pool, so none can make a
// gateway's sessions stop counting. mu held.
func (c *Cluster) ownerAlive(gw string) bool {
	if _, ok := c.alive[gw]; ok || gw == c.cfg.Name {
		return true
	}
	_, ok := c.legacy[gw]
	return ok && c.cfg.SinglePoolCompat
}

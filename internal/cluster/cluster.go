// Package cluster keeps the state the gateways and the login-node agents
// share: node health, live sessions, user→node affinity, admin drains and
// bans. There is no central store: every gateway holds the state.
//
// # Who can say what, and how it travels
//
// Agents run on login nodes, where users have shells and root may be lost,
// and every agent holds the gossip key (secret_keys). A memberlist pool
// authenticates the pool, not the member: any key holder can put a SWIM
// "dead" for any member on the wire with the highest incarnation, and the
// member's rebuttal loses. So nothing here takes liveness, of a node or of
// a gateway, from a pool an agent can speak in:
//
//   - Gateways gossip among themselves in a pool of their own on
//     GatewayPort, encrypted with keys derived from gateway_keys, which
//     agents never hold. An agent can neither join it nor put a packet in
//     it that a gateway decrypts. Gateway liveness (whose sessions still
//     count, whom to send state to) is that pool's SWIM, which only a
//     gateway can speak in. Gateway state (sessions, routing counts,
//     affinity, drains, bans) travels in it, sealed besides (trust.go).
//   - Agents are in no pool. An agent sends its health, signed with the
//     node's SSH host key, straight to every gateway listed in its Join,
//     on each gateway's BindPort (encrypted with secret_keys, which keeps
//     outsiders out and proves nothing else), at once on a change and
//     every HeartbeatInterval regardless, each time as a new version. A
//     gateway counts a node alive while new versions keep arriving
//     (NodeDeadAfter) and out when they stop; its health is fresh while
//     its measurement is (route.stale_after). Only the node's host key
//     makes a new version (trust.go), so another agent can neither kill a
//     live node nor keep a dead one alive: the strongest thing a rogue
//     agent can do to another node is to drop its packets on the wire,
//     which a network attacker could do anyway.
//   - What a node claims about itself is bounded: figures outside what a
//     machine can report are refused and the node is remembered as lying
//     (LiarPenalty), and the gateways weigh the sessions they routed there
//     themselves above the node's count (Nodes).
//
// A pool of the agents' own (each agent a member, gateways too) was the
// alternative. It would spread health epidemically, but its membership
// would still be forgeable by any agent, so it could carry nothing but
// signed health, and a forged "dead" for a gateway would stop the agents
// sending to it; its probes and gossip cost O(members) packets a second on
// every member, against one packet per agent per gateway per heartbeat
// here. The BindPort listener is still a memberlist instance (the same
// wire format as before), so agents of the previous release, which gossip
// on it, are still heard.
//
// Costs, measured with bench/gossip (50 agents, 3 gateways, loopback;
// BENCHMARKS.md): health reaches every gateway in one UDP packet each (p99
// 43 ms); each gateway receives agents/HeartbeatInterval packets a second
// plus changes and verifies one signature per packet; the whole cluster
// sent 156 packets/s (62 kB/s) and used 0.10 cores at rest, against 2280
// packets/s and 1.04 cores for the single pool at the same 1 s freshness;
// a crashed node was out after 3.98–4.03 s.
//
// # Upgrading from the single pool
//
// Releases before this one put every gateway and agent in one pool on
// BindPort. A rolling upgrade, no flag day:
//
//  1. Agents of the old release publish only every `interval` (5 s by
//     default): set `interval: 1s` in their config first (the old release
//     takes it), or node_dead_after to 3 × their interval meanwhile.
//  2. Open GatewayPort between the gateways. Upgrade the gateways one by
//     one with single_pool_compat: true: an upgraded gateway joins the
//     gateways' pool and stays in the old pool, where the old gateways
//     and agents still find it (it keeps the role "gateway" there), takes
//     the old agents' signed health from it, and exchanges the sealed
//     gateway state with the old gateways over it.
//  3. Once every gateway runs this release, remove single_pool_compat
//     (restart them one by one).
//  4. Upgrade the agents, in any order: an upgraded agent sends to its
//     Join list (the same gateways' BindPort) and stops answering the old
//     pool. Gateways must go first: a gateway of the old release takes an
//     upgraded agent, no longer a member, for dead.
//
// What a gateway calls:
//
//	c, err := cluster.Start(ctx, cfg, cluster.Options{Role: cluster.RoleGateway, Logger: log, Inventory: inv})
//	defer c.Close()
//	d, err := route.Decide(route.Request{User: u, Pools: pools, Explicit: node,
//		Affinity: c.Affinity(u), Now: time.Now()}, c.Nodes(), routeCfg, rnd)
//	c.NoteRouted(d.Order[0])          // before dialling, so other gateways see it
//	end := c.StartSession(u, node)     // once the backend session is up
//	defer end()
//
// See start.go for a member's life, state.go for the merge rules, send.go
// for how entries travel, trust.go for who may write what, transport.go
// for the two transports.
package cluster

import (
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"golang.org/x/crypto/ssh"
)

// Cluster is this process's view of the cluster and its copy of the shared
// state. All methods are safe for concurrent use.
type Cluster struct {
	cfg  Config
	role Role
	log  *slog.Logger
	now  func() time.Time
	meta []byte
	// gw is the gateways' pool (gateways only); agentPort is where agents
	// send health (on a gateway) or where an agent sends from. See
	// transport.go.
	gw        *memberlist.Memberlist
	agentPort *memberlist.Memberlist
	// keyring is the agent port's (secret_keys); nil when insecure.
	keyring *memberlist.Keyring
	// sealer seals gateway state (gateways; nil when insecure; seal.go),
	// hostKey signs health (agents), inv judges health (gateways). See
	// trust.go.
	sealer  *sealer
	hostKey ssh.Signer
	inv     Inventory

	changed   chan struct{}
	kick      chan struct{} // pending has entries
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	// mu protects the following. It is never held while calling into
	// memberlist: memberlist calls our delegates with its own locks held.
	mu sync.Mutex
	st *store
	// alive are the live members of the gateways' pool (gateways only),
	// this gateway included; gateways the other gateways of it.
	alive    map[string]Member
	gateways map[string]*memberlist.Node
	// legacy are gateways of the previous release, seen in the old shared
	// pool on the agent port (SinglePoolCompat only); poolMembers are that
	// pool's members' addresses by name.
	legacy      map[string]*memberlist.Node
	poolMembers map[string]string
	// targets are the gateways an agent sends to (its Join, resolved).
	targets  []memberlist.Address
	routed   map[string][]time.Time // node → when this gateway routed there, oldest first
	pending  map[string]entry       // writes waiting for the next direct send
	syncs    int                    // gateway syncs done
	lastSync time.Time              // when the last one started
	// refusals counts refused remote entries by reason; refusalLogged
	// rate-limits their log lines per origin and reason.
	refusals      map[string]uint64
	refusalLogged map[string]time.Time
	// lied is when a node last sent health signed with its own host key
	// that no real node could send (trust.go, refusal.go).
	lied map[string]time.Time
	// offsets are how far each member's clock is from ours (skew.go).
	offsets map[string]time.Duration

	// locks keeps the locks file (lockfile.go); nil on agents and
	// without LocksFile.
	locks *lockBook
}

// lockBook persists the lock entries of a gateway (lockfile.go).
type lockBook struct {
	path string
	kick chan struct{}
	last []byte // what the file holds now
	// sum fingerprints the lock entries last written (their count and
	// versions): any other change to the gateway state kicks too, and
	// most change no lock.
	sum [2]uint64
}

// LocalAddr is where agents send their health (a gateway's BindPort) or
// where an agent's packets leave from, host:port.
func (c *Cluster) LocalAddr() string {
	return c.agentPort.LocalNode().Address()
}

// GatewayAddr is the gateways' pool address of this gateway (what other
// gateways list in gateway_join), host:port; "" on an agent.
func (c *Cluster) GatewayAddr() string {
	if c.gw == nil {
		return ""
	}
	return c.gw.LocalNode().Address()
}

// Name is this member's name.
func (c *Cluster) Name() string { return c.cfg.Name }

// Keyring exposes the agent port's live keyring (secret_keys) for rotation
// at runtime (see Config). Nil when the cluster runs insecure.
func (c *Cluster) Keyring() *memberlist.Keyring {
	return c.keyring
}

// Members lists the live members of the gateways' pool (suspect members
// included until declared dead), this gateway included, sorted by name;
// nil on an agent.
func (c *Cluster) Members() []Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Member, 0, len(c.alive))
	for _, m := range c.alive {
		out = append(out, m)
	}
	sortMembers(out)
	return out
}

// Changed is signalled (without blocking; coalesced) whenever state from a
// peer changed something. Optional: for watchers such as the admin API.
func (c *Cluster) Changed() <-chan struct{} { return c.changed }

func (c *Cluster) notify() {
	c.locksChanged()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// locksChanged has the locks file follow the lock entries (soon, from
// persistLocks in lockfile.go).
func (c *Cluster) locksChanged() {
	if c.locks == nil {
		return
	}
	select {
	case c.locks.kick <- struct{}{}:
	default:
	}
}

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
// See state.go for the merge rules, send.go for how entries travel,
// trust.go for who may write what, transport.go for the two transports.
package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"golang.org/x/crypto/ssh"
)

// Role is what a member is.
type Role string

const (
	RoleGateway Role = "gateway"
	RoleAgent   Role = "agent"
)

// Options are the non-configuration inputs of Start.
type Options struct {
	Role   Role
	Logger *slog.Logger // nil discards
	// Meta is extra node metadata (pool, version) a gateway shows the
	// other gateways. It is dropped, with a warning, if it would push the
	// node meta over memberlist's 512 bytes.
	Meta map[string]string
	// Now is the clock; nil means time.Now. Tests inject it.
	Now func() time.Time
	// HostKey is the login node's SSH host key, which signs the agent's
	// health. Required on agents unless the cluster is insecure.
	HostKey ssh.Signer
	// Inventory lists the login nodes a gateway takes health for.
	// Required on gateways unless the cluster is insecure.
	Inventory Inventory
}

// Member is one member of the gateways' pool as this gateway sees it.
type Member struct {
	Name string
	Addr string // gossip address host:port
	Role Role
	Meta map[string]string
}

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
	// sealer seals gateway state (gateways; nil when insecure), hostKey
	// signs health (agents), inv judges health (gateways). See trust.go.
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
	// that no real node could send (trust.go).
	lied map[string]time.Time
}

// Start binds the transports, joins the other gateways (retrying in the
// background while any is missing) and returns the running member. ctx
// bounds the first join only. Call Close to leave.
func Start(ctx context.Context, cfg Config, opt Options) (*Cluster, error) {
	if err := cfg.ValidateFor(opt.Role); err != nil {
		return nil, err
	}
	if !cfg.Insecure {
		switch {
		case opt.Role == RoleAgent && opt.HostKey == nil:
			return nil, errors.New("cluster: an agent needs the node's host key to sign its health")
		case opt.Role == RoleGateway && opt.Inventory == nil:
			return nil, errors.New("cluster: a gateway needs its node inventory to judge health")
		}
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	c := &Cluster{
		cfg:      cfg,
		role:     opt.Role,
		log:      opt.Logger.With("component", "cluster", "member", cfg.Name),
		now:      opt.Now,
		changed:  make(chan struct{}, 1),
		stop:     make(chan struct{}),
		st:       newStore(cfg.Name, cfg),
		alive:    make(map[string]Member),
		gateways: make(map[string]*memberlist.Node),
		legacy:   make(map[string]*memberlist.Node),

		poolMembers: make(map[string]string),
		routed:      make(map[string][]time.Time),
		pending:     make(map[string]entry),
		kick:        make(chan struct{}, 1),
		hostKey:     opt.HostKey,
		inv:         opt.Inventory,

		refusals:      make(map[string]uint64),
		refusalLogged: make(map[string]time.Time),
	}
	if opt.Role == RoleAgent {
		c.st.sign = c.signHealth
	}
	if opt.Role == RoleGateway && len(cfg.GatewayKeys) > 0 {
		keys, err := decodeKeys("gateway_keys", cfg.GatewayKeys)
		if err != nil {
			return nil, err
		}
		if c.sealer, err = newSealer(keys); err != nil {
			return nil, fmt.Errorf("cluster: gateway keys: %w", err)
		}
	}
	c.meta = encodeMeta(opt.Role, opt.Meta, memberlist.MetaMaxSize, c.log)
	if err := c.startTransports(); err != nil {
		return nil, err
	}
	switch opt.Role {
	case RoleGateway:
		if seeds := cfg.gatewaySeeds(); len(seeds) > 0 {
			if err := c.join(ctx, c.gw, seeds); err != nil {
				c.log.Warn("cluster: joining the other gateways failed; retrying in background", "err", err)
			}
		}
		if cfg.SinglePoolCompat && len(cfg.Join) > 0 {
			if err := c.join(ctx, c.agentPort, cfg.Join); err != nil {
				c.log.Warn("cluster: joining the single pool of the previous release failed; retrying in background", "err", err)
			}
		}
	case RoleAgent:
		c.resolveTargets(ctx)
	}
	c.wg.Add(2)
	go c.loop()
	go c.sender()
	if opt.Role == RoleAgent {
		c.wg.Add(1)
		go c.heartbeat()
	}
	return c, nil
}

// join contacts the seeds on ml; memberlist's Join cannot be cancelled, so
// ctx only stops us from starting it.
func (c *Cluster) join(ctx context.Context, ml *memberlist.Memberlist, seeds []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n, err := ml.Join(seeds)
	if n == 0 && err != nil {
		return fmt.Errorf("cluster: join %v: %w", seeds, err)
	}
	return nil
}

// missingSeeds returns the seeds whose address is not in live (addresses
// of live members, from our own tables: memberlist's Members() hands out
// nodes it keeps changing under its own lock). Seeds that do not resolve
// are retried.
func missingSeeds(live map[string]bool, seeds []string) []string {
	var missing []string
	for _, seed := range seeds {
		a, err := net.ResolveTCPAddr("tcp", seed)
		if err != nil || !live[net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))] {
			missing = append(missing, seed)
		}
	}
	return missing
}

// loop expires state, rejoins missing gateways, syncs gateway state and
// re-resolves an agent's gateways, until Close.
func (c *Cluster) loop() {
	defer c.wg.Done()
	gc := time.NewTicker(5 * time.Second)
	defer gc.Stop()
	rejoin := time.NewTicker(c.cfg.RejoinInterval)
	defer rejoin.Stop()
	gwSync := time.NewTicker(c.cfg.GatewaySyncInterval)
	defer gwSync.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-gwSync.C:
			c.syncGateways()
		case <-gc.C:
			c.mu.Lock()
			c.st.gc(c.now(), c.ownerAlive)
			c.mu.Unlock()
		case <-rejoin.C:
			c.rejoin()
		}
	}
}

// rejoin joins every gateway seed that is not a live member, not only
// when alone: memberlist never contacts a member it declared dead, so
// gateways that all restarted would otherwise stay split for good. One
// push/pull per missing seed per interval, only while a seed is missing.
// An agent re-resolves its gateways instead.
func (c *Cluster) rejoin() {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RejoinInterval)
	defer cancel()
	if c.role == RoleAgent {
		c.resolveTargets(ctx)
		return
	}
	c.mu.Lock()
	gwLive, poolLive := map[string]bool{}, map[string]bool{}
	for _, m := range c.alive {
		gwLive[m.Addr] = true
	}
	for _, addr := range c.poolMembers {
		poolLive[addr] = true
	}
	c.mu.Unlock()
	if seeds := missingSeeds(gwLive, c.cfg.gatewaySeeds()); len(seeds) > 0 {
		if err := c.join(ctx, c.gw, seeds); err != nil {
			c.log.Debug("cluster: rejoin failed", "seeds", seeds, "err", err)
		}
	}
	if c.cfg.SinglePoolCompat {
		if seeds := missingSeeds(poolLive, c.cfg.Join); len(seeds) > 0 {
			if err := c.join(ctx, c.agentPort, seeds); err != nil {
				c.log.Debug("cluster: rejoin of the single pool failed", "seeds", seeds, "err", err)
			}
		}
	}
}

// Close leaves the cluster (telling the other gateways, so they drop us at
// once rather than after a suspicion timeout) and stops every goroutine.
func (c *Cluster) Close() error { return c.close(true) }

// Crash stops the member without telling anyone, as a kill -9 would: the
// gateways find out through failure detection (a gateway) or missing
// heartbeats (an agent). For tests and benchmarks.
func (c *Cluster) Crash() error { return c.close(false) }

// close stops the member; without leave it vanishes as if it crashed.
func (c *Cluster) close(leave bool) error {
	var errs []error
	c.closeOnce.Do(func() {
		close(c.stop)
		c.wg.Wait()
		for _, ml := range []*memberlist.Memberlist{c.gw, c.agentPort} {
			if ml == nil {
				continue
			}
			if leave {
				if err := ml.Leave(time.Second); err != nil {
					c.log.Debug("cluster leave", "err", err)
				}
			}
			if err := ml.Shutdown(); err != nil {
				errs = append(errs, fmt.Errorf("cluster: shutdown: %w", err))
			}
		}
	})
	return errors.Join(errs...)
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
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// write stores a local value (nil deletes) and sends it. The caller must
// not hold mu.
func (c *Cluster) write(key string, val any) error {
	c.mu.Lock()
	e, err := c.st.put(key, val, c.now())
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("cluster: encode %s: %w", key, err)
	}
	c.send(e)
	return nil
}

// logWriter turns memberlist's "[LEVEL] memberlist: ..." lines into slog.
// Warnings and errors are limited to logBurst a logWindow, the rest
// counted in one line: memberlist logs every packet it refuses (a wrong
// key or label) at error level, so anyone who can send the gateways a
// packet could otherwise flood their log.
type logWriter struct {
	log *slog.Logger

	mu         sync.Mutex // mu protects the following
	window     time.Time  // start of the current window
	n          int        // lines logged in it
	suppressed int        // lines dropped in it
}

const (
	logWindow = 10 * time.Second
	logBurst  = 20
)

func (w *logWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	lvl := slog.LevelDebug
	switch {
	case bytes.HasPrefix(p, []byte("[ERR]")):
		lvl = slog.LevelError
	case bytes.HasPrefix(p, []byte("[WARN]")):
		lvl = slog.LevelWarn
	}
	if lvl > slog.LevelDebug {
		now := time.Now()
		w.mu.Lock()
		if now.Sub(w.window) >= logWindow {
			if w.suppressed > 0 {
				w.log.Warn("cluster: memberlist warnings and errors suppressed", "count", w.suppressed, "window", logWindow)
			}
			w.window, w.n, w.suppressed = now, 0, 0
		}
		w.n++
		drop := w.n > logBurst
		if drop {
			w.suppressed++
		}
		w.mu.Unlock()
		if drop {
			return len(p), nil
		}
	}
	w.log.Log(context.Background(), lvl, line)
	return len(p), nil
}

// Package cluster joins gateways and login-node agents into one
// hashicorp/memberlist gossip cluster and keeps the state they share: node
// health, live sessions, user→node affinity, admin drains and bans.
//
// There is no central store: every member holds the state, health travels
// as one-packet named gossip broadcasts (and straight to the gateways),
// gateway state goes straight to the other gateways, and periodic TCP
// push/pull and gateway syncs repair anything lost. See state.go for the
// merge rules and send.go for how entries travel.
//
// What a gateway calls:
//
//	c, err := cluster.Start(ctx, cfg, cluster.Options{Role: cluster.RoleGateway, Logger: log})
//	defer c.Close()
//	d, err := route.Decide(route.Request{User: u, Pools: pools, Explicit: node,
//		Affinity: c.Affinity(u), Now: time.Now()}, c.Nodes(), routeCfg, rnd)
//	c.NoteRouted(d.Order[0])          // before dialling, so other gateways see it
//	end := c.StartSession(u, node)     // once the backend session is up
//	defer end()
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
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
	// Meta is extra node metadata (pool, version). It is dropped, with a
	// warning, if it would push the node meta over memberlist's 512 bytes.
	Meta map[string]string
	// Now is the clock; nil means time.Now. Tests inject it.
	Now func() time.Time
	// HostKey is the login node's SSH host key, which signs the agent's
	// health. Required on agents unless the cluster is insecure.
	HostKey ssh.Signer
	// Inventory lists the login nodes a gateway takes health for.
	// Required on gateways unless the cluster is insecure.
	Inventory Inventory
	// Sessions are live sessions a gateway holds from its start: those of
	// the process it takes over from (an upgrade, which hands the gossip
	// port and the member name over). They are entered before the ports
	// are bound, so the first exchange with a peer re-asserts them above
	// the previous process's versions instead of clearing them as ghosts
	// of a crash (state.go). Gateway is ignored: they are this member's.
	Sessions []Session
}

// Member is one member of the gossip cluster as this member sees it.
type Member struct {
	Name string
	Addr string // gossip address host:port
	Role Role
	Meta map[string]string
}

// Cluster is this process's membership and its copy of the shared state.
// All methods are safe for concurrent use.
type Cluster struct {
	cfg  Config
	role Role
	log  *slog.Logger
	now  func() time.Time
	meta []byte
	ml   *memberlist.Memberlist
	// keyring is the one memberlist encrypts with; nil when insecure.
	keyring *memberlist.Keyring
	queue   *memberlist.TransmitLimitedQueue
	// sealer seals gateway state (gateways; nil when insecure), hostKey
	// signs health (agents), inv judges health (gateways). See trust.go.
	sealer  *sealer
	hostKey ssh.Signer
	inv     Inventory

	numMembers atomic.Int32
	changed    chan struct{}
	kick       chan struct{} // pending has entries
	stop       chan struct{}
	wg         sync.WaitGroup
	closeOnce  sync.Once

	// mu protects the following. It is never held while calling into
	// memberlist: memberlist calls our delegates with its own locks held.
	mu       sync.Mutex
	st       *store
	alive    map[string]Member
	gateways map[string]*memberlist.Node // live gateways other than us, by name
	routed   map[string][]time.Time      // node → when this gateway routed there, oldest first
	pending  map[string]entry            // gateway state waiting for the next direct send
	syncs    int                         // gateway syncs done
	lastSync time.Time                   // when the last one started
	// refusals counts refused remote entries by reason; refusalLogged
	// rate-limits their log lines per origin and reason.
	refusals      map[string]uint64
	refusalLogged map[string]time.Time
	// lied is when a node last sent health signed with its own host key
	// that claimed another address or pool than the inventory's.
	lied map[string]time.Time
}

// maxBroadcast bounds one broadcast so it fits one UDP packet with
// memberlist's compound and label headers; larger entries travel by
// push/pull only.
const maxBroadcast = 1200

// msgEntry tags a broadcast carrying one entry.
const msgEntry byte = 'E'

// Start binds the gossip ports, joins cfg.Join (retrying in the background
// while alone) and returns the running member. ctx bounds the first join
// only. Call Close to leave.
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
		routed:   make(map[string][]time.Time),
		pending:  make(map[string]entry),
		kick:     make(chan struct{}, 1),
		hostKey:  opt.HostKey,
		inv:      opt.Inventory,

		refusals:      make(map[string]uint64),
		refusalLogged: make(map[string]time.Time),
	}
	if opt.Role == RoleAgent {
		c.st.sign = c.signHealth
	}
	for _, s := range opt.Sessions {
		c.SetSessions(s.User, s.Node, s.N)
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
	c.queue = &memberlist.TransmitLimitedQueue{
		NumNodes:       func() int { return int(max(c.numMembers.Load(), 1)) },
		RetransmitMult: cfg.RetransmitMult,
	}
	mc, err := cfg.memberlistConfig()
	if err != nil {
		return nil, err
	}
	c.keyring = mc.Keyring
	d := &delegate{c: c}
	mc.Delegate = d
	mc.Events = d
	mc.Logger = log.New(&logWriter{log: c.log}, "", 0)
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("cluster: start %s on %s:%d: %w", cfg.Name, cfg.BindAddr, cfg.BindPort, err)
	}
	c.ml = ml
	if len(cfg.Join) > 0 {
		if err := c.join(ctx, cfg.Join); err != nil {
			c.log.Warn("cluster join failed; retrying in background", "err", err)
		}
	}
	c.wg.Add(2)
	go c.loop()
	go c.sender()
	return c, nil
}

// join contacts the seeds; memberlist's Join cannot be cancelled, so ctx
// only stops us from starting it.
func (c *Cluster) join(ctx context.Context, seeds []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n, err := c.ml.Join(seeds)
	if n == 0 && err != nil {
		return fmt.Errorf("cluster: join %v: %w", seeds, err)
	}
	return nil
}

// missingSeeds returns the configured seeds that are not live members
// (this member itself excluded). Seeds that do not resolve are retried.
func (c *Cluster) missingSeeds() []string {
	if len(c.cfg.Join) == 0 {
		return nil
	}
	// From our own member table (copied under c.mu): memberlist's Members()
	// hands out nodes it keeps changing under its own lock.
	live := map[string]bool{}
	for _, m := range c.Members() {
		live[m.Addr] = true
	}
	var missing []string
	for _, seed := range c.cfg.Join {
		a, err := net.ResolveTCPAddr("tcp", seed)
		if err != nil || !live[net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))] {
			missing = append(missing, seed)
		}
	}
	return missing
}

// loop expires state and rejoins missing seeds, until Close.
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
			c.st.gc(c.now(), func(name string) bool { _, ok := c.alive[name]; return ok })
			c.mu.Unlock()
		case <-rejoin.C:
			// Join every seed that is not a live member, not only when
			// alone: agents are never alone (they see each other), and
			// memberlist never contacts a member it declared dead, so
			// gateways that all restarted after the agents marked them
			// failed would otherwise stay split from the agents for good.
			// One push/pull per missing seed per interval, only while a
			// seed is missing.
			if seeds := c.missingSeeds(); len(seeds) > 0 {
				ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RejoinInterval)
				if err := c.join(ctx, seeds); err != nil {
					c.log.Debug("cluster rejoin failed", "seeds", seeds, "err", err)
				}
				cancel()
			}
		}
	}
}

// Close leaves the cluster (telling peers, so they drop us at once rather
// than after a suspicion timeout) and stops every goroutine.
func (c *Cluster) Close() error { return c.close(true) }

// Crash stops the member without telling peers, as a kill -9 would: they
// find out through failure detection. For tests and benchmarks.
func (c *Cluster) Crash() error { return c.close(false) }

// close stops the member; without leave it vanishes as if it crashed.
func (c *Cluster) close(leave bool) error {
	var err error
	c.closeOnce.Do(func() {
		close(c.stop)
		c.wg.Wait()
		if leave {
			if lerr := c.ml.Leave(time.Second); lerr != nil {
				c.log.Debug("cluster leave", "err", lerr)
			}
		}
		if serr := c.ml.Shutdown(); serr != nil {
			err = fmt.Errorf("cluster: shutdown: %w", serr)
		}
	})
	return err
}

// LocalAddr is the gossip address other members can join, host:port.
func (c *Cluster) LocalAddr() string {
	n := c.ml.LocalNode()
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// Name is this member's name.
func (c *Cluster) Name() string { return c.cfg.Name }

// Keyring exposes the live gossip keyring for rotation at runtime (see
// Config). Nil when the cluster runs insecure.
func (c *Cluster) Keyring() *memberlist.Keyring {
	return c.keyring
}

// Members lists the members this one currently sees alive (suspect members
// included until declared dead), sorted by name.
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

// write stores a local value (nil deletes) and broadcasts it. The caller
// must not hold mu.
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

// broadcast queues e for gossip. Named by key, so a newer value of the same
// key replaces one still queued.
func (c *Cluster) broadcast(e entry) {
	b, err := json.Marshal(e)
	if err != nil {
		c.log.Error("cluster: encode broadcast", "key", e.Key, "err", err)
		return
	}
	msg := append([]byte{msgEntry}, b...)
	if len(msg) > maxBroadcast {
		c.log.Debug("cluster: entry too large to broadcast; push/pull carries it", "key", e.Key, "bytes", len(msg))
		return
	}
	c.queue.QueueBroadcast(&broadcast{name: e.Key, msg: msg})
}

type broadcast struct {
	name string
	msg  []byte
}

// Invalidates, Name: a NamedBroadcast, so the queue replaces by name.
func (b *broadcast) Invalidates(o memberlist.Broadcast) bool {
	ob, ok := o.(*broadcast)
	return ok && ob.name == b.name
}
func (b *broadcast) Name() string    { return b.name }
func (b *broadcast) Message() []byte { return b.msg }
func (b *broadcast) Finished()       {}

// logWriter turns memberlist's "[LEVEL] memberlist: ..." lines into slog.
type logWriter struct{ log *slog.Logger }

func (w *logWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	lvl := slog.LevelDebug
	switch {
	case bytes.HasPrefix(p, []byte("[ERR]")):
		lvl = slog.LevelError
	case bytes.HasPrefix(p, []byte("[WARN]")):
		lvl = slog.LevelWarn
	}
	w.log.Log(context.Background(), lvl, line)
	return len(p), nil
}

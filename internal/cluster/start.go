package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
	"golang.org/x/crypto/ssh"
)

// A member's life: Start binds the transports (transport.go), joins the
// other gateways and starts the background work (the sender and an
// agent's heartbeat, send.go; the locks file, lockfile.go); loop expires
// state, syncs the gateway state and rejoins missing gateways until Close
// leaves the gateways' pool, or Crash vanishes from it.

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
	// Sessions are live sessions a gateway holds from its start: those of
	// the process it takes over from (an upgrade, which hands the gossip
	// port and the member name over). They are entered before the ports
	// are bound, so the first exchange with a peer re-asserts them above
	// the previous process's versions instead of clearing them as ghosts
	// of a crash (state.go). Gateway is ignored: they are this member's.
	Sessions []Session
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
		offsets:       make(map[string]time.Duration),
	}
	if opt.Role == RoleAgent {
		c.st.sign = c.signHealth
	}
	for _, s := range opt.Sessions {
		c.SetSessions(s.User, s.Node, s.N)
	}
	c.startLocks()
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
	c.runLocks()
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
			c.rebase()
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

// Package gateway is the frontdoor SSH server: it accepts client
// connections, authenticates users against the directory, asks the login
// decision (internal/login) where each one goes, logs in there with a
// short-lived certificate and hands both connections to the relay
// (internal/proxy).
//
// The files, from the bottom up: limits.go and admission.go (what a
// stranger may cost), timing.go (refusal padding), backend.go (the dial to
// a node), table.go (the session table), settings.go (what a connection
// takes from the configuration), conn.go (one connection, and the gateway
// as it sees it), auth.go (the authentication callbacks), login.go (a
// proven login turned into a backend connection), throttle.go (password
// gates), session.go (what a relayed session gets besides bytes), and
// gateway.go (accept, hand over, relay); reload.go (a new configuration
// for new logins) and drain.go (stop taking logins, tell and end sessions)
// change a running gateway.
//
// The gateway builds nothing it does not own: the directory, the node view
// (internal/inventory), the other gateways and the audit trail are given to
// it; internal/assembly puts a whole gateway process together.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/proxy"
)

// Router is the view of the login nodes a login is decided over, and what
// hears back how it went (internal/inventory.Router). Safe for concurrent
// use.
type Router interface {
	// View is a snapshot of the nodes and of user's affinity and failures
	// ("" for the guess made before the user is known).
	View(user string) login.View
	// SessionStarted / SessionEnded keep load and affinity current.
	SessionStarted(user, node string)
	SessionEnded(user, node string)
	// NodeFailed reports a login to node that failed; nodeLevel says the
	// failure concerns every user (see nodeLevel in login.go).
	NodeFailed(node, user string, nodeLevel bool)
}

// Peers are the other gateways of the cluster: their sessions count
// toward per-user caps, and password bans hold on all of them
// (internal/cluster.Cluster).
type Peers interface {
	Bans
	SessionsElsewhere(user string) int
}

// Auditor records audit events (internal/audit.Logger).
type Auditor interface {
	Record(audit.Event)
}

// Deps are the parts of a gateway that are built outside it. Directory,
// NodeKeys, GPUUsage and Budget follow the configuration: a reload gives
// new ones (Prepare).
type Deps struct {
	Logger    *slog.Logger        // default slog.Default()
	Directory directory.Directory // required
	Router    Router              // required
	// NodeKeys verifies the login nodes' host keys (required; the same
	// check the inventory applies to gossiped health).
	NodeKeys *node.HostKeys
	Audit    Auditor // required
	// Peers is nil without a gossip cluster.
	Peers Peers
	// Locks are the account locks (lock.go); nil: none.
	Locks Locks
	// GPUUsage, if set, puts the GPUs a user and their account hold into
	// interactive login banners; Budget, if set, a line when the account
	// is near or over its budget.
	GPUUsage GPUUsage
	Budget   func(account string) string
	// Unlocks are the second-factor unlocks every gateway shares (the
	// cluster); nil: this gateway's own, in memory.
	Unlocks Unlocks
}

// Gateway is one frontdoor SSH server.
type Gateway struct {
	set atomic.Pointer[settings] // the configuration new connections take

	log      *slog.Logger
	router   Router
	peers    Peers // nil without gossip
	locks    Locks // nil without gossip
	audit    Auditor
	metrics  *metrics
	sessions *sessionTable
	unlocks  Unlocks // second-factor unlocks (mfa.go)

	// Limits on connections and on the work strangers cause. A reload
	// gives new limits (reload.go); slots and pw are replaced whole, and a
	// connection gives back what it took to the one it took it from.
	slots   atomic.Pointer[chan struct{}] // one per allowed concurrent connection
	admit   *admission
	lookups *lookupGate // directory lookups before proof
	spec    *specBudget // node connections before proof
	pw      atomic.Pointer[passwordGate]

	rndMu sync.Mutex // rndMu protects rnd
	rnd   *rand.Rand

	// closing is cancelled by Close: it ends handshakes in progress too.
	closing     context.Context
	closeCancel context.CancelFunc

	mu        sync.Mutex // mu protects the following
	listeners map[net.Listener]struct{}
	closed    bool
	draining  bool // StopAccepting: no listener any more, connections go on

	serving sync.WaitGroup // Serve loops
	wg      sync.WaitGroup // connection handlers
	bg      sync.WaitGroup // their background work (lookups, password checks)
}

// New builds a gateway from its configuration (validated by config.Load).
func New(cfg *config.Config, d Deps) (*Gateway, error) {
	if d.Directory == nil || d.NodeKeys == nil {
		return nil, errors.New("gateway: Directory and NodeKeys are required")
	}
	set, err := newSettings(cfg, d.configured())
	if err != nil {
		return nil, err
	}
	return NewPrepared(&Prepared{set: set}, d)
}

// configured are the parts of d that follow the configuration.
func (d Deps) configured() followed {
	return followed{dir: d.Directory, nodeKeys: d.NodeKeys, usage: d.GPUUsage, budget: d.Budget}
}

// NewPrepared builds a gateway from a configuration Prepare loaded with
// the same d.
func NewPrepared(p *Prepared, d Deps) (*Gateway, error) {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Directory == nil || d.Router == nil || d.NodeKeys == nil || d.Audit == nil {
		return nil, errors.New("gateway: Directory, Router, NodeKeys and Audit are required")
	}
	set := p.set
	cfg := set.cfg
	if d.NodeKeys.Insecure() {
		d.Logger.Warn("INSECURE: login node host keys are NOT verified (backend.insecure_ignore_host_keys); anyone on the path can impersonate a login node")
	}
	g := &Gateway{
		log:       d.Logger,
		router:    d.Router,
		peers:     d.Peers,
		locks:     d.Locks,
		audit:     d.Audit,
		metrics:   newMetrics(),
		admit:     newAdmission(admissionLimits(cfg.Gateway), time.Now),
		lookups:   newLookupGate(lookupLimits(cfg.Gateway), time.Now),
		spec:      newSpecBudget(cfg.Backend.SpeculativeMax, cfg.Backend.SpeculativePerNode, cfg.Backend.SpeculativePerSource),
		rnd:       rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		listeners: map[net.Listener]struct{}{},
		unlocks:   d.Unlocks,
	}
	if g.unlocks == nil {
		g.unlocks = newMemUnlocks()
	}
	var elsewhere func(string) int
	var bans Bans
	if d.Peers != nil {
		elsewhere, bans = d.Peers.SessionsElsewhere, d.Peers
	}
	g.sessions = newSessionTable(elsewhere)
	g.pw.Store(newPasswordGate(d.Directory, bans, cfg.Throttle, cfg.Gateway.MaxPasswordChecks, d.Logger))
	slots := make(chan struct{}, cfg.Gateway.MaxConnections)
	g.slots.Store(&slots)
	g.set.Store(set)
	g.closing, g.closeCancel = context.WithCancel(context.Background())
	g.metrics.admission(g.admit)
	return g, nil
}

// Serve accepts connections on ln until ctx ends, StopAccepting or Close
// is called. The connections it accepted go on until they end or Close.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	g.mu.Lock()
	if g.closed || g.draining {
		g.mu.Unlock()
		return net.ErrClosed
	}
	g.listeners[ln] = struct{}{}
	g.serving.Add(1)
	g.mu.Unlock()
	defer g.serving.Done()
	defer func() {
		g.mu.Lock()
		delete(g.listeners, ln)
		g.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	set := g.set.Load()
	if trusted := set.cfg.Gateway.ProxyProtocolPrefixes(); len(trusted) > 0 {
		ln = withProxyProtocol(ln, trusted)
	}
	g.log.Info("gateway listening", "addr", ln.Addr().String(), "gateway", set.cfg.Gateway.Name)
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			g.mu.Lock()
			closed := g.closed || g.draining
			g.mu.Unlock()
			if closed || ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Temporary errors (EMFILE): back off instead of spinning.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			g.log.Error("accept failed", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		slots := *g.slots.Load()
		select {
		case slots <- struct{}{}:
		default:
			g.metrics.refused.WithLabelValues("max_connections").Inc()
			conn.Close()
			continue
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			defer func() { <-slots }()
			g.handle(conn)
		}()
	}
}

// Close stops accepting, closes every session and waits for them to end.
func (g *Gateway) Close() error {
	g.closeCancel()
	g.mu.Lock()
	g.closed = true
	for ln := range g.listeners {
		ln.Close()
	}
	g.mu.Unlock()
	g.sessions.closeAll()
	g.wg.Wait()
	g.bg.Wait()
	return nil
}

// handle serves one client connection from TCP accept to close; Close
// ends it early.
func (g *Gateway) handle(nc net.Conn) {
	defer nc.Close()
	set := g.set.Load()
	g.metrics.connections.Inc()
	// The PROXY header (if any) must arrive at once: it also bounds how
	// long a silent connection is held before admission.
	nc.SetDeadline(time.Now().Add(set.cfg.Gateway.HandshakeTimeout))
	if err := checkProxyHeader(nc); err != nil {
		g.metrics.refused.WithLabelValues("proxy_protocol").Inc()
		g.log.Warn("connection refused", "src", nc.RemoteAddr().String(), "reason", err.Error())
		return
	}
	// Beyond max_startups a connection waits for a place, for at most
	// auth_timeout from accept; its own deadlines start once admitted.
	wait, stopWait := context.WithTimeout(g.closing, set.cfg.Gateway.AuthTimeout)
	release, why := g.admitConn(wait, set, nc.RemoteAddr().String())
	stopWait()
	if why != "" {
		g.metrics.refused.WithLabelValues(why).Inc()
		g.log.Debug("connection refused", "src", nc.RemoteAddr().String(), "reason", why)
		return
	}
	nc.SetDeadline(time.Now().Add(set.cfg.Gateway.HandshakeTimeout))
	c := newConn(g.closing, g, set, nc)
	defer c.abort()
	stopLogin := context.AfterFunc(g.closing, func() { nc.Close() })
	var sconn *ssh.ServerConn
	var chans <-chan ssh.NewChannel
	var reqs <-chan *ssh.Request
	err := func() error {
		defer release() // authenticated or gone: no longer a startup
		defer stopLogin()
		in := nc
		if set.cfg.Backend.Preconnect {
			in = c.preconnectOnHello(nc)
		}
		var err error
		sconn, chans, reqs, err = ssh.NewServerConn(in, c.serverConfig())
		return err
	}()
	if err != nil {
		g.log.Debug("connection ended before a session", "src", c.src, "user", login.Sanitize(c.lastUser), "err", err)
		return
	}
	r := c.take()
	// The login that succeeded must be the one this ServerConn names:
	// the same user name and the account its credential belongs to.
	if r == nil || sconn.User() != r.typed || sconn.Permissions == nil ||
		sconn.Permissions.Extensions[extPrincipal] != r.ident.Name || sconn.Permissions.Extensions[extSession] != c.id {
		g.log.Error("login result does not match the authenticated connection; closing", "session", c.id, "src", c.src)
		if r != nil {
			r.close()
		}
		sconn.Close()
		return
	}
	nc.SetDeadline(time.Time{})
	g.relay(c, sconn, chans, reqs, r)
}

// admitConn takes an admission place for a connection from src, waiting
// for one while ctx lasts.
func (g *Gateway) admitConn(ctx context.Context, set *settings, src string) (release func(), refused string) {
	key := SourceKey(src)
	if set.exemptSource(key) {
		// One shared source: only max_startups applies.
		return g.admit.admitExempt(ctx)
	}
	return g.admit.admit(ctx, key)
}

// admissionLimits are the admission settings of gc.
func lookupLimits(gc config.Gateway) LookupLimits {
	return LookupLimits{Max: gc.MaxLookups, PerSource: gc.PerSourceLookups,
		PerSourceRate: gc.PerSourceLookupRate, PerSourceBurst: gc.PerSourceLookupBurst}
}

func admissionLimits(gc config.Gateway) AdmissionLimits {
	return AdmissionLimits{MaxStartups: gc.MaxStartups, MaxStartupsQueue: gc.MaxStartupsQueue,
		PerSourceMaxStartups: gc.PerSourceMaxStartups, PerSourceRate: gc.PerSourceRate, PerSourceBurst: gc.PerSourceBurst}
}

func (g *Gateway) relay(c *conn, sconn *ssh.ServerConn, chans <-chan ssh.NewChannel, reqs <-chan *ssh.Request, lr *loginResult) {
	b := lr.backend
	cfg := c.set.cfg
	s := &Session{
		ID: c.id, User: lr.ident.Name, Node: b.target.Name, Src: c.src, Method: lr.method,
		Started: time.Now(), stats: &proxy.Stats{},
	}
	log := g.log.With("session", s.ID, "user", s.User, "node", s.Node, "src", s.Src)
	r := &proxy.Relay{
		Down:              proxy.Side{Conn: sconn, Chans: chans, Reqs: reqs},
		Up:                proxy.Side{Conn: b.nodeConn, Chans: b.chans, Reqs: b.reqs},
		Rights:            lr.policy.Rights,
		Log:               log,
		Stats:             s.stats,
		KeepaliveInterval: cfg.Backend.KeepaliveInterval,
		Env:               sessionEnv(lr.policy, b.target, s.ID),
		Banner:            sessionBanner(s.User, lr.policy, b.target, c.set.usage, usageWait(cfg), c.set.budget),
		AllowDirect:       allowDirect(b.target, lr.policy.ForwardTo),
		IdleTimeout:       lr.policy.IdleTimeout,
		IdleWarning:       lr.policy.IdleWarning,
		MaxChannels:       cfg.Gateway.MaxChannels,
	}
	s.close = func() { sconn.Close() }
	s.relay = r
	if !g.sessions.add(s) {
		lr.close()
		sconn.Close()
		return
	}
	lr.slot() // the live session now counts against the cap
	g.router.SessionStarted(s.User, s.Node)
	g.metrics.sessions.Inc()
	g.metrics.sessionsTotal.WithLabelValues(s.Node).Inc()
	g.record(audit.Event{Type: audit.TypeSessionStart, Session: s.ID,
		User: s.User, Src: s.Src, Node: s.Node, Method: s.Method, Rule: lr.policy.Rule, Result: "ok"})

	err := r.Run(g.closing)

	g.sessions.remove(s.ID)
	g.router.SessionEnded(s.User, s.Node)
	g.metrics.sessions.Dec()
	g.metrics.bytes.WithLabelValues("up").Add(float64(s.stats.BytesUp.Load()))
	g.metrics.bytes.WithLabelValues("down").Add(float64(s.stats.BytesDown.Load()))
	ev := audit.Event{Type: audit.TypeSessionEnd, Session: s.ID, User: s.User,
		Src: s.Src, Node: s.Node, Result: "ok", BytesIn: s.stats.BytesUp.Load(), BytesOut: s.stats.BytesDown.Load(),
		Channels: int(s.stats.Channels.Load()), Duration: time.Since(s.Started).Seconds()}
	if err != nil {
		ev.Reason = err.Error()
	}
	g.record(ev)
}

// Sessions lists the live sessions, oldest first.
func (g *Gateway) Sessions() []SessionInfo { return g.sessions.list() }

// SessionsPerNode counts the live sessions through this gateway on each
// node.
func (g *Gateway) SessionsPerNode() map[string]int { return g.sessions.perNode() }

// Explain shows how a login by typed ("alice", "alice+login2") would go
// now: identity, policy rule, every node's candidacy and score, and the
// outcome — computed by the same login.Decide a real login calls.
func (g *Gateway) Explain(ctx context.Context, typed string) (string, error) {
	name, nodeName, err := login.SplitUser(typed)
	if err != nil {
		return "", err
	}
	ident, err := g.set.Load().dir.Lookup(ctx, name)
	if err != nil {
		return "", fmt.Errorf("user %s: %s", login.Sanitize(name), directory.Reason(err))
	}
	in, out := g.decide(ident, nodeName, "")
	return out.Explain(in), nil
}

// The server interface (conn.go): what a connection asks of the gateway.

func (g *Gateway) identify(ctx context.Context, srcKey, name string) (directory.Identity, error) {
	release, err := g.lookups.acquire(ctx, srcKey, srcKey != "")
	if err != nil {
		switch {
		case errors.Is(err, errLookupRate):
			g.limited("lookup_rate")
		case errors.Is(err, errLookupQueue):
			g.limited("lookup_queue")
		}
		return directory.Identity{}, &directory.Error{Kind: directory.ErrUnavailable, Reason: err.Error(), Err: err}
	}
	defer release()
	start := time.Now()
	id, err := g.set.Load().dir.Lookup(ctx, name)
	took := time.Since(start)
	g.metrics.lookupSeconds.Observe(took.Seconds())
	g.log.Debug("directory lookup", "user", login.Sanitize(name), "src", srcKey, "took", took, "err", err)
	return id, err
}

func (g *Gateway) stale(name string) (directory.Identity, bool) {
	if s, ok := g.set.Load().dir.(directory.Staler); ok {
		return s.Stale(name)
	}
	return directory.Identity{}, false
}

func (g *Gateway) directoryOffline() bool {
	o, ok := g.set.Load().dir.(directory.Offliner)
	return ok && o.Offline()
}

func (g *Gateway) background(f func()) {
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		f()
	}()
}

func (g *Gateway) limited(reason string) { g.metrics.limited.WithLabelValues(reason).Inc() }

func (g *Gateway) checkPassword(ctx context.Context, srcKey, account, name, pw string) (directory.Identity, string, error) {
	return g.pw.Load().check(ctx, srcKey, account, name, pw)
}

func (g *Gateway) decide(id directory.Identity, explicit, prefer string) (login.Input, login.Outcome) {
	set := g.set.Load()
	cfg := set.cfg
	in := login.Input{Ident: id, Explicit: explicit, Policy: cfg.Policy, Principals: set.principals, Route: cfg.Route,
		View: g.router.View(id.Name), MaxAttempts: cfg.Backend.MaxAttempts, Prefer: prefer, Now: time.Now()}
	in.View.UserSessions = g.sessions.userSessions(id.Name)
	if r := lockRefusal(g.locks, id.Name); r != nil {
		return in, login.Outcome{Refusal: r}
	}
	g.rndMu.Lock()
	defer g.rndMu.Unlock()
	in.Rand = g.rnd
	return in, login.Decide(in)
}

func (g *Gateway) guess() (node.Node, bool) {
	v := g.router.View("")
	cfg := g.set.Load().cfg
	g.rndMu.Lock()
	defer g.rndMu.Unlock()
	return login.Guess(v, cfg.Route, time.Now(), g.rnd)
}

func (g *Gateway) speculative(node, srcKey string) (func(), bool) {
	return g.spec.acquire(node, srcKey)
}

func (g *Gateway) reserveSession(user string, max int) (func(), bool) {
	return g.sessions.reserve(user, max)
}

func (g *Gateway) nodeFailed(n node.Node, user string, err error) {
	g.router.NodeFailed(n.Name, user, nodeLevel(err))
	g.metrics.backendFailures.WithLabelValues(n.Name, stageOf(err)).Inc()
	g.log.Warn("login node failed", "user", user, "node", n.Name, "err", err)
}

func (g *Gateway) record(e audit.Event) {
	if e.Gateway == "" {
		e.Gateway = g.set.Load().cfg.Gateway.Name
	}
	if e.Type == audit.TypeAuth {
		g.metrics.auth.WithLabelValues(e.Method, e.Result).Inc()
	}
	g.audit.Record(e)
}

// Collectors are the gateway's metrics.
func (g *Gateway) Collectors() []prometheus.Collector { return g.metrics.collectors }

// UserCA is the public key of the user CA new logins are signed with (the
// key login nodes must trust for this gateway) and where it lives ("file"
// or "kms").
func (g *Gateway) UserCA() (ssh.PublicKey, string) {
	c := g.set.Load().ca
	return c.PublicKey(), c.Kind()
}

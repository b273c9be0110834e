// Package gateway is the frontdoor SSH server: it accepts client
// connections, authenticates users against the directory, applies the
// policy, picks a login node, logs in there with a short-lived certificate
// and hands both connections to the relay.
package gateway

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/proxy"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
	"github.com/frontdoor-hpc/frontdoor/internal/throttle"
)

// ServerVersion is what the gateway announces to clients.
const ServerVersion = "SSH-2.0-frontdoor"

// Options are the parts of a gateway that are built outside it.
type Options struct {
	Logger    *slog.Logger
	Directory directory.Directory // required
	Router    Router              // default: built from the config and Cluster
	// Cluster is the gossip membership, if the config has one: routing then
	// follows the agents' health, and sessions and affinity are shared.
	Cluster *cluster.Cluster
	Audit   *audit.Logger // default: the audit file of the config
	// GPUUsage, if set, puts the GPUs a user and their account hold into
	// interactive login banners; Budget, if set, a line when the
	// account is near or over its budget.
	GPUUsage GPUUsage
	Budget   func(account string) string

	// nodeKeys and inv, if set, are the backend host keys and the node
	// inventory Build made (for the cluster, and discovery).
	nodeKeys *hostKeys
	inv      *inventory
}

// Gateway is one frontdoor SSH server.
type Gateway struct {
	cfg      *config.Config
	log      *slog.Logger
	dir      directory.Directory
	router   Router
	cluster  *cluster.Cluster // nil without gossip
	audit    *audit.Logger
	ownAudit bool
	ca       *ca.CA
	hostKeys []ssh.Signer
	nodeKeys *hostKeys
	inv      *inventory
	usage    GPUUsage // nil: banners show no GPU use
	budget   func(account string) string
	throttle *throttle.Throttle
	metrics  *metrics
	slots    chan struct{} // one per allowed concurrent connection
	// admit bounds unauthenticated connections; exempt sources count only
	// against the global bound.
	admit      *admission
	exemptAdm  []netip.Prefix
	spec       *specBudget   // node connections before proof
	pwChecks   chan struct{} // one per password verification running
	lookups    lookupTimes   // recent directory lookup latencies (timing.go)
	principals Principals

	rndMu sync.Mutex // rndMu protects rnd
	rnd   *rand.Rand
	// closing is cancelled by Close: it ends handshakes in progress too.
	closing     context.Context
	closeCancel context.CancelFunc

	mu        sync.Mutex // mu protects the following
	sessions  map[string]*Session
	settingUp map[string]int // user → logins holding a session slot, not yet relayed
	listeners map[net.Listener]struct{}
	closed    bool

	wg sync.WaitGroup // connection handlers
}

// New builds a gateway from its configuration.
func New(cfg *config.Config, opts Options) (*Gateway, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Directory == nil {
		return nil, errors.New("gateway: no directory")
	}
	hk, err := ca.LoadHostSigners(cfg.Gateway.HostKeys, cfg.Gateway.HostCertificates)
	if err != nil {
		return nil, fmt.Errorf("gateway host keys: %w", err)
	}
	caSigner, err := ca.LoadSigner(cfg.Gateway.UserCAKey)
	if err != nil {
		return nil, fmt.Errorf("gateway user CA: %w", err)
	}
	nk := opts.nodeKeys
	if nk == nil {
		if nk, err = newHostKeys(cfg.Backend.KnownHosts, cfg.Backend.InsecureIgnoreHostKeys); err != nil {
			return nil, err
		}
	}
	if cfg.Backend.InsecureIgnoreHostKeys {
		opts.Logger.Warn("INSECURE: login node host keys are NOT verified (backend.insecure_ignore_host_keys); anyone on the path can impersonate a login node")
	}
	g := &Gateway{
		cfg:      cfg,
		log:      opts.Logger,
		dir:      opts.Directory,
		router:   opts.Router,
		audit:    opts.Audit,
		ca:       ca.New(caSigner, cfg.Gateway.Name, cfg.Backend.CertValidity, cfg.Backend.CertSourceAddress),
		hostKeys: hk,
		nodeKeys: nk,
		throttle: throttle.New(cfg.Throttle),
		metrics:  newMetrics(),
		slots:    make(chan struct{}, cfg.Gateway.MaxConnections),
		admit: newAdmission(AdmissionLimits{MaxStartups: cfg.Gateway.MaxStartups, PerSourceMaxStartups: cfg.Gateway.PerSourceMaxStartups,
			PerSourceRate: cfg.Gateway.PerSourceRate, PerSourceBurst: cfg.Gateway.PerSourceBurst}, time.Now),
		exemptAdm:  cfg.Gateway.AdmissionExemptPrefixes(),
		spec:       newSpecBudget(cfg.Backend.SpeculativeMax, cfg.Backend.SpeculativePerNode),
		pwChecks:   make(chan struct{}, cfg.Gateway.MaxPasswordChecks),
		principals: Principals{MinUID: *cfg.Backend.MinUID, Deny: cfg.Backend.DenyPrincipals},
		rnd:        rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		sessions:   map[string]*Session{},
		settingUp:  map[string]int{},
		listeners:  map[net.Listener]struct{}{},
	}
	g.closing, g.closeCancel = context.WithCancel(context.Background())
	g.cluster = opts.Cluster
	g.usage = opts.GPUUsage
	g.budget = opts.Budget
	g.inv = opts.inv
	if g.inv == nil {
		g.inv = newInventory(cfg.Nodes, nk, opts.Logger)
	}
	if g.router == nil {
		r := newRouter(g.inv, opts.Cluster, cfg.Route.StaleAfter)
		if r.probes != nil {
			go r.probes.run(g.closing)
		}
		g.router = r
	}
	g.metrics.unauthenticated(g.admit.unauthenticated)
	if g.cluster != nil {
		g.metrics.gossipRefusals(g.cluster.Refusals)
	}
	if g.audit == nil {
		a, err := audit.Open(cfg.Audit.File, opts.Logger)
		if err != nil {
			return nil, err
		}
		g.audit, g.ownAudit = a, true
	}
	g.metrics.reg.MustRegister(g.audit.Collectors()...)
	return g, nil
}

// Serve accepts connections on ln until ctx ends or Close is called.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return net.ErrClosed
	}
	g.listeners[ln] = struct{}{}
	g.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopOnClose := context.AfterFunc(g.closing, cancel)
	defer stopOnClose()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	if trusted := g.cfg.Gateway.ProxyProtocolPrefixes(); len(trusted) > 0 {
		ln = withProxyProtocol(ln, trusted)
	}
	g.log.Info("gateway listening", "addr", ln.Addr().String(), "gateway", g.cfg.Gateway.Name)
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			g.mu.Lock()
			closed := g.closed
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
		select {
		case g.slots <- struct{}{}:
		default:
			g.metrics.refused.WithLabelValues("max_connections").Inc()
			conn.Close()
			continue
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			defer func() { <-g.slots }()
			g.handle(ctx, conn)
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
	for _, s := range g.sessions {
		s.close()
	}
	g.mu.Unlock()
	g.wg.Wait()
	if g.ownAudit {
		return g.audit.Close()
	}
	return nil
}

// Session is one authenticated, relayed connection.
type Session struct {
	ID      string    `json:"id"`
	User    string    `json:"user"`
	Node    string    `json:"node"`
	Src     string    `json:"src"`
	Method  string    `json:"method"`
	Started time.Time `json:"started"`

	stats *proxy.Stats
	close func()
}

// SessionInfo is a snapshot of a session for the admin API.
type SessionInfo struct {
	Session
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	Channels  int64 `json:"channels"`
}

// Sessions lists the live sessions, oldest first.
func (g *Gateway) Sessions() []SessionInfo {
	g.mu.Lock()
	out := make([]SessionInfo, 0, len(g.sessions))
	for _, s := range g.sessions {
		out = append(out, SessionInfo{Session: *s, BytesUp: s.stats.BytesUp.Load(),
			BytesDown: s.stats.BytesDown.Load(), Channels: s.stats.Channels.Load()})
	}
	g.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// newSessionID returns a short random ID shared by logs, audit events and
// the backend certificate's key ID.
func newSessionID() string {
	var b [8]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// handle serves one client connection from TCP accept to close.
func (g *Gateway) handle(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	g.metrics.connections.Inc()
	// The PROXY header (if any) must arrive at once: it also bounds how
	// long a silent connection is held before admission.
	nc.SetDeadline(time.Now().Add(g.cfg.Gateway.HandshakeTimeout))
	if err := checkProxyHeader(nc); err != nil {
		g.metrics.refused.WithLabelValues("proxy_protocol").Inc()
		g.log.Warn("connection refused", "src", nc.RemoteAddr().String(), "reason", err.Error())
		return
	}
	release, why := g.admitConn(nc.RemoteAddr().String())
	if why != "" {
		g.metrics.refused.WithLabelValues(why).Inc()
		g.log.Debug("connection refused", "src", nc.RemoteAddr().String(), "reason", why)
		return
	}
	c := newConn(g, nc)
	defer c.abort()
	stopLogin := context.AfterFunc(ctx, func() { nc.Close() })
	var sconn *ssh.ServerConn
	var chans <-chan ssh.NewChannel
	var reqs <-chan *ssh.Request
	err := func() error {
		defer release() // authenticated or gone: no longer a startup
		defer stopLogin()
		in := nc
		if *g.cfg.Backend.Preconnect {
			in = c.preconnectOnFirstBytes(nc)
		}
		var err error
		sconn, chans, reqs, err = ssh.NewServerConn(in, c.serverConfig())
		return err
	}()
	if err != nil {
		g.log.Debug("connection ended before a session", "src", c.src, "user", sanitize(c.lastUser), "err", err)
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
	g.relay(ctx, c, sconn, chans, reqs, r)
}

// admitConn takes an admission place for a connection from src.
func (g *Gateway) admitConn(src string) (release func(), refused string) {
	key := SourceKey(src)
	if a, err := netip.ParseAddr(key); err == nil {
		for _, p := range g.exemptAdm {
			if p.Contains(a) {
				key = "exempt" // one shared source: only max_startups applies
				break
			}
		}
	}
	if key == "exempt" {
		return g.admit.admitExempt()
	}
	return g.admit.admit(key)
}

func (g *Gateway) relay(ctx context.Context, c *conn, sconn *ssh.ServerConn, chans <-chan ssh.NewChannel, reqs <-chan *ssh.Request, lr *loginResult) {
	b := lr.backend
	s := &Session{
		ID: c.id, User: lr.ident.Name, Node: b.target.Name, Src: c.src, Method: lr.method,
		Started: time.Now(), stats: &proxy.Stats{},
	}
	s.close = func() { sconn.Close() }
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		lr.close()
		sconn.Close()
		return
	}
	g.sessions[s.ID] = s
	g.mu.Unlock()
	lr.slot() // the live session now counts against the cap
	g.router.SessionStarted(s.User, s.Node)
	g.metrics.sessions.Inc()
	g.metrics.sessionsTotal.WithLabelValues(s.Node).Inc()
	log := g.log.With("session", s.ID, "user", s.User, "node", s.Node, "src", s.Src)
	g.audit.Record(audit.Event{Type: audit.TypeSessionStart, Gateway: g.cfg.Gateway.Name, Session: s.ID,
		User: s.User, Src: s.Src, Node: s.Node, Method: s.Method, Rule: lr.policy.Rule, Result: "ok"})

	r := &proxy.Relay{
		Down:              proxy.Side{Conn: sconn, Chans: chans, Reqs: reqs},
		Up:                proxy.Side{Conn: b.conn, Chans: b.chans, Reqs: b.reqs},
		Rights:            lr.policy.Rights,
		Log:               log,
		Stats:             s.stats,
		KeepaliveInterval: g.cfg.Backend.KeepaliveInterval,
		Env:               sessionEnv(lr.policy, b.target, s.ID),
		Banner:            sessionBanner(s.User, lr.policy, b.target, g.usage, g.cfg.Slurm.UsageTimeout, g.budgetLine),
		AllowDirect:       allowDirect(b.target, lr.policy.ForwardTo),
		IdleTimeout:       lr.policy.IdleTimeout,
		IdleWarning:       lr.policy.IdleWarning,
	}
	err := r.Run(ctx)

	g.mu.Lock()
	delete(g.sessions, s.ID)
	g.mu.Unlock()
	g.router.SessionEnded(s.User, s.Node)
	g.metrics.sessions.Dec()
	g.metrics.bytes.WithLabelValues("up").Add(float64(s.stats.BytesUp.Load()))
	g.metrics.bytes.WithLabelValues("down").Add(float64(s.stats.BytesDown.Load()))
	ev := audit.Event{Type: audit.TypeSessionEnd, Gateway: g.cfg.Gateway.Name, Session: s.ID, User: s.User,
		Src: s.Src, Node: s.Node, Result: "ok", BytesIn: s.stats.BytesUp.Load(), BytesOut: s.stats.BytesDown.Load(),
		Channels: int(s.stats.Channels.Load()), Duration: time.Since(s.Started).Seconds()}
	if err != nil {
		ev.Reason = err.Error()
	}
	g.audit.Record(ev)
}

// budgetLine is the banner's budget warning for account, if any.
func (g *Gateway) budgetLine(account string) string {
	if g.budget == nil {
		return ""
	}
	return g.budget(account)
}

// NodeInfo is a login node as the admin API shows it.
type NodeInfo struct {
	Name           string    `json:"name"`
	Pool           string    `json:"pool"`
	Addr           string    `json:"addr"`
	Alive          bool      `json:"alive"`
	SSHDUp         bool      `json:"sshd_up"`
	Draining       bool      `json:"draining"`
	HealthAt       time.Time `json:"health_at"`
	Sessions       int       `json:"sessions"` // on the node, any gateway (static: this gateway)
	MaxSessions    int       `json:"max_sessions,omitempty"`
	Users          int       `json:"users"`
	Load1          float64   `json:"load1"`
	CPUs           int       `json:"cpus"`
	MemAvailFrac   float64   `json:"mem_avail_frac"`
	CPUPressure    float64   `json:"cpu_pressure"`
	MemPressure    float64   `json:"mem_pressure"`
	RecentlyRouted int       `json:"recently_routed"`
	Score          float64   `json:"score"`         // lower is better
	Here           int       `json:"sessions_here"` // through this gateway
	// NotTaking says why a discovered node takes no new logins (HyperPod
	// status); its live sessions go on.
	NotTaking string `json:"not_taking,omitempty"`
	// NoAgent: no agent reports for the node; the gateway probes its sshd
	// banner and scores it by sessions alone.
	NoAgent bool `json:"no_agent,omitempty"`
}

// Nodes is the gateway's current view of the login nodes.
func (g *Gateway) Nodes() []NodeInfo {
	g.mu.Lock()
	here := map[string]int{}
	for _, s := range g.sessions {
		here[s.Node]++
	}
	g.mu.Unlock()
	var out []NodeInfo
	for _, n := range g.router.Nodes() {
		out = append(out, NodeInfo{Name: n.Name, Pool: n.Pool, Addr: n.Addr, Alive: n.Alive, SSHDUp: n.SSHDUp,
			Draining: n.Draining, HealthAt: n.HealthAt, Sessions: n.Sessions, MaxSessions: n.MaxSessions, Users: n.Users,
			Load1: n.Load1, CPUs: n.CPUs, MemAvailFrac: n.MemAvailFrac, CPUPressure: n.CPUPressure,
			MemPressure: n.MemPressure, RecentlyRouted: n.RecentlyRouted, Score: route.Score(n, g.cfg.Route.Weights),
			Here: here[n.Name], NoAgent: n.NoAgent})
	}
	for name, why := range g.inv.notTaking() {
		out = append(out, NodeInfo{Name: name, NotTaking: why, Here: here[name]})
	}
	slices.SortFunc(out, func(a, b NodeInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Explain shows how a login by typed ("alice", "alice+login2") would go
// now: identity, policy rule, every node's candidacy and score, and the
// outcome — computed by the same Decide a real login calls.
func (g *Gateway) Explain(ctx context.Context, typed string) (string, error) {
	name, node, err := SplitUser(typed)
	if err != nil {
		return "", err
	}
	ident, err := g.dir.Lookup(ctx, name)
	if err != nil {
		return "", fmt.Errorf("user %s: %s", sanitize(name), directory.Reason(err))
	}
	in, out := g.decide(ident, node, "")
	return out.Explain(in), nil
}

// ErrNoCluster: the operation needs the gossip cluster.
var ErrNoCluster = errors.New("this gateway has no gossip cluster (no cluster section in its config)")

// Drain sets or clears an admin drain of node, cluster-wide: no new
// sessions go there; existing ones are untouched.
func (g *Gateway) Drain(node string, drain bool, by string) error {
	if g.cluster == nil {
		return ErrNoCluster
	}
	if !config.ValidNodeName(node) {
		return fmt.Errorf("invalid node name %q", node)
	}
	// A typo must not "succeed" by draining nothing. Undrain stays allowed
	// for names no agent reports any more, to clear a stale drain.
	if drain && !slices.ContainsFunc(g.router.Nodes(), func(n route.Node) bool { return n.Name == node }) {
		return fmt.Errorf("no login node named %q is known to this gateway (see frontdoor nodes)", node)
	}
	return g.cluster.Drain(node, drain, by)
}

// AdminSource adapts the gateway to the admin API.
func (g *Gateway) AdminSource() AdminSource { return AdminSource{g} }

// AdminSource is the gateway as the admin package sees it.
type AdminSource struct{ g *Gateway }

func (a AdminSource) Sessions() any { return a.g.Sessions() }
func (a AdminSource) Nodes() any    { return a.g.Nodes() }
func (a AdminSource) Explain(ctx context.Context, user string) (string, error) {
	return a.g.Explain(ctx, user)
}
func (a AdminSource) Drain(node string, drain bool, by string) error {
	return a.g.Drain(node, drain, by)
}

// Record writes an admin API event to the gateway's audit trail.
func (a AdminSource) Record(e audit.Event) {
	if e.Gateway == "" {
		e.Gateway = a.g.cfg.Gateway.Name
	}
	a.g.audit.Record(e)
}

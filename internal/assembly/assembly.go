// Package assembly puts a whole gateway process together from its
// configuration: the directory, HyperPod discovery, the gossip cluster, the
// audit trail, the node inventory and its live view, the SSH server, the
// admin API, the listeners, Prometheus metrics and GC tuning. `frontdoor
// gateway` and the tests build gateways only through it, so what the tests
// run is what production runs.
//
// Build makes the parts; Listen opens the sockets; Serve serves until it
// is told to stop accepting; Close releases everything, in the reverse
// order. Run is Serve then Close, for a gateway whose end ends its
// sessions. A running gateway takes a new configuration (Reload,
// reload.go) and hands its place to a process that replaces it (HandOver,
// handover.go); internal/lifecycle drives both.
package assembly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	"github.com/frontdoor-hpc/frontdoor/internal/gctune"
	"github.com/frontdoor-hpc/frontdoor/internal/inventory"
)

// Options are what a process gives Build besides its configuration.
type Options struct {
	// Log is the process log (default slog.Default()).
	Log *slog.Logger
	// LogLevel, if set, is Log's level: a reload sets it from log.level.
	LogLevel *slog.LevelVar
	// Listen opens the listeners (default: create them); an upgrade
	// hands them from one process to the next (internal/lifecycle).
	Listen admin.ListenFunc
	// Takeover, if set, takes over from the process this one replaces,
	// just before this one starts what only one process may hold: the
	// audit spool and the gossip member (member is its name, "" without
	// gossip). It returns the sessions that process still relays: they
	// count as this gateway's until it reports them ended (Inherit).
	Takeover func(ctx context.Context, member string) ([]cluster.Session, error)
	// Lifecycle serves /v1/status, /v1/reload and /v1/upgrade.
	Lifecycle admin.Lifecycle
}

// Gateway is a gateway process's parts.
type Gateway struct {
	// SSH is the SSH server.
	SSH       *gateway.Gateway
	Inventory *inventory.Inventory
	Router    *inventory.Router
	Audit     *audit.Logger
	// Registry holds every part's metrics; the admin API serves it.
	Registry *prometheus.Registry
	// Reloads keeps the last reload's result for the status and the
	// metrics: the reload code calls Reloads.Record.
	Reloads *ReloadLog
	// Report fills the status parts other code owns (status.go).
	Report Reporters

	o        Options
	started  time.Time
	refusals *recentRefusals
	log      *slog.Logger
	ln       net.Listener
	admin    *admin.Server
	stop     context.CancelFunc // ends the background loops
	bg       context.Context
	loops    sync.WaitGroup
	done     chan struct{} // closed by Close

	// change serialises reloads and handovers; the parts they replace
	// are read through the atomic pointers.
	change  sync.Mutex
	cur     atomic.Pointer[parts] // the configuration in use and its files
	cluster atomic.Pointer[cluster.Cluster]
	auditS3 atomic.Pointer[s3sink.Sink]
	// Replaced as a whole by a reload (reload.go), under change.
	disc       *discoveryRun
	budgetRun  context.CancelFunc
	handedOver bool // HandOver, until Resume
	// handedDrains are the successor's drains after a HandOver
	// (maintenance.go).
	handedDrains atomic.Pointer[successorDrains]

	closed sync.Once
	err    error
}

// auditS3FlushTimeout bounds the upload of the spool at shutdown; what is
// left is uploaded at the next start.
const auditS3FlushTimeout = 30 * time.Second

// Build makes every part the configuration names (ctx bounds the first
// discovery refresh, the takeover and the first gossip join) and starts
// their background loops. Close releases all of it.
func Build(ctx context.Context, cfg *config.Config, o Options) (_ *Gateway, err error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	log := o.Log
	bg, stop := context.WithCancel(context.Background())
	a := &Gateway{o: o, log: log, bg: bg, stop: stop, done: make(chan struct{}), Registry: prometheus.NewRegistry(),
		started: time.Now(), Reloads: newReloadLog()}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	p, err := load(cfg, nil, log)
	if err != nil {
		return nil, err
	}
	a.cur.Store(p)
	a.registerDirectory(p.dir)
	a.Inventory = inventory.New(cfg.Nodes, p.nodeKeys, log.With("component", "inventory"))
	if cfg.Discovery != nil {
		if a.disc, err = a.startDiscovery(ctx, *cfg.Discovery); err != nil {
			return nil, err
		}
		a.Registry.MustRegister(a.disc.src.Collectors()...)
	}
	if a.Audit, err = audit.Open(cfg.Audit.File, log); err != nil {
		return nil, err
	}
	a.Registry.MustRegister(a.Audit.Collectors()...)
	a.startBudget(p)

	// From here on, only one process of the gateway may act.
	var inherited []cluster.Session
	if o.Takeover != nil {
		member := ""
		if cfg.Cluster != nil {
			member = cfg.Cluster.Name
		}
		if inherited, err = o.Takeover(ctx, member); err != nil {
			return nil, fmt.Errorf("taking over from the previous process: %w", err)
		}
	}
	if cfg.Audit.S3 != nil {
		s, err := a.newAuditS3(ctx, cfg)
		if err != nil {
			return nil, err
		}
		a.auditS3.Store(s)
		a.Audit.SetSinks(s)
	}
	if cfg.Cluster != nil {
		cl, err := a.startCluster(ctx, *cfg.Cluster, inherited)
		if err != nil {
			return nil, err
		}
		a.cluster.Store(cl)
		a.Registry.MustRegister(clusterMetrics{a})
	}
	a.Router = inventory.NewRouter(a.Inventory, a.cluster.Load(), cfg.Route.StaleAfter)
	for _, s := range inherited {
		a.Router.Inherit(s.User, s.Node, s.N)
	}
	a.loop(bg, a.Router.Run)
	deps := gateway.Deps{Logger: log, Directory: p.dir, Router: a.Router, NodeKeys: p.nodeKeys, Audit: a.Audit, Peers: peers{a},
		Locks: clusterLocks{a}}
	if a.cluster.Load() != nil {
		deps.Unlocks = unlocks{a}
	}
	if a.SSH, err = gateway.NewPrepared(p.gw, deps); err != nil {
		return nil, err
	}
	a.loop(bg, a.SSH.EnforceLocks)
	a.loop(bg, a.prefetch)
	a.Registry.MustRegister(a.SSH.Collectors()...)
	a.startMaintenance()
	a.Report.Drains = maintenanceDrains{a}
	a.Registry.MustRegister(ca.Collectors()...)
	a.logUserCA(cfg.Gateway.Name)
	a.Registry.MustRegister(a.statusCollectors()...)
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.refusals = newRecentRefusals(func() map[string]float64 { return refusalTotals(a.Registry) }, a.started)
	a.loop(bg, a.refusals.run)
	return a, nil
}

// directoryMetrics is a directory that has metrics (AD: its cache and
// change watch).
type directoryMetrics interface{ Collectors() []prometheus.Collector }

// registerDirectory registers d's metrics, if it has any.
func (a *Gateway) registerDirectory(d directory.Directory) {
	if c, ok := d.(directoryMetrics); ok {
		a.Registry.MustRegister(c.Collectors()...)
	}
}

// unregisterDirectory takes d's metrics out (a reload replaced it).
func (a *Gateway) unregisterDirectory(d directory.Directory) {
	if c, ok := d.(directoryMetrics); ok {
		for _, m := range c.Collectors() {
			a.Registry.Unregister(m)
		}
	}
}

// Config is the configuration in use.
func (a *Gateway) Config() *config.Config { return a.cur.Load().cfg }

// Directory is the identity source in use.
func (a *Gateway) Directory() directory.Directory { return a.cur.Load().dir }

// Cluster is the gossip member, nil without a cluster section.
func (a *Gateway) Cluster() *cluster.Cluster { return a.cluster.Load() }

// startCluster joins the gossip cluster, with sessions this gateway holds
// from the start.
func (a *Gateway) startCluster(ctx context.Context, cfg cluster.Config, sessions []cluster.Session) (*cluster.Cluster, error) {
	cl, err := cluster.Start(ctx, cfg, cluster.Options{Role: cluster.RoleGateway,
		Logger: a.log.With("component", "cluster"), Inventory: a.Inventory, Sessions: sessions})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return cl, nil
}

// newAuditS3 opens the audit spool and starts shipping it.
func (a *Gateway) newAuditS3(ctx context.Context, cfg *config.Config) (*s3sink.Sink, error) {
	s, err := s3sink.New(ctx, *cfg.Audit.S3, cfg.Gateway.Name, s3sink.Options{Logger: a.log.With("component", "audit-s3")})
	if err != nil {
		return nil, fmt.Errorf("audit s3: %w", err)
	}
	a.Registry.MustRegister(s.Collectors()...)
	return s, nil
}

// closeAuditS3 stops s, uploading what it can within the flush timeout
// (the rest waits in the spool for the next sink on it).
func (a *Gateway) closeAuditS3(s *s3sink.Sink, timeout time.Duration) error {
	for _, c := range s.Collectors() {
		a.Registry.Unregister(c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.Close(ctx)
}

// startBudget runs p's budget watch unless it is the one running already.
func (a *Gateway) startBudget(p *parts) {
	if p.budget == nil {
		return
	}
	ctx, cancel := context.WithCancel(a.bg)
	a.budgetRun = cancel
	a.loop(ctx, p.budget.Run)
}

// loop runs f in the background until ctx ends (at the latest, Close).
func (a *Gateway) loop(ctx context.Context, f func(context.Context)) {
	a.loops.Add(1)
	go func() {
		defer a.loops.Done()
		f(ctx)
	}()
}

// discoveryRun is HyperPod discovery and the loop that follows it.
type discoveryRun struct {
	src  *discovery.Source
	cfg  discovery.Config
	stop context.CancelFunc
	done chan struct{}
}

// startDiscovery makes the discovery source, refreshes it once (within
// ctx; a failure leaves the configured nodes alone until the loop gets
// through) and keeps the inventory in step with it until Close. The
// caller registers its metrics.
func (a *Gateway) startDiscovery(ctx context.Context, cfg discovery.Config) (*discoveryRun, error) {
	src, err := discovery.New(ctx, cfg, discovery.Options{Logger: a.log.With("component", "discovery")})
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if err := src.Refresh(ctx); err != nil {
		a.log.Warn("discovery: first refresh failed; starting with the configured nodes only", "err", err)
	}
	a.Inventory.SetDiscovered(src.Nodes())
	runCtx, stop := context.WithCancel(a.bg)
	d := &discoveryRun{src: src, cfg: cfg, stop: stop, done: make(chan struct{})}
	a.loops.Add(1)
	go func() {
		defer a.loops.Done()
		defer close(d.done)
		a.followDiscovery(runCtx, src)
	}()
	return d, nil
}

// stopDiscovery ends d's loop and releases it.
func (a *Gateway) stopDiscovery(d *discoveryRun) {
	d.stop()
	<-d.done
	d.src.Close()
	for _, c := range d.src.Collectors() {
		a.Registry.Unregister(c)
	}
}

// followDiscovery refreshes on discovery's interval and puts every change
// into the inventory until ctx ends.
func (a *Gateway) followDiscovery(ctx context.Context, src *discovery.Source) {
	done := make(chan struct{})
	go func() { src.Run(ctx); close(done) }()
	drains := time.NewTicker(maintenanceCheckEvery)
	defer drains.Stop()
	for {
		select {
		case <-ctx.Done():
			<-done
			return
		case <-src.Changed():
			a.Inventory.SetDiscovered(src.Nodes())
			a.discoveryDrains(src)
		case <-drains.C:
			a.discoveryDrains(src)
		}
	}
}

// listen opens a listener through Options.Listen.
func (a *Gateway) listen(network, addr string, create func() (net.Listener, error)) (net.Listener, error) {
	if a.o.Listen == nil {
		return create()
	}
	return a.o.Listen(network, addr, create)
}

// Listen opens the SSH listener (gateway.listen) and the admin API's
// (gateway.admin_socket, gateway.admin_listen).
func (a *Gateway) Listen() error {
	cfg := a.Config()
	ln, err := a.listen("tcp", cfg.Gateway.Listen, func() (net.Listener, error) { return net.Listen("tcp", cfg.Gateway.Listen) })
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	adm, err := admin.Listen(cfg.Gateway, admin.Options{Source: a, Registry: a.Registry, Log: a.log,
		Audit: a.Audit, Gateway: cfg.Gateway.Name, Lifecycle: a.o.Lifecycle, Listen: a.o.Listen})
	if err != nil {
		ln.Close()
		if errors.Is(err, os.ErrPermission) {
			err = fmt.Errorf("%w (gateway.admin_socket must be a path this user may create, e.g. under systemd's RuntimeDirectory; or off)", err)
		}
		return err
	}
	a.ln, a.admin = ln, adm
	return nil
}

// Addr is the SSH listener's address (after Listen).
func (a *Gateway) Addr() net.Addr { return a.ln.Addr() }

// AdminAddrs are the admin API's listeners (after Listen).
func (a *Gateway) AdminAddrs() []string { return a.admin.Addrs() }

// Serve serves SSH and the admin API on what Listen opened, and tunes the
// garbage collector (unless GOGC is set), until ctx ends or Close is
// called. After StopAccepting it serves the admin API only (unless the
// listeners were handed over) and the sessions it has.
func (a *Gateway) Serve(ctx context.Context) error {
	if a.ln == nil {
		return errors.New("assembly: Serve before Listen")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gcDone := make(chan struct{})
	go func() { gctune.Run(ctx, gctune.Default, os.Getenv("GOGC")); close(gcDone) }()
	admErr := make(chan error, 1)
	go func() { admErr <- a.admin.Run(ctx) }()
	err := a.SSH.Serve(ctx, a.ln)
	select {
	case <-ctx.Done():
	case <-a.done:
		cancel()
	}
	<-gcDone
	return errors.Join(err, <-admErr)
}

// Run serves (Serve) until ctx ends or Close is called, then closes
// everything: the sessions end with it.
func (a *Gateway) Run(ctx context.Context) error {
	err := a.Serve(ctx)
	a.log.Info("gateway stopping", "sessions", a.SSH.SessionCount())
	return errors.Join(err, a.Close())
}

// StopAccepting closes the SSH listener; with handedOver the admin
// listeners too (without removing the socket: the new process serves
// them). Connections being set up and sessions go on.
//
// Without a successor the listening socket itself stops listening
// (shutdown(2)): a copy of it kept to hand over at an upgrade would
// otherwise keep it open, and clients would wait in its backlog instead
// of being refused and trying another gateway.
func (a *Gateway) StopAccepting(handedOver bool) {
	if !handedOver && a.ln != nil {
		if err := stopListening(a.ln); err != nil {
			a.log.Warn("stop listening", "err", err)
		}
	}
	a.SSH.StopAccepting()
	if handedOver && a.admin != nil {
		a.admin.Release()
	}
}

// stopListening shuts a listening socket down for every descriptor of it.
func stopListening(ln net.Listener) error {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = syscall.Shutdown(int(fd), syscall.SHUT_RD) }); err != nil {
		return err
	}
	return serr
}

// Close stops the gateway (ending its sessions), its admin API and
// background loops, leaves the cluster, flushes the audit trail and closes
// the directory. Later calls return the first call's result.
func (a *Gateway) Close() error {
	a.closed.Do(func() {
		close(a.done)
		var errs []error
		if a.SSH != nil {
			errs = append(errs, a.SSH.Close())
		}
		if a.admin != nil {
			errs = append(errs, a.admin.Close())
		}
		a.change.Lock()
		defer a.change.Unlock()
		if a.stop != nil {
			a.stop()
		}
		a.loops.Wait()
		if a.disc != nil {
			a.disc.src.Close()
		}
		if a.Audit != nil {
			errs = append(errs, a.Audit.Close())
		}
		if s := a.auditS3.Load(); s != nil {
			errs = append(errs, a.closeAuditS3(s, auditS3FlushTimeout))
		}
		if cl := a.cluster.Load(); cl != nil {
			errs = append(errs, cl.Close())
		}
		if p := a.cur.Load(); p != nil && p.dir != nil {
			errs = append(errs, p.dir.Close())
		}
		a.err = errors.Join(errs...)
	})
	return a.err
}

// clusterMetrics are the gossip member's metrics, of whichever member is
// current (a failed handover starts a new one).
type clusterMetrics struct{ a *Gateway }

func (m clusterMetrics) Describe(ch chan<- *prometheus.Desc) {
	if cl := m.a.cluster.Load(); cl != nil {
		for _, c := range cl.Collectors() {
			c.Describe(ch)
		}
	}
}

func (m clusterMetrics) Collect(ch chan<- prometheus.Metric) {
	if cl := m.a.cluster.Load(); cl != nil {
		for _, c := range cl.Collectors() {
			c.Collect(ch)
		}
	}
}

// peers are the other gateways as the SSH server sees them: through the
// current gossip member, plus the sessions the previous process of this
// gateway still relays (the cluster counts them as this gateway's, which
// the server counts itself).
type peers struct{ a *Gateway }

var _ gateway.Peers = peers{}

func (p peers) SessionsElsewhere(user string) int {
	n := p.a.Router.SessionsInherited(user)
	if cl := p.a.cluster.Load(); cl != nil {
		n += cl.SessionsElsewhere(user)
	}
	return n
}

func (p peers) Banned(key string) (time.Time, bool) {
	if cl := p.a.cluster.Load(); cl != nil {
		return cl.Banned(key)
	}
	return time.Time{}, false
}

func (p peers) Ban(key string, until time.Time, reason string) error {
	if cl := p.a.cluster.Load(); cl != nil {
		return cl.Ban(key, until, reason)
	}
	return nil
}

// logUserCA says which key login nodes must trust for this gateway's
// logins: at the start and after a reload that changed it.
func (a *Gateway) logUserCA(gateway string) {
	pub, kind := a.SSH.UserCA()
	a.log.Info("user CA: login nodes must trust this key (TrustedUserCAKeys) for this gateway's logins",
		"gateway", gateway, "key", kind, "fingerprint", ssh.FingerprintSHA256(pub),
		"public_key", strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))))
}

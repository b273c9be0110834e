// Package assembly puts a whole gateway process together from its
// configuration: the directory, HyperPod discovery, the gossip cluster, the
// audit trail, the node inventory and its live view, the SSH server, the
// admin API, the listeners, Prometheus metrics and GC tuning. `frontdoor
// gateway` and the tests build gateways only through it, so what the tests
// run is what production runs.
//
// Build makes the parts; Listen opens the sockets; Run serves until its
// context ends; Close releases everything, in the reverse order.
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
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	"github.com/frontdoor-hpc/frontdoor/internal/gctune"
	"github.com/frontdoor-hpc/frontdoor/internal/inventory"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/internal/usage"
)

// Gateway is a gateway process's parts.
type Gateway struct {
	// SSH is the SSH server.
	SSH       *gateway.Gateway
	Config    *config.Config
	Directory directory.Directory
	Inventory *inventory.Inventory
	Router    *inventory.Router
	// Cluster is nil without a cluster section.
	Cluster *cluster.Cluster
	Audit   *audit.Logger
	// AuditS3 is set with an audit.s3 section: the audit logger then also
	// ships every event to the bucket.
	AuditS3 *s3sink.Sink
	// Discovery is set with a discovery section: it keeps the inventory in
	// step with the HyperPod cluster.
	Discovery *discovery.Source
	// Registry holds every part's metrics; the admin API serves it.
	Registry *prometheus.Registry
	// Reloads keeps the last reload's result for the status and the
	// metrics: the reload code calls Reloads.Record.
	Reloads *ReloadLog
	// Report fills the status parts other code owns (status.go).
	Report Reporters

	log      *slog.Logger
	started  time.Time
	refusals *recentRefusals
	ln       net.Listener
	admin    *admin.Server
	stop     context.CancelFunc // ends the background loops
	loops    sync.WaitGroup
	closed   sync.Once
	err      error
}

// auditS3FlushTimeout bounds the upload of the spool at shutdown; what is
// left is uploaded at the next start.
const auditS3FlushTimeout = 30 * time.Second

// Build makes every part the configuration names (ctx bounds the first
// discovery refresh and the first gossip join) and starts their background
// loops. Close releases all of it.
func Build(ctx context.Context, cfg *config.Config, log *slog.Logger) (_ *Gateway, err error) {
	if log == nil {
		log = slog.Default()
	}
	bg, stop := context.WithCancel(context.Background())
	a := &Gateway{Config: cfg, log: log, stop: stop, Registry: prometheus.NewRegistry(), started: time.Now(), Reloads: newReloadLog()}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if a.Directory, err = source.Open(cfg.Directory, log); err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	if c, ok := a.Directory.(interface{ Collectors() []prometheus.Collector }); ok {
		a.Registry.MustRegister(c.Collectors()...) // AD: its cache and change watch
	}
	nodeKeys, err := node.LoadHostKeys(cfg.Backend.KnownHosts, cfg.Backend.InsecureIgnoreHostKeys)
	if err != nil {
		return nil, err
	}
	a.Inventory = inventory.New(cfg.Nodes, nodeKeys, log.With("component", "inventory"))
	if cfg.Discovery != nil {
		if a.Discovery, err = discovery.New(ctx, *cfg.Discovery, discovery.Options{Logger: log.With("component", "discovery")}); err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		// Start with what the cluster has now, if the API answers; the
		// loop keeps trying otherwise.
		if err := a.Discovery.Refresh(ctx); err != nil {
			log.Warn("discovery: first refresh failed; starting with the configured nodes only", "err", err)
		}
		a.Inventory.SetDiscovered(a.Discovery.Nodes())
		a.Registry.MustRegister(a.Discovery.Collectors()...)
		a.loop(bg, a.followDiscovery)
	}
	if cfg.Cluster != nil {
		a.Cluster, err = cluster.Start(ctx, *cfg.Cluster, cluster.Options{Role: cluster.RoleGateway,
			Logger: log.With("component", "cluster"), Inventory: a.Inventory})
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		a.Registry.MustRegister(a.Cluster.Collectors()...)
	}
	if a.Audit, err = audit.Open(cfg.Audit.File, log); err != nil {
		return nil, err
	}
	a.Registry.MustRegister(a.Audit.Collectors()...)
	if cfg.Audit.S3 != nil {
		if a.AuditS3, err = s3sink.New(ctx, *cfg.Audit.S3, cfg.Gateway.Name, s3sink.Options{Logger: log.With("component", "audit-s3")}); err != nil {
			return nil, fmt.Errorf("audit s3: %w", err)
		}
		a.Audit.AddSink(a.AuditS3)
		a.Registry.MustRegister(a.AuditS3.Collectors()...)
	}
	a.Router = inventory.NewRouter(a.Inventory, a.Cluster, cfg.Route.StaleAfter)
	a.loop(bg, a.Router.Run)
	deps := gateway.Deps{Logger: log, Directory: a.Directory, Router: a.Router, NodeKeys: nodeKeys, Audit: a.Audit}
	if a.Cluster != nil {
		deps.Peers = a.Cluster
	}
	if sl := cfg.Slurm; sl != nil {
		client := sl.Client()
		deps.GPUUsage = &slurm.UsageCache{Client: client, TTL: sl.UsageCache, Wait: sl.UsageTimeout}
		if len(cfg.Usage.Budgets) > 0 {
			// A month of accounting is a large read: twice the timeout.
			slow := *client
			slow.Timeout = 2 * sl.Timeout
			w := usage.NewBudgetWatch(&slow, cfg.Usage, log.With("component", "budgets"))
			deps.Budget = w.Warning
			a.loop(bg, w.Run)
		}
	}
	if a.SSH, err = gateway.New(cfg, deps); err != nil {
		return nil, err
	}
	a.Registry.MustRegister(a.SSH.Collectors()...)
	a.Registry.MustRegister(ca.Collectors()...)
	caPub, caKind := a.SSH.UserCA()
	log.Info("user CA: login nodes must trust this key (TrustedUserCAKeys) for this gateway's logins",
		"gateway", cfg.Gateway.Name, "key", caKind, "fingerprint", ssh.FingerprintSHA256(caPub),
		"public_key", strings.TrimSpace(string(ssh.MarshalAuthorizedKey(caPub))))
	a.Registry.MustRegister(a.statusCollectors()...)
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.refusals = newRecentRefusals(func() map[string]float64 { return refusalTotals(a.Registry) }, a.started)
	a.loop(bg, a.refusals.run)
	return a, nil
}

// loop runs f in the background until Close.
func (a *Gateway) loop(ctx context.Context, f func(context.Context)) {
	a.loops.Add(1)
	go func() {
		defer a.loops.Done()
		f(ctx)
	}()
}

// followDiscovery refreshes on discovery's interval and puts every change
// into the inventory until ctx ends.
func (a *Gateway) followDiscovery(ctx context.Context) {
	done := make(chan struct{})
	go func() { a.Discovery.Run(ctx); close(done) }()
	for {
		select {
		case <-ctx.Done():
			<-done
			return
		case <-a.Discovery.Changed():
			a.Inventory.SetDiscovered(a.Discovery.Nodes())
		}
	}
}

// Listen opens the SSH listener (gateway.listen) and the admin API's
// (gateway.admin_socket, gateway.admin_listen).
func (a *Gateway) Listen() error {
	ln, err := net.Listen("tcp", a.Config.Gateway.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	adm, err := admin.Listen(a.Config.Gateway, admin.Options{Source: a, Registry: a.Registry, Log: a.log,
		Audit: a.Audit, Gateway: a.Config.Gateway.Name})
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

// Run serves SSH and the admin API on what Listen opened, and tunes the
// garbage collector (unless GOGC is set), until ctx ends or Close is
// called; then it closes everything.
func (a *Gateway) Run(ctx context.Context) error {
	if a.ln == nil {
		return errors.New("assembly: Run before Listen")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gcDone := make(chan struct{})
	go func() { gctune.Run(ctx, gctune.Default, os.Getenv("GOGC")); close(gcDone) }()
	admErr := make(chan error, 1)
	go func() { admErr <- a.admin.Run(ctx) }()
	err := a.SSH.Serve(ctx, a.ln)
	a.log.Info("gateway stopping", "sessions", len(a.SSH.Sessions()))
	cancel()
	<-gcDone
	return errors.Join(err, a.Close(), <-admErr)
}

// Close stops the gateway (ending its sessions), its admin API and
// background loops, leaves the cluster, flushes the audit trail and closes
// the directory. Later calls return the first call's result.
func (a *Gateway) Close() error {
	a.closed.Do(func() {
		var errs []error
		if a.SSH != nil {
			errs = append(errs, a.SSH.Close())
		}
		if a.admin != nil {
			errs = append(errs, a.admin.Close())
		}
		if a.stop != nil {
			a.stop()
		}
		a.loops.Wait()
		if a.Discovery != nil {
			a.Discovery.Close()
		}
		if a.Audit != nil {
			errs = append(errs, a.Audit.Close())
		}
		if a.AuditS3 != nil {
			ctx, cancel := context.WithTimeout(context.Background(), auditS3FlushTimeout)
			errs = append(errs, a.AuditS3.Close(ctx))
			cancel()
		}
		if a.Cluster != nil {
			errs = append(errs, a.Cluster.Close())
		}
		if a.Directory != nil {
			errs = append(errs, a.Directory.Close())
		}
		a.err = errors.Join(errs...)
	})
	return a.err
}

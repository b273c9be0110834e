package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
)

// Assembled is a gateway with the parts Build made for it. `frontdoor
// gateway`, the test harness and the end-to-end suites all build gateways
// this one way, so what the tests run is what production runs.
type Assembled struct {
	*Gateway
	Directory directory.Directory
	Cluster   *cluster.Cluster // nil without a cluster section
	// Audit and AuditS3 are set with an audit.s3 section: the audit
	// logger then also ships every event to the bucket.
	Audit   *audit.Logger
	AuditS3 *s3sink.Sink
	// Discovery is set with a discovery section: it keeps the node
	// inventory in step with the HyperPod cluster.
	Discovery *discovery.Source
	stopDisc  context.CancelFunc
	discDone  chan struct{}
}

// auditS3FlushTimeout bounds the upload of the spool at shutdown; what is
// left is uploaded at the next start.
const auditS3FlushTimeout = 30 * time.Second

// Build opens the directory the configuration names, joins the gossip
// cluster if it has a cluster section (ctx bounds the first join), and
// builds the gateway. Close releases all of it.
func Build(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Assembled, error) {
	if log == nil {
		log = slog.Default()
	}
	dir, err := source.Open(cfg.Directory, log)
	if err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	a := &Assembled{Directory: dir}
	nk, err := newHostKeys(cfg.Backend.KnownHosts, cfg.Backend.InsecureIgnoreHostKeys)
	if err != nil {
		dir.Close()
		return nil, err
	}
	inv := newInventory(cfg.Nodes, nk, log.With("component", "inventory"))
	if cfg.Discovery != nil {
		if a.Discovery, err = discovery.New(ctx, *cfg.Discovery, discovery.Options{Logger: log.With("component", "discovery")}); err != nil {
			dir.Close()
			return nil, fmt.Errorf("discovery: %w", err)
		}
		// Start with what the cluster has now, if the API answers; the
		// loop below keeps trying otherwise.
		if err := a.Discovery.Refresh(ctx); err != nil {
			log.Warn("discovery: first refresh failed; starting with the configured nodes only", "err", err)
		}
		inv.setDiscovered(a.Discovery.Nodes())
		a.startDiscovery(inv)
	}
	if cfg.Cluster != nil {
		a.Cluster, err = cluster.Start(ctx, *cfg.Cluster, cluster.Options{Role: cluster.RoleGateway,
			Logger: log.With("component", "cluster"), Inventory: inv})
		if err != nil {
			a.closeParts()
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	if cfg.Audit.S3 != nil {
		a.AuditS3, err = s3sink.New(ctx, *cfg.Audit.S3, cfg.Gateway.Name, s3sink.Options{Logger: log.With("component", "audit-s3")})
		if err == nil {
			a.Audit, err = audit.Open(cfg.Audit.File, log)
		}
		if err != nil {
			a.closeParts()
			return nil, fmt.Errorf("audit s3: %w", err)
		}
		a.Audit.AddSink(a.AuditS3)
	}
	opts := Options{Logger: log, Directory: dir, Cluster: a.Cluster, Audit: a.Audit, nodeKeys: nk, inv: inv}
	var bud *budgets
	if cfg.Slurm != nil {
		opts.GPUUsage = newSlurmUsage(*cfg.Slurm)
		if len(cfg.Usage.Budgets) > 0 {
			bud = newBudgets(*cfg.Slurm, cfg.Usage, log.With("component", "budgets"))
			opts.Budget = bud.warning
		}
	}
	a.Gateway, err = New(cfg, opts)
	if err == nil && bud != nil {
		go bud.run(a.Gateway.closing)
	}
	if err == nil && a.Discovery != nil {
		for _, c := range a.Discovery.Collectors() {
			a.Gateway.Registry().MustRegister(c)
		}
	}
	if err != nil {
		a.closeParts()
		return nil, err
	}
	if a.AuditS3 != nil {
		a.Gateway.Registry().MustRegister(a.AuditS3.Collectors()...)
	}
	return a, nil
}

// Close stops the gateway (ending its sessions), leaves the cluster and
// closes the directory.
func (a *Assembled) Close() error {
	err := a.Gateway.Close()
	return errors.Join(err, a.closeParts())
}

// startDiscovery refreshes on discovery's interval and puts every change
// into the inventory until Close.
func (a *Assembled) startDiscovery(inv *inventory) {
	ctx, cancel := context.WithCancel(context.Background())
	a.stopDisc, a.discDone = cancel, make(chan struct{})
	go func() {
		defer close(a.discDone)
		done := make(chan struct{})
		go func() { a.Discovery.Run(ctx); close(done) }()
		for {
			select {
			case <-ctx.Done():
				<-done
				return
			case <-a.Discovery.Changed():
				inv.setDiscovered(a.Discovery.Nodes())
			}
		}
	}()
}

func (a *Assembled) closeParts() error {
	var errs []error
	if a.Discovery != nil {
		if a.stopDisc != nil {
			a.stopDisc()
			<-a.discDone
		}
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
	errs = append(errs, a.Directory.Close())
	return errors.Join(errs...)
}

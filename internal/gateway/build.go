package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/ad"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/static"
)

// Assembled is a gateway with the parts Build made for it. `frontdoor
// gateway`, the test harness and the end-to-end suites all build gateways
// this one way, so what the tests run is what production runs.
type Assembled struct {
	*Gateway
	Directory directory.Directory
	Cluster   *cluster.Cluster // nil without a cluster section
}

// Build opens the directory the configuration names, joins the gossip
// cluster if it has a cluster section (ctx bounds the first join), and
// builds the gateway. Close releases all of it.
func Build(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Assembled, error) {
	if log == nil {
		log = slog.Default()
	}
	dir, err := OpenDirectory(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	a := &Assembled{Directory: dir}
	nk, err := newHostKeys(cfg.Backend.KnownHosts, cfg.Backend.InsecureIgnoreHostKeys)
	if err != nil {
		dir.Close()
		return nil, err
	}
	if cfg.ClusterEnabled() {
		a.Cluster, err = cluster.Start(ctx, cfg.Cluster, cluster.Options{Role: cluster.RoleGateway,
			Logger: log.With("component", "cluster"), Inventory: newInventory(cfg.Nodes, nk)})
		if err != nil {
			dir.Close()
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	opts := Options{Logger: log, Directory: dir, Cluster: a.Cluster, nodeKeys: nk}
	if cfg.SlurmEnabled() {
		opts.GPUUsage = newSlurmUsage(cfg.Slurm)
	}
	a.Gateway, err = New(cfg, opts)
	if err != nil {
		a.closeParts()
		return nil, err
	}
	return a, nil
}

// OpenDirectory builds the identity source the configuration names.
func OpenDirectory(cfg *config.Config, log *slog.Logger) (directory.Directory, error) {
	switch cfg.Directory.Kind {
	case "static":
		return static.New(cfg.Directory.Static.File)
	case "ad":
		return ad.New(cfg.Directory.AD, log.With("directory", "ad"))
	}
	return nil, fmt.Errorf("directory kind %q is not built in", cfg.Directory.Kind)
}

// Close stops the gateway (ending its sessions), leaves the cluster and
// closes the directory.
func (a *Assembled) Close() error {
	err := a.Gateway.Close()
	return errors.Join(err, a.closeParts())
}

func (a *Assembled) closeParts() error {
	var errs []error
	if a.Cluster != nil {
		errs = append(errs, a.Cluster.Close())
	}
	errs = append(errs, a.Directory.Close())
	return errors.Join(errs...)
}

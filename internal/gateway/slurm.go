package gateway

import (
	"context"
	"errors"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
)

// slurmUsage answers banner lookups from one squeue read shared by all
// logins (slurm.UsageCache): a slow or dead slurmctld costs a login at
// most slurm.usage_timeout and shows as "unknown".
type slurmUsage struct{ c *slurm.UsageCache }

var errUsageUnknown = errors.New("GPU use unknown: Slurm did not answer in time")

func newSlurmUsage(cfg config.Slurm) slurmUsage {
	return slurmUsage{c: &slurm.UsageCache{
		Client: &slurm.Client{Conf: cfg.Conf, Cluster: cfg.Cluster, BinDir: cfg.BinDir, Timeout: cfg.Timeout},
		TTL:    cfg.UsageCache, Wait: cfg.UsageTimeout,
	}}
}

func (s slurmUsage) GPUsHeld(ctx context.Context, user, account string) (int, int, error) {
	u := s.c.Lookup(ctx, user, account)
	if !u.Known {
		return 0, 0, errUsageUnknown
	}
	return u.User, u.Account, nil
}

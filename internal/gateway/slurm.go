package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/internal/usage"
)

// slurmUsage answers banner lookups from one squeue read shared by all
// logins (slurm.UsageCache): a slow or dead slurmctld costs a login at
// most slurm.usage_timeout and shows as "unknown".
type slurmUsage struct{ c *slurm.UsageCache }

var errUsageUnknown = errors.New("GPU use unknown: Slurm did not answer in time")

func newSlurmUsage(cfg slurm.Config) slurmUsage {
	return slurmUsage{c: &slurm.UsageCache{Client: cfg.Client(), TTL: cfg.UsageCache, Wait: cfg.UsageTimeout}}
}

// usageWait is how long a banner waits for GPU use: slurm.usage_timeout,
// 0 without a slurm section (no GPUUsage then, nothing waits).
func usageWait(cfg *config.Config) time.Duration {
	if cfg.Slurm == nil {
		return 0
	}
	return cfg.Slurm.UsageTimeout
}

func (s slurmUsage) GPUsHeld(ctx context.Context, user, account string) (int, int, error) {
	u := s.c.Lookup(ctx, user, account)
	if !u.Known {
		return 0, 0, errUsageUnknown
	}
	return u.User, u.Account, nil
}

// budgetEvery is how often accounts' spend is recomputed for banners:
// a month's sacct is not something to run per login.
const budgetEvery = 10 * time.Minute

// budgets knows each account's GPU spend this calendar month (from
// Slurm's accounting, priced by usage.rates) for the banner's budget line.
// It is refreshed in the background; a login only reads it.
type budgets struct {
	client *slurm.Client
	cfg    usage.Config
	log    *slog.Logger

	mu    sync.Mutex // mu protects spent
	spent map[string]float64
}

func newBudgets(sl slurm.Config, cfg usage.Config, log *slog.Logger) *budgets {
	client := sl.Client()
	client.Timeout *= 2 // a month of jobs is a large read
	return &budgets{client: client, cfg: cfg, log: log, spent: map[string]float64{}}
}

func (b *budgets) run(ctx context.Context) {
	t := time.NewTicker(budgetEvery)
	defer t.Stop()
	for {
		if err := b.refresh(ctx); err != nil && ctx.Err() == nil {
			b.log.Warn("budgets: could not read this month's jobs; banners keep the last figures", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (b *budgets) refresh(ctx context.Context) error {
	now := time.Now()
	from, to := usage.MonthWindow(now)
	jobs, err := b.client.Jobs(ctx, from, now)
	if err != nil {
		return err
	}
	rep := usage.Aggregate(usage.Input{From: from, To: to, Now: now, By: usage.ByAccount, Jobs: jobs, Config: b.cfg})
	spent := map[string]float64{}
	for _, r := range rep.Budgets {
		spent[r.Account] = r.Spent
	}
	b.mu.Lock()
	b.spent = spent
	b.mu.Unlock()
	return nil
}

// warning is the banner line for account ("" when within budget or
// unknown).
func (b *budgets) warning(account string) string {
	bud, ok := b.cfg.Budgets[account]
	if !ok {
		return ""
	}
	b.mu.Lock()
	spent, known := b.spent[account]
	b.mu.Unlock()
	if !known {
		return ""
	}
	return usage.BudgetWarning(account, spent, bud)
}

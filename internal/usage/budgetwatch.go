package usage

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
)

// budgetEvery is how often accounts' spend is recomputed for banners:
// a month's sacct is not something to run per login.
const budgetEvery = 10 * time.Minute

// BudgetWatch knows each account's GPU spend this calendar month (from
// Slurm's accounting, priced by the rates) for the login banner's budget
// line. It is refreshed in the background (Run); a login only reads it
// (Warning).
type BudgetWatch struct {
	client *slurm.Client
	cfg    Config
	log    *slog.Logger

	mu    sync.Mutex // mu protects spent
	spent map[string]float64
}

// NewBudgetWatch reads jobs with client and prices them by cfg.
func NewBudgetWatch(client *slurm.Client, cfg Config, log *slog.Logger) *BudgetWatch {
	return &BudgetWatch{client: client, cfg: cfg, log: log, spent: map[string]float64{}}
}

// Run refreshes the spend every budgetEvery until ctx ends.
func (b *BudgetWatch) Run(ctx context.Context) {
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

func (b *BudgetWatch) refresh(ctx context.Context) error {
	now := time.Now()
	from, to := MonthWindow(now)
	jobs, err := b.client.Jobs(ctx, from, now)
	if err != nil {
		return err
	}
	rep := Aggregate(Input{From: from, To: to, Now: now, By: ByAccount, Jobs: jobs, Config: b.cfg})
	spent := map[string]float64{}
	for _, r := range rep.Budgets {
		spent[r.Account] = r.Spent
	}
	b.mu.Lock()
	b.spent = spent
	b.mu.Unlock()
	return nil
}

// Warning is the banner line for account ("" when within budget or
// unknown).
func (b *BudgetWatch) Warning(account string) string {
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
	return BudgetWarning(account, spent, bud)
}

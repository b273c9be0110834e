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

// billRetry is how long the watch waits after Cost Explorer failed
// before it asks again (every request is charged; banners fall back to
// the estimate meanwhile).
const billRetry = time.Hour

// BudgetWatch knows each account's spend this calendar month for the
// login banner's budget line. It is refreshed in the background (Run); a
// login only reads it (Warning).
//
// The spend is the actual month-to-date bill from Cost Explorer when
// usage.aws is configured (the account's tagged cost and its GPU-hour
// share of the shared compute cost, AddActual; Cost Explorer answers are
// cached for cache_ttl, so a gateway sends about two requests a day),
// else, or while Cost Explorer cannot be read, the estimate: the
// account's jobs priced by the rates. Neither counts login-node cost
// shared by sessions: the gateway does not read the audit trail for this.
type BudgetWatch struct {
	client *slurm.Client
	cfg    Config
	log    *slog.Logger

	// Touched by Run's goroutine only.
	bills     *BillSource
	billAfter time.Time // no Cost Explorer request before this

	mu     sync.Mutex // mu protects the following
	spent  map[string]float64
	actual map[string]float64 // the bill's share, this month; nil: unknown
	month  time.Time          // the month actual is of
}

// NewBudgetWatch reads jobs with client and prices them by cfg.
func NewBudgetWatch(client *slurm.Client, cfg Config, log *slog.Logger) *BudgetWatch {
	return &BudgetWatch{client: client, cfg: cfg, log: log, spent: map[string]float64{}}
}

// Run refreshes the spend every budgetEvery until ctx ends.
func (b *BudgetWatch) Run(ctx context.Context) {
	t := time.NewTicker(budgetEvery)
	defer t.Stop()
	defer func() {
		if b.bills != nil {
			b.bills.Close()
		}
	}()
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
	actual := b.actualSpend(ctx, &rep, from, to, now)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent = spent
	if actual != nil {
		b.actual, b.month = actual, from
	} else if !b.month.Equal(from) {
		b.actual = nil // last month's bill says nothing of this one
	}
	return nil
}

// actualSpend shares this month's bill (nil when it is not configured or
// cannot be read now).
func (b *BudgetWatch) actualSpend(ctx context.Context, rep *Report, from, to, now time.Time) map[string]float64 {
	if b.cfg.AWS == nil || now.Before(b.billAfter) {
		return nil
	}
	if b.bills == nil {
		s, err := NewBillSource(ctx, *b.cfg.AWS, b.cfg.Currency)
		if err != nil {
			b.log.Warn("budgets: no Cost Explorer client; banners use the estimate", "err", err)
			b.billAfter = now.Add(billRetry)
			return nil
		}
		b.bills = s
	}
	bill, err := b.bills.Bill(ctx, from, to, false)
	if err == nil {
		err = AddActual(rep, bill)
	}
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn("budgets: no month-to-date bill from Cost Explorer; banners use the estimate", "err", err, "retry_in", billRetry)
		}
		b.billAfter = now.Add(billRetry)
		return nil
	}
	out := map[string]float64{}
	for _, r := range rep.Budgets {
		if r.Actual != nil {
			out[r.Account] = r.Actual.Float()
		}
	}
	return out
}

// Warning is the banner line for account ("" when within budget or
// unknown).
func (b *BudgetWatch) Warning(account string) string {
	bud, ok := b.cfg.Budgets[account]
	if !ok {
		return ""
	}
	b.mu.Lock()
	spent, known := b.actual[account]
	if !known {
		spent, known = b.spent[account]
	}
	b.mu.Unlock()
	if !known {
		return ""
	}
	return BudgetWarning(account, spent, bud)
}

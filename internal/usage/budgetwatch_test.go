package usage_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient/awsjsontest"
	"github.com/frontdoor-hpc/frontdoor/internal/usage"
	"github.com/frontdoor-hpc/frontdoor/internal/usage/costtest"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// With usage.aws, the banner's budget line counts the month-to-date bill
// (the account's tagged cost; not the gateways' cost, which is charged to
// no one), read in the background with one Cost Explorer request, not the
// estimate (here nothing: no rates). Jobs come from the real Slurm.
func TestBudgetWatchUsesTheBill(t *testing.T) {
	sc := needCluster(t)
	awsjsontest.Setenv(t.Setenv)
	f := costtest.Start(t, "us-east-1")
	first, _ := usage.MonthWindow(time.Now())
	f.SetCosts(
		costtest.Cost{Day: first, Cluster: "ml", Account: "laba", Role: "compute", Unblended: "850"},
		costtest.Cost{Day: first, Cluster: "ml", Account: "labb", Role: "gateway", Unblended: "999"},
	)
	cfg := usage.DefaultConfig()
	a := usage.DefaultAWSConfig()
	a.Cluster, a.Endpoint, a.CacheDir = "ml", f.URL, "off"
	cfg.AWS = &a
	cfg.Budgets = map[string]usage.Budget{"laba": {Monthly: 1000, WarnAt: 0.8}, "labb": {Monthly: 1000, WarnAt: 0.8}}
	w := usage.NewBudgetWatch(sc, cfg, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	err := harness.WaitFor(context.Background(), time.Minute, func() error {
		if l := w.Warning("laba"); !strings.Contains(l, "85%") {
			return fmt.Errorf("laba's banner line %q", l)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := w.Warning("labb"); l != "" {
		t.Errorf("labb: %q (the gateway cost is charged to no one)", l)
	}
	if n := f.Calls("GetCostAndUsage"); n != 1 {
		t.Errorf("%d Cost Explorer requests, want 1", n)
	}
}

package usage_test

import (
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/internal/usage"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf"
)

// FuzzUsageConfig: a usage section that decodes and validates (as
// config.Parse does it) prices a month of jobs and sessions into figures
// that are all finite and never negative, whose costs add up, with
// budgets a status each and banner warnings of one line; and the report
// renders as a table, CSV, JSON and a chart. Seeds:
// testdata/fuzz/FuzzUsageConfig, configs/gateway.yaml's usage section and
// variations.
func FuzzUsageConfig(f *testing.F) {
	day := func(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }
	jobs := []slurm.Job{
		{ID: "1", User: "ann", Account: "vision", Partition: "h100", State: "COMPLETED", Start: day(2, 0), End: day(2, 5), GPUs: 8},
		{ID: "2", User: "bob", Account: "general", Partition: "general", State: "FAILED", Start: day(3, 0), End: day(3, 1), GPUs: 1},
		{ID: "3", User: "cat", Account: "nlp", Partition: "unpriced", State: "RUNNING", Start: day(29, 0), GPUs: 4},
		{ID: "4", User: "ann", Account: "vision", Partition: "h100", State: "CANCELLED", Start: time.Time{}, End: day(4, 0)},
	}
	ev := func(typ, id, user string, t time.Time) audit.Event {
		return audit.Event{Type: typ, Gateway: "gw1", Session: id, User: user, Node: "login1", Time: t}
	}
	events := []audit.Event{ev(audit.TypeSessionStart, "s1", "ann", day(2, 0)), ev(audit.TypeSessionEnd, "s1", "ann", day(2, 8)),
		ev(audit.TypeSessionStart, "s2", "bob", day(3, 0))}
	from, to := day(1, 0), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, section []byte) {
		cfg := usage.DefaultConfig()
		if _, err := yamlconf.Decode("usage.yaml", section, &cfg); err != nil || cfg.Validate() != nil {
			return
		}
		for _, by := range []string{usage.ByAccount, usage.ByUser} {
			r := usage.Aggregate(usage.Input{From: from, To: to, Now: to, By: by, Jobs: jobs, Events: events,
				UserAccount: map[string]string{"ann": "vision", "bob": "general"}, CapacityGPUs: cfg.CapacityGPUs, Config: cfg})
			figures := map[string]float64{"capacity": r.CapacityGPUHours, "allocated": r.AllocatedGPUHours, "idle": r.IdleGPUHours, "idle cost": r.IdleCost}
			for _, row := range append(r.Rows, r.Total) {
				for what, v := range map[string]float64{"session hours": row.SessionHours, "login node hours": row.LoginNodeHours,
					"GPU-hours": row.GPUHours, "unpriced": row.UnpricedGPUHours, "GPU cost": row.GPUCost, "login cost": row.LoginCost, "cost": row.Cost} {
					figures[row.Key+" "+what] = v
				}
				if math.Abs(row.Cost-(row.GPUCost+row.LoginCost)) > 1e-6*max(1, row.Cost) {
					t.Fatalf("%s: cost %v is not GPU %v + login %v", row.Key, row.Cost, row.GPUCost, row.LoginCost)
				}
			}
			for _, b := range r.Budgets {
				figures[b.Account+" budget"], figures[b.Account+" spent"], figures[b.Account+" fraction"] = b.Budget, b.Spent, b.Fraction
				if b.Status != usage.BudgetOK && b.Status != usage.BudgetWarn && b.Status != usage.BudgetOver {
					t.Fatalf("budget %s: status %q", b.Account, b.Status)
				}
				w := usage.BudgetWarning(b.Account, b.Spent, cfg.Budgets[b.Account])
				if strings.ContainsAny(w, "\r\n") || (w != "" && !strings.Contains(w, b.Account)) {
					t.Fatalf("budget warning %q", w)
				}
			}
			for what, v := range figures {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("%s = %v with usage section %q", what, v, section)
				}
			}
			for name, write := range map[string]func(io.Writer, usage.Report) error{"table": usage.WriteTable, "csv": usage.WriteCSV,
				"json": usage.WriteJSON, "svg": usage.WriteSVG} {
				if err := write(io.Discard, r); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		}
	})
}

// FuzzParseS3URL: an audit location the user types (frontdoor usage
// --audit s3://bucket/prefix) gives a bucket without blanks and a prefix
// without slashes at either end, that print and parse back the same.
func FuzzParseS3URL(f *testing.F) {
	f.Fuzz(func(t *testing.T, u string) {
		bucket, prefix, err := usage.ParseS3URL(u)
		if err != nil {
			return
		}
		if bucket == "" || strings.ContainsAny(bucket, " \t\n/") || prefix == "" || strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") {
			t.Fatalf("ParseS3URL(%q) = %q, %q", u, bucket, prefix)
		}
		b2, p2, err := usage.ParseS3URL("s3://" + bucket + "/" + prefix)
		if err != nil || b2 != bucket || p2 != prefix {
			t.Fatalf("ParseS3URL(%q) = %q, %q does not read back: %q, %q, %v", u, bucket, prefix, b2, p2, err)
		}
	})
}

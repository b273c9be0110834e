package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	fdusage "github.com/frontdoor-hpc/frontdoor/internal/usage"
)

func init() {
	register("budgets plan", "show how AWS Budgets differ from usage.budgets (changes nothing)", func(ctx context.Context, args []string) error {
		return runBudgets(ctx, "plan", args, os.Stdout)
	})
	register("budgets apply", "make AWS Budgets match usage.budgets: one budget per account, audited", func(ctx context.Context, args []string) error {
		return runBudgets(ctx, "apply", args, os.Stdout)
	})
}

const budgetsUsage = "frontdoor budgets plan|apply [--config FILE] [-o table|json] [--timeout D]"

func runBudgets(ctx context.Context, verb string, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("budgets "+verb, flag.ContinueOnError)
	path := fs.String("config", config.DefaultPath, "gateway configuration (usage section with aws and budgets; audit)")
	format := outputFlag(fs, tableJSON...)
	timeout := fs.Duration("timeout", 2*time.Minute, "limit for the whole command")
	if err := parseFlags(fs, args, budgetsUsage, format, tableJSON...); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: %s", errUsage, budgetsUsage)
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	if cfg.Usage.AWS == nil {
		return fmt.Errorf("%s has no usage.aws section: frontdoor keeps no AWS budgets without one (docs/usage.md)", *path)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	api, tr, err := fdusage.NewBudgetsClient(ctx, *cfg.Usage.AWS)
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	changes, err := fdusage.PlanBudgets(ctx, api, cfg.Usage)
	if err != nil {
		return err
	}
	if verb == "plan" {
		return printBudgetChanges(out, changes, *format == "json")
	}
	if fdusage.PendingBudgetChanges(changes) == 0 {
		return printBudgetChanges(out, changes, *format == "json")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	au, err := audit.Open(cfg.Audit.File, log)
	if err != nil {
		return err
	}
	defer au.Close()
	n, err := fdusage.ApplyBudgets(ctx, api, cfg.Usage, changes, au, "frontdoor budgets apply")
	if *format == "json" {
		if perr := printBudgetChanges(out, changes[:appliedPrefix(changes, n)], true); perr != nil {
			return perr
		}
	} else {
		for _, c := range changes[:appliedPrefix(changes, n)] {
			if c.Op != fdusage.BudgetConflict {
				fmt.Fprintln(out, "applied: "+c.String())
			}
		}
		for _, c := range changes {
			if c.Op == fdusage.BudgetConflict {
				fmt.Fprintln(out, "left alone: "+c.String())
			}
		}
	}
	return err
}

// appliedPrefix is how many of changes (conflicts included) precede the
// first one not applied, when n changes were.
func appliedPrefix(changes []fdusage.BudgetChange, n int) int {
	for i, c := range changes {
		if c.Op == fdusage.BudgetConflict {
			continue
		}
		if n == 0 {
			return i
		}
		n--
	}
	return len(changes)
}

// printBudgetChanges prints a plan as a diff (or JSON); "in step" when it
// changes nothing.
func printBudgetChanges(w io.Writer, changes []fdusage.BudgetChange, asJSON bool) error {
	if asJSON {
		if changes == nil {
			changes = []fdusage.BudgetChange{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(changes)
	}
	sym := map[string]string{fdusage.BudgetCreate: "+", fdusage.NotificationAdd: "+", fdusage.SubscriberAdd: "+",
		fdusage.BudgetDelete: "-", fdusage.NotificationRemove: "-", fdusage.SubscriberRemove: "-",
		fdusage.BudgetUpdate: "~", fdusage.BudgetConflict: "!"}
	for _, c := range changes {
		fmt.Fprintf(w, "%s %s\n", sym[c.Op], c)
	}
	if fdusage.PendingBudgetChanges(changes) == 0 {
		_, err := fmt.Fprintln(w, "AWS Budgets match usage.budgets; nothing to do.")
		return err
	}
	return nil
}

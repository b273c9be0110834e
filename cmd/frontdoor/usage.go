package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	fdusage "github.com/frontdoor-hpc/frontdoor/internal/usage"
)

func init() {
	register("usage", "usage and cost per group, account or user from the audit records and Slurm's accounting", func(ctx context.Context, args []string) error {
		return runUsage(ctx, args, os.Stdout, time.Now())
	})
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

const usageUsage = "frontdoor usage [--config FILE] [--from DATE] [--to DATE] [--by group|account|user] [-o table|csv|json] [--chart FILE.svg] [--audit PATH|s3://bucket/prefix]..."

func runUsage(ctx context.Context, args []string, out io.Writer, now time.Time) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	path := fs.String("config", config.DefaultPath, "gateway configuration file (usage, slurm, audit, directory, policy sections)")
	monthFrom, monthTo := fdusage.MonthWindow(now)
	fromS := fs.String("from", monthFrom.Format("2006-01-02"), "window start, UTC: YYYY-MM-DD or RFC 3339 (default: the first of this month)")
	toS := fs.String("to", monthTo.Format("2006-01-02"), "window end (exclusive), UTC: YYYY-MM-DD or RFC 3339")
	by := fs.String("by", fdusage.ByGroup, "group (policy rule), account (Slurm) or user")
	format := outputFlag(fs, "table", "csv", "json")
	chart := fs.String("chart", "", "also write an SVG chart to this file")
	timeout := fs.Duration("timeout", 5*time.Minute, "limit for the whole command")
	var sources multiFlag
	fs.Var(&sources, "audit", "audit records: a file (with its rotated copies), a directory or s3://bucket/prefix; repeatable (default: audit.file, and audit.s3 if configured)")
	if err := parseFlags(fs, args, usageUsage, format, "table", "csv", "json"); err != nil {
		return err
	}
	if fs.NArg() != 0 || (*by != fdusage.ByGroup && *by != fdusage.ByAccount && *by != fdusage.ByUser) {
		return fmt.Errorf("%w: %s", errUsage, usageUsage)
	}
	from, err := parseWhen(*fromS)
	if err != nil {
		return fmt.Errorf("%w: --from: %v", errUsage, err)
	}
	to, err := parseWhen(*toS)
	if err != nil {
		return fmt.Errorf("%w: --to: %v", errUsage, err)
	}
	if !from.Before(to) {
		return fmt.Errorf("%w: --from must be before --to", errUsage)
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	in := fdusage.Input{From: from, To: to, Now: now, By: *by, Config: cfg.Usage}
	var notes []string

	// Slurm: jobs and, unless configured, the GPU capacity.
	// A month of a busy cluster's accounting is a large read: each sacct
	// call gets at least 2 minutes (--timeout still bounds the whole).
	// Without a slurm section: the section's defaults (Slurm's own
	// slurm.conf, the commands on $PATH).
	sl := slurm.DefaultConfig()
	if cfg.Slurm != nil {
		sl = *cfg.Slurm
	}
	sc := sl.Client()
	sc.Timeout = max(sc.Timeout, 2*time.Minute)
	if in.Jobs, err = sc.Jobs(ctx, from, to); err != nil {
		return err
	}
	in.CapacityGPUs = cfg.Usage.CapacityGPUs
	if in.CapacityGPUs == 0 {
		nodes, err := sc.GPUCapacity(ctx)
		if err != nil {
			return fmt.Errorf("%w (or set usage.capacity_gpus)", err)
		}
		for _, n := range nodes {
			in.CapacityGPUs += n.GPUs
		}
		notes = append(notes, fmt.Sprintf("capacity %d GPUs is Slurm's now (sinfo); set usage.capacity_gpus for a cluster that changed in the window", in.CapacityGPUs))
	}

	// Audit records.
	if len(sources) == 0 {
		if cfg.Audit.File != "" {
			sources = append(sources, cfg.Audit.File)
		}
		if cfg.Audit.S3 != nil {
			sources = append(sources, "s3://"+cfg.Audit.S3.Bucket+"/"+cfg.Audit.S3.Prefix)
		}
		if len(sources) == 0 {
			notes = append(notes, "no audit records read (no audit.file or audit.s3; --audit names them): sessions not counted")
		}
	}
	rFrom, rTo := from.Add(-cfg.Usage.AuditLookback), to.Add(cfg.Usage.OpenSessionMax)
	keep := func(e audit.Event) { in.Events = append(in.Events, e) }
	for _, src := range sources {
		var st fdusage.ReadStats
		if strings.HasPrefix(src, "s3://") {
			st, err = readS3(ctx, cfg, src, rFrom, rTo, keep)
		} else {
			var files []string
			if files, err = fdusage.LocalFiles(src); err == nil {
				st, err = fdusage.ReadFiles(files, rFrom, rTo, keep)
			}
		}
		if err != nil {
			return err
		}
		if st.Bad > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d unreadable audit line(s) skipped", src, st.Bad))
		}
	}
	in.Events = fdusage.Dedup(in.Events)

	// Groups: the policy rule each user matches now.
	if *by == fdusage.ByGroup {
		groups, accounts, gnotes, err := classify(ctx, cfg, log, in)
		if err != nil {
			return err
		}
		in.UserGroup, in.UserAccount = groups, accounts
		notes = append(notes, gnotes...)
	}

	rep := fdusage.Aggregate(in)
	rep.Notes = append(rep.Notes, notes...)
	if *chart != "" {
		f, err := os.Create(*chart)
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		if err := fdusage.WriteSVG(f, rep); err != nil {
			f.Close()
			return fmt.Errorf("chart: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
	}
	switch *format {
	case "json":
		return fdusage.WriteJSON(out, rep)
	case "csv":
		return fdusage.WriteCSV(out, rep)
	}
	return fdusage.WriteTable(out, rep)
}

// parseWhen reads a UTC date (YYYY-MM-DD) or an RFC 3339 time.
func parseWhen(s string) (time.Time, error) {
	if t, err := time.ParseInLocation("2006-01-02", s, time.UTC); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither YYYY-MM-DD nor RFC 3339", s)
	}
	return t.UTC(), nil
}

// readS3 reads s3://bucket/prefix with the audit.s3 section's region,
// endpoint and path style (any bucket may be named).
func readS3(ctx context.Context, cfg *config.Config, src string, from, to time.Time, keep func(audit.Event)) (fdusage.ReadStats, error) {
	bucket, prefix, err := fdusage.ParseS3URL(src)
	if err != nil {
		return fdusage.ReadStats{}, fmt.Errorf("--audit: %w", err)
	}
	// Any bucket may be named; without an audit.s3 section, the SDK's
	// region and endpoint (the section's defaults).
	sc := s3sink.DefaultConfig()
	if cfg.Audit.S3 != nil {
		sc = *cfg.Audit.S3
	}
	sc.Bucket, sc.Prefix = bucket, prefix
	client, tr, err := s3sink.NewClient(ctx, sc)
	if err != nil {
		return fdusage.ReadStats{}, err
	}
	defer tr.CloseIdleConnections()
	return fdusage.ReadS3(ctx, client, bucket, prefix, from, to, time.Minute, keep)
}

// classify asks the directory for every user with usage and the policy
// for the rule they match now: the rule's name is their group, its Slurm
// account their account. A user the directory no longer has falls back to
// the rule of their latest session record (Aggregate does that).
func classify(ctx context.Context, cfg *config.Config, log *slog.Logger, in fdusage.Input) (groups, accounts map[string]string, notes []string, err error) {
	users := map[string]bool{}
	for _, j := range in.Jobs {
		users[j.User] = true
	}
	for _, e := range in.Events {
		users[e.User] = true
	}
	delete(users, "")
	if len(users) == 0 {
		return nil, nil, nil, nil
	}
	dir, err := source.Open(cfg.Directory, log)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("directory (needed for --by group; --by account needs none): %w", err)
	}
	defer dir.Close()
	groups, accounts = map[string]string{}, map[string]string{}
	var unknown []string
	for u := range users {
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		id, err := dir.Lookup(lctx, u)
		cancel()
		switch {
		case errors.Is(err, directory.ErrNoSuchUser), errors.Is(err, directory.ErrAccountDisabled), errors.Is(err, directory.ErrInvalidName):
			unknown = append(unknown, u)
			continue
		case err != nil:
			return nil, nil, nil, fmt.Errorf("directory: look up %s: %w", u, err)
		}
		d, _ := cfg.Policy.Evaluate(id.Name, id.Groups) // a deny rule still names the group
		if d.Rule != "" {
			groups[u] = d.Rule
		}
		if d.Slurm != nil && d.Slurm.Account != "" {
			accounts[u] = d.Slurm.Account
		}
	}
	if len(unknown) > 0 {
		notes = append(notes, fmt.Sprintf("%d user(s) not in the directory (or disabled), grouped by their last session's rule: %s",
			len(unknown), strings.Join(slices.Sorted(slices.Values(unknown)), ", ")))
	}
	return groups, accounts, notes, nil
}

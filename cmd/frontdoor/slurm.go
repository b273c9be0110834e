package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/internal/slurmsync"
)

func init() {
	register("slurm plan", "show how Slurm accounting differs from the policy (changes nothing)", func(ctx context.Context, args []string) error {
		return runSlurm(ctx, "plan", args)
	})
	register("slurm apply", "make Slurm accounting match the policy once", func(ctx context.Context, args []string) error {
		return runSlurm(ctx, "apply", args)
	})
	register("slurm sync", "keep Slurm accounting matching the policy (a service on the Slurm controller)", func(ctx context.Context, args []string) error {
		return runSlurm(ctx, "sync", args)
	})
}

// slurmEnv is what the slurm subcommands share: the gateway configuration
// (policy, directory, slurm section, audit file) and the parts built from it.
type slurmEnv struct {
	cfg   *config.Config
	dir   slurmsync.Directory
	sl    *slurm.Client
	audit *audit.Logger
	log   *slog.Logger
	close func()
}

func openSlurmEnv(path string, verbose bool) (*slurmEnv, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if cfg.Slurm == nil {
		return nil, fmt.Errorf("%s has no slurm section: frontdoor does not manage Slurm without one", path)
	}
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	d, err := source.Open(cfg.Directory, log)
	if err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	dir, ok := d.(slurmsync.Directory)
	if !ok {
		d.Close()
		return nil, fmt.Errorf("directory kind %q cannot list group members", cfg.Directory.Kind)
	}
	au, err := audit.Open(cfg.Audit.File, log)
	if err != nil {
		d.Close()
		return nil, err
	}
	return &slurmEnv{cfg: cfg, dir: dir, log: log, audit: au, sl: cfg.Slurm.Client(),
		close: func() { d.Close(); au.Close() }}, nil
}

func runSlurm(ctx context.Context, verb string, args []string) error {
	fs := flag.NewFlagSet("slurm "+verb, flag.ContinueOnError)
	path := fs.String("config", config.DefaultPath, "gateway configuration (policy, directory, slurm)")
	verbose := fs.Bool("v", false, "log what is done")
	asJSON := fs.Bool("json", false, "plan: print the changes as JSON")
	lockPath := fs.String("lock", "/run/frontdoor/slurm-sync.lock", "sync: lock file, so one sync runs per host")
	if err := fs.Parse(args); err != nil {
		return err
	}
	env, err := openSlurmEnv(*path, *verbose)
	if err != nil {
		return err
	}
	defer env.close()
	cfg, sc := env.cfg, env.cfg.Slurm
	switch verb {
	case "plan", "apply":
		ctx, cancel := context.WithTimeout(ctx, 10*sc.Timeout)
		defer cancel()
		res, changes, err := slurmsync.Plan(ctx, cfg.Policy, env.dir, sc.ParentAccount, env.sl)
		if err != nil {
			return err
		}
		for _, n := range res.Notes {
			fmt.Fprintln(os.Stderr, "note: "+n)
		}
		if verb == "plan" {
			return printPlan(os.Stdout, changes, *asJSON)
		}
		if slurm.Pending(changes) == 0 {
			fmt.Println("Slurm accounting matches the policy; nothing to do.")
			return nil
		}
		rep, err := slurmsync.Apply(ctx, env.sl, changes, env.audit, "frontdoor slurm apply")
		for _, c := range rep.Applied {
			fmt.Println("applied: " + c.String())
		}
		for _, c := range rep.Conflicts {
			fmt.Println("left alone: " + c.String())
		}
		if err != nil {
			for _, c := range rep.NotApplied {
				fmt.Println("NOT applied: " + c.String())
			}
			return err
		}
		return nil
	case "sync":
		unlock, err := lockFile(*lockPath)
		if err != nil {
			return err
		}
		defer unlock()
		s := &slurmsync.Syncer{Policy: cfg.Policy, Dir: env.dir, Parent: sc.ParentAccount, Slurm: env.sl,
			Audit: env.audit, Log: slog.New(slog.NewJSONHandler(os.Stderr, nil)), Interval: sc.SyncInterval,
			Watch: sc.WatchInterval, Timeout: 10 * sc.Timeout}
		return s.Run(ctx)
	}
	return fmt.Errorf("%w: unknown verb %q", errUsage, verb)
}

// printPlan prints the changes as a diff (or JSON); "in step" when none.
func printPlan(w io.Writer, changes []slurm.Change, asJSON bool) error {
	if asJSON {
		type row struct {
			Op, Kind, Name, Detail, Command string
		}
		rows := []row{}
		for _, c := range changes {
			rows = append(rows, row{string(c.Op), c.Kind, c.Name, c.Detail, c.Command()})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	if len(changes) == 0 {
		_, err := fmt.Fprintln(w, "Slurm accounting matches the policy; nothing to do.")
		return err
	}
	_, err := fmt.Fprint(w, slurm.Diff(changes, true))
	return err
}

// lockFile takes an exclusive lock on path, or fails at once if another
// sync holds it.
func lockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another frontdoor slurm sync holds %s", path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

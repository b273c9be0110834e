// Command soak runs the soak and fault suite (test/soak) against the local
// stack and writes its figures: OUT/NAME.json, NAME.md and the plots
// NAME-latency.svg and NAME-memory.svg. `make soak` runs it in full (a
// thousand held sessions, the highest login rate the machine sustains, ten
// minutes steady, then every fault); `make test` runs a short form.
//
// It needs root (the stack starts sshd, Samba and Slurm, mounts a tmpfs
// and sets nftables rules, all removed at the end) and the repository as
// its working directory (it builds the gateway binary from it).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/soak"
)

func main() {
	cfg := soak.Config{}
	flag.IntVar(&cfg.Sessions, "sessions", 1000, "held sessions")
	flag.IntVar(&cfg.Users, "users", 250, "load users (the held sessions and new logins are theirs)")
	flag.IntVar(&cfg.StreamEvery, "stream-every", 20, "every Nth held session streams checksummed data both ways (0: none)")
	flag.IntVar(&cfg.ForwardEvery, "forward-every", 20, "every Nth held session forwards TCP through its node (0: none)")
	flag.Float64Var(&cfg.RampPerSecond, "ramp", 25, "held sessions opened per second")
	flag.Float64Var(&cfg.Rate, "rate", 0, "new logins per second (0: find the highest the machine sustains)")
	flag.Float64Var(&cfg.RateStart, "rate-start", 4, "the rate search's first rate")
	flag.DurationVar(&cfg.RateStep, "rate-step", 20*time.Second, "how long each rate of the search runs")
	flag.Float64Var(&cfg.PasswordShare, "password-share", 0.2, "share of new logins with a password (the rest with a key)")
	flag.DurationVar(&cfg.Steady, "steady", 10*time.Minute, "how long the load runs without faults")
	faults := flag.String("faults", "all", "faults to inject: all, none, or a comma-separated list of "+strings.Join(soak.Faults, ","))
	noSlurm := flag.Bool("no-slurm", false, "run the stack without Slurm")
	out := flag.String("out", "bench/results", "directory for the result files")
	name := flag.String("name", "soak", "result files' base name")
	dir := flag.String("dir", "", "work directory (default: a new temporary directory, removed unless --keep)")
	keep := flag.Bool("keep", false, "keep the work directory")
	strict := flag.Bool("strict", false, "exit 1 when a goal is missed")
	flag.Parse()
	switch *faults {
	case "all":
		cfg.Faults = soak.Faults
	case "none", "":
	default:
		cfg.Faults = strings.Split(*faults, ",")
	}
	cfg.Slurm = !*noSlurm
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg.Log = log
	root, err := os.Getwd()
	if err != nil {
		fail(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		fail(fmt.Errorf("run from the repository's root (no go.mod in %s)", root))
	}
	cfg.Root = root
	cfg.Dir = *dir
	if cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "frontdoor-soak-"); err != nil {
			fail(err)
		}
		if !*keep {
			defer os.RemoveAll(cfg.Dir)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := soak.Run(ctx, cfg)
	if res != nil {
		res.Commit = commit(root)
		if werr := soak.WriteFiles(res, *out, *name); werr != nil {
			log.Error("writing the results", "err", werr)
		}
	}
	if err != nil {
		log.Error("soak failed", "err", err, "work_dir", cfg.Dir)
		if !*keep && *dir == "" {
			os.RemoveAll(cfg.Dir)
		}
		os.Exit(1)
	}
	fmt.Printf("results: %s\n", filepath.Join(*out, *name+".json"))
	missed := res.Failed()
	for _, c := range missed {
		fmt.Printf("MISSED %s (goal %s): %s\n", c.Name, c.Goal, c.Measured)
	}
	fmt.Printf("%d of %d checks met\n", len(res.Checks)-len(missed), len(res.Checks))
	if *strict && len(missed) > 0 {
		os.Exit(1)
	}
}

// commit names the tree the soak ran, with "+changes" when it had
// uncommitted changes.
func commit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+changes"
	}
	return c
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "soak:", err)
	os.Exit(1)
}

package soak_test

// The soak's short form, in `make test`: the local stack (Samba AD, real
// sshd nodes with agents, two gateway processes, the audit bucket) with
// 200 held sessions and new logins at a fixed modest rate for two minutes,
// no faults. It asserts the goals of the load: no failed login, no
// corrupted transfer, no held session lost, and the gateways back to what
// they held before once the load ends. The full run with faults is `make
// soak` (RELIABILITY.md).
//
// The soak runs as its own process (test/cmd/soak, built here without the
// race detector): the load client must not pay the detector's cost, or it
// would measure itself. Its result file is read back and every missed
// goal fails the test with the figure measured.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/soak"
)

func TestSoakShort(t *testing.T) {
	if err := harness.Prerequisites(harness.SSHDPath, "samba", "go", "useradd", "mount", "nft"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "soak")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./test/cmd/soak")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	work, err := os.MkdirTemp("", "frontdoor-soak-short-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "--sessions", "200", "--users", "50", "--ramp", "20", "--rate", "5",
		"--steady", "2m", "--faults", "none", "--no-slurm", "--out", dir, "--name", "short", "--dir", work)
	cmd.Dir = root
	cmd.WaitDelay = 30 * time.Second
	logPath := filepath.Join(dir, "soak.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	runErr := cmd.Run()
	logf.Close()
	log, _ := os.ReadFile(logPath)
	if runErr != nil {
		t.Fatalf("soak: %v (work directory kept: %s)\n%s", runErr, work, log)
	}
	os.RemoveAll(work)
	b, err := os.ReadFile(filepath.Join(dir, "short.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res soak.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	s := res.Steady
	t.Logf("%d held sessions, %d new logins (%.1f/s), p50 %.3f s, p99 %.3f s; %d round trips (%d MiB); load average %.1f",
		res.Conditions.Sessions, s.Logins.Count, s.Logins.PerSecond, s.Logins.P50, s.Logins.P99, s.Transfers.Count, s.Transfers.Bytes>>20, s.Load1.Median)
	for _, g := range res.After {
		t.Logf("%s: goroutines %d → %d → %d, fds %d → %d → %d, RSS %.0f → %.0f → %.0f MiB", g.Gateway, g.GoroutinesBefore,
			g.GoroutinesPeak, g.GoroutinesAfter, g.FDsBefore, g.FDsPeak, g.FDsAfter, g.RSSBeforeMiB, g.RSSPeakMiB, g.RSSAfterMiB)
	}
	if s.Logins.Count < 300 || s.Transfers.Count == 0 {
		t.Errorf("the load did not run: %d new logins, %d round trips in two minutes", s.Logins.Count, s.Transfers.Count)
	}
	for _, c := range res.Checks {
		if !c.Met {
			t.Errorf("%s: goal %s, measured %s", c.Name, c.Goal, c.Measured)
		}
	}
	if t.Failed() {
		t.Logf("soak log:\n%s", tail(log, 8000))
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

package slurmsync

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
)

// downSlurm is unreachable for its first down reads of the state, then
// answers with an empty cluster and takes every change.
type downSlurm struct {
	mu    sync.Mutex // mu protects the following
	down  int
	reads []time.Time
}

func (d *downSlurm) State(context.Context) (slurm.State, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reads = append(d.reads, time.Now())
	if d.down > 0 {
		d.down--
		return slurm.State{}, fmt.Errorf("sacctmgr: %w", slurm.ErrUnavailable)
	}
	return slurm.State{Cluster: "c"}, nil
}

func (d *downSlurm) Apply(_ context.Context, changes []slurm.Change) (slurm.Report, error) {
	return slurm.Report{Applied: changes}, nil
}

func (d *downSlurm) readTimes() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.reads...)
}

// TestSyncRetriesAfterFailure: a round that failed because Slurm was down
// is tried again after RetryMin, doubling, not a whole Interval later (the
// soak saw a sync converge 56 s after slurmdbd returned with a 1-minute
// interval: 10 minutes with the default); once a round succeeds, the
// retries stop.
func TestSyncRetriesAfterFailure(t *testing.T) {
	sl := &downSlurm{down: 3}
	var logs bytes.Buffer
	var logMu sync.Mutex
	au, err := audit.Open("", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := &Syncer{Policy: testPolicy, Dir: &memDir{groups: map[string][]string{"alice": {"lab"}, "erin": {"admins"}, "dave": {"course"}}}, Parent: "frontdoor",
		Slurm: sl, Audit: au, Log: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			logMu.Lock()
			defer logMu.Unlock()
			return logs.Write(p)
		}), nil)), Interval: time.Hour, Timeout: 10 * time.Second, RetryMin: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(sl.readTimes()) < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// Nothing more after the round that worked.
	time.Sleep(500 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reads := sl.readTimes()
	if len(reads) != 4 {
		t.Fatalf("%d reads of the state, want 4 (3 failed, 1 in step, then quiet until the interval)", len(reads))
	}
	// The waits double: 100 ms, 200 ms, 400 ms (with room for a slow machine).
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		if got := reads[i+1].Sub(reads[i]); got < want || got > want+2*time.Second {
			t.Errorf("retry %d after %s, want about %s", i+1, got, want)
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if n := strings.Count(logs.String(), "slurm sync failed"); n != 3 || !strings.Contains(logs.String(), "retry_in=400ms") {
		t.Errorf("want 3 failures logged with their retry, got:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

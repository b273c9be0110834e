package directory

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// versions answers Version with the next of its values (an error value
// fails the read).
type versions struct {
	vals []any
	ctxs []context.Context
}

func (v *versions) Version(ctx context.Context) (string, error) {
	v.ctxs = append(v.ctxs, ctx)
	x := v.vals[0]
	v.vals = v.vals[1:]
	if err, ok := x.(error); ok {
		return "", err
	}
	return x.(string), nil
}

// TestWatchPoll walks the watch's baseline through every case: first read,
// no change, change handled, handling failed (offered again), read failed
// (baseline kept, the change made meanwhile seen after).
func TestWatchPoll(t *testing.T) {
	down := errors.New("dc down")
	src := &versions{vals: []any{"v1", "v1", "v2", "v3", "v3", down, ErrWatchPaused, "v4"}}
	var seen []string
	failNext := false
	w := &Watch{Source: src, Interval: time.Hour, Timeout: time.Minute,
		Changed: func(_ context.Context, prev, cur string) error {
			seen = append(seen, prev+"→"+cur)
			if failNext {
				failNext = false
				return errors.New("search failed")
			}
			return nil
		}}
	steps := []struct {
		failNext bool
		moved    bool
		err      bool
	}{
		{false, true, false},  // v1: the first read is a change from ""
		{false, false, false}, // v1 again
		{false, true, false},  // v2
		{true, false, true},   // v3: handling fails
		{false, true, false},  // v3 offered again from v2
		{false, false, true},  // read fails
		{false, false, true},  // paused
		{false, true, false},  // v4 from v3
	}
	for i, s := range steps {
		failNext = s.failNext
		moved, err := w.Poll(context.Background())
		if moved != s.moved || (err != nil) != s.err {
			t.Fatalf("step %d: moved %v err %v", i, moved, err)
		}
	}
	if want := []string{"→v1", "v1→v2", "v2→v3", "v2→v3", "v3→v4"}; !slices.Equal(seen, want) {
		t.Errorf("changes %q, want %q", seen, want)
	}
	for i, ctx := range src.ctxs {
		if _, ok := ctx.Deadline(); !ok {
			t.Errorf("read %d had no deadline", i)
		}
	}
}

func TestWatchPrime(t *testing.T) {
	src := &versions{vals: []any{errors.New("down"), "v1", "v1", "v2"}}
	var seen []string
	w := &Watch{Source: src, Timeout: time.Minute, Changed: func(_ context.Context, prev, cur string) error {
		seen = append(seen, prev+"→"+cur)
		return nil
	}}
	if err := w.Prime(context.Background()); err == nil {
		t.Fatal("a failed prime reported no error")
	}
	if err := w.Prime(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Poll(context.Background())
	w.Poll(context.Background())
	if want := []string{"v1→v2"}; !slices.Equal(seen, want) {
		t.Errorf("changes %q, want %q: a primed baseline is not a change", seen, want)
	}
}

// TestWatchRun: Run reads at once, reports failures (not pauses) and ends
// with its context.
func TestWatchRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	src := &versions{vals: []any{errors.New("down"), ErrWatchPaused, "v1"}}
	var failed []error
	w := &Watch{Source: src, Interval: time.Millisecond, Timeout: time.Minute,
		Changed: func(context.Context, string, string) error { cancel(); return nil },
		Failed:  func(err error) { failed = append(failed, err) }}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end with its context")
	}
	if len(failed) != 1 || failed[0].Error() != "down" {
		t.Errorf("failures reported: %v, want the one read error", failed)
	}
}

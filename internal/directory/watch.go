package directory

import (
	"context"
	"errors"
	"time"
)

// Versioner is implemented by directories that can tell cheaply whether
// anything changed: Version returns a string that differs after any change
// (AD: the DC's highestCommittedUSN; a file: its size and modification
// time).
type Versioner interface {
	Version(ctx context.Context) (string, error)
}

// ErrWatchPaused is what a Versioner used by a Watch returns when it chose
// not to ask its source this time (offline, backing off): the watch skips
// the tick without counting an error.
var ErrWatchPaused = errors.New("directory watch paused")

// Watch notices directory changes by polling a Versioner: one cheap read
// per Interval. It is how the gateway's AD cache drops changed identities
// and how `frontdoor slurm sync` re-reconciles within seconds of a change.
//
// The version last handled is the baseline. A read that differs from it is
// a change and goes to Changed; the baseline moves only when Changed
// returns nil, so a change whose handling failed is offered again at the
// next tick. A failed read changes nothing: the watch pauses while the
// source is unreachable and resumes from the same baseline, so changes made
// meanwhile are seen then. Before the first successful read the baseline
// is "" and that read counts as a change.
//
// A Watch is used by one goroutine at a time.
type Watch struct {
	// Source is read at every tick.
	Source Versioner
	// Interval between reads (Run).
	Interval time.Duration
	// Timeout bounds each read (Changed gets its own context).
	Timeout time.Duration
	// Changed handles a change from prev (the baseline) to cur.
	Changed func(ctx context.Context, prev, cur string) error
	// Failed, if set, is told about reads and handlings that failed
	// (never about ErrWatchPaused).
	Failed func(err error)

	last string
}

// Prime reads the baseline without calling Changed (a failed read leaves
// it ""), for callers that bring themselves up to date right after.
func (w *Watch) Prime(ctx context.Context) error {
	cur, err := w.read(ctx)
	if err == nil {
		w.last = cur
	}
	return err
}

// Poll reads the version once and hands a change to Changed. It reports
// whether the baseline moved.
func (w *Watch) Poll(ctx context.Context) (bool, error) {
	cur, err := w.read(ctx)
	if err != nil || cur == w.last {
		return false, err
	}
	if err := w.Changed(ctx, w.last, cur); err != nil {
		return false, err
	}
	w.last = cur
	return true, nil
}

// Run polls at once and then every Interval until ctx ends.
func (w *Watch) Run(ctx context.Context) {
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		if _, err := w.Poll(ctx); err != nil && w.Failed != nil && !errors.Is(err, ErrWatchPaused) && ctx.Err() == nil {
			w.Failed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *Watch) read(ctx context.Context) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	return w.Source.Version(rctx)
}

package slurmsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
)

// TypeSlurm is the audit event of one change made in Slurm.
const TypeSlurm = "slurm.change"

// Slurm is the part of slurm.Client a sync uses.
type Slurm interface {
	State(ctx context.Context) (slurm.State, error)
	Apply(ctx context.Context, changes []slurm.Change) (slurm.Report, error)
}

// Plan builds the desired state and diffs it against Slurm's.
func Plan(ctx context.Context, pol policy.Config, dir Directory, parent string, sl Slurm) (Result, []slurm.Change, error) {
	res, err := Build(ctx, pol, dir, parent)
	if err != nil {
		return Result{}, nil, err
	}
	cur, err := sl.State(ctx)
	if err != nil {
		return Result{}, nil, err
	}
	return res, slurm.Plan(res.Desired, cur), nil
}

// Apply makes the changes and records every one applied (and the one
// that failed) in the audit trail, so nothing half-applied goes
// unreported.
func Apply(ctx context.Context, sl Slurm, changes []slurm.Change, au *audit.Logger, by string) (slurm.Report, error) {
	rep, err := sl.Apply(ctx, changes)
	for _, c := range rep.Applied {
		au.Record(audit.Event{Type: TypeSlurm, User: by, Result: "ok", Reason: c.String()})
	}
	if rep.Failed != nil {
		au.Record(audit.Event{Type: TypeSlurm, User: by, Result: "fail", Reason: fmt.Sprintf("%s: %v", rep.Failed.String(), err)})
	}
	for _, c := range rep.NotApplied {
		au.Record(audit.Event{Type: TypeSlurm, User: by, Result: "fail", Reason: "not attempted after a failure: " + c.String()})
	}
	return rep, err
}

// ApplyEach makes the changes one by one, going on past a change Slurm
// refuses (a user with running jobs cannot be removed, say): one stuck
// user must not hold up everyone else's access. It stops only when Slurm
// cannot be reached. Every change is audited; the error joins the
// refusals.
func ApplyEach(ctx context.Context, sl Slurm, changes []slurm.Change, au *audit.Logger, by string) (applied int, err error) {
	var errs []error
	for _, c := range changes {
		if c.Op == slurm.OpConflict {
			continue
		}
		rep, aerr := Apply(ctx, sl, []slurm.Change{c}, au, by)
		applied += len(rep.Applied)
		if aerr != nil {
			errs = append(errs, aerr)
			if errors.Is(aerr, slurm.ErrUnavailable) || ctx.Err() != nil {
				break
			}
		}
	}
	return applied, errors.Join(errs...)
}

// Syncer reconciles every Interval, and within Watch of a change in the
// directory (if it is a directory.Versioner; see directory.Watch).
type Syncer struct {
	Policy   policy.Config
	Dir      Directory
	Parent   string
	Slurm    Slurm
	Audit    *audit.Logger
	Log      *slog.Logger
	Interval time.Duration
	Watch    time.Duration // how often the directory version is polled
	// Timeout bounds one whole round (build, state, apply).
	Timeout time.Duration
}

// Round is one reconciliation's outcome.
type Round struct {
	Changes, Applied int
	Err              error
}

// Once runs one round.
func (s *Syncer) Once(ctx context.Context) Round {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	res, changes, err := Plan(ctx, s.Policy, s.Dir, s.Parent, s.Slurm)
	if err != nil {
		return Round{Err: err}
	}
	for _, n := range res.Notes {
		s.Log.Info("slurm sync: " + n)
	}
	if slurm.Pending(changes) == 0 {
		return Round{}
	}
	applied, err := ApplyEach(ctx, s.Slurm, changes, s.Audit, "frontdoor slurm sync")
	return Round{Changes: slurm.Pending(changes), Applied: applied, Err: err}
}

// Run reconciles until ctx ends. A failed round is logged and retried at
// the next tick; it never stops the loop.
func (s *Syncer) Run(ctx context.Context) error {
	round := func(why string) {
		r := s.Once(ctx)
		switch {
		case r.Err != nil && ctx.Err() == nil:
			s.Log.Error("slurm sync failed", "trigger", why, "applied", r.Applied, "of", r.Changes, "err", r.Err)
		case r.Changes > 0:
			s.Log.Info("slurm sync applied changes", "trigger", why, "applied", r.Applied)
		default:
			s.Log.Debug("slurm sync: in step", "trigger", why)
		}
	}
	// The watch's baseline is read before the first round, so a change
	// made while that round runs is seen at the next poll. A round that
	// fails is retried at the interval, not at every poll.
	var w *directory.Watch
	if v, ok := s.Dir.(directory.Versioner); ok && s.Watch > 0 {
		w = &directory.Watch{Source: v, Interval: s.Watch, Timeout: s.Timeout,
			Changed: func(context.Context, string, string) error { round("directory changed"); return nil }}
		_ = w.Prime(ctx)
	}
	round("start")
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	var watch <-chan time.Time
	if w != nil {
		t := time.NewTicker(s.Watch)
		defer t.Stop()
		watch = t.C
	}
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil
			}
			return ctx.Err()
		case <-tick.C:
			round("interval")
		case <-watch:
			_, _ = w.Poll(ctx)
		}
	}
}

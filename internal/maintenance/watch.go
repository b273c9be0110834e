package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sessions is the gateway's session table as the watcher uses it (the
// methods of *gateway.Gateway it needs, and no more).
type Sessions interface {
	// NodeSessions lists the IDs of the live sessions on node.
	NodeSessions(node string) []string
	// NotifySession writes a line to the session's terminals, if any.
	NotifySession(id, line string) int
	// CloseSession closes the session, telling its terminals why.
	CloseSession(id, reason string) bool
}

// Options configure a Watcher.
type Options struct {
	// Drains returns the nodes drained with a deadline now (read from the
	// gateways' shared state on every step).
	Drains func() []Drain
	// Sessions are this process's sessions.
	Sessions Sessions
	// Log defaults to slog.Default().
	Log *slog.Logger
	// Now is the clock (default time.Now): tests step it.
	Now func() time.Time
	// Warnings are when users are warned before the deadline (default
	// DefaultWarnings).
	Warnings []time.Duration
	// Poll is how often the watcher looks for new drains and sessions
	// between what it has scheduled (default 1s).
	Poll time.Duration
}

// Watcher applies the schedule to this process's sessions (the package
// comment).
type Watcher struct {
	o       Options
	log     *slog.Logger
	notices *prometheus.CounterVec
	closed  prometheus.Counter

	mu      sync.Mutex // mu protects the following
	told    map[string]*told
	closing map[string]bool
	wg      sync.WaitGroup // closes under way
}

// New makes a Watcher; Run runs it.
func New(o Options) *Watcher {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Warnings == nil {
		o.Warnings = DefaultWarnings
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	return &Watcher{o: o, log: o.Log.With("component", "maintenance"), told: map[string]*told{}, closing: map[string]bool{},
		notices: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_maintenance_notices_total",
			Help: "Maintenance notices written to the terminals of sessions on drained login nodes, by kind (start, warning)."}, []string{"kind"}),
		closed: prometheus.NewCounter(prometheus.CounterOpts{Name: "frontdoor_maintenance_sessions_closed_total",
			Help: "Sessions this process closed because the deadline of their login node's maintenance drain came."}),
	}
}

// Collectors are the watcher's metrics.
func (w *Watcher) Collectors() []prometheus.Collector {
	w.notices.WithLabelValues("start")
	w.notices.WithLabelValues("warning")
	return []prometheus.Collector{w.notices, w.closed}
}

// Run steps the watcher until ctx ends, at every time something is due
// and at least every Poll; then it waits for the closes under way.
func (w *Watcher) Run(ctx context.Context) {
	defer w.wg.Wait()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := w.o.Now()
		wait := w.o.Poll
		if next := w.Step(now); !next.IsZero() {
			wait = min(wait, max(next.Sub(now), 0))
		}
		t.Reset(wait)
	}
}

// Step does what is due at now: notices and closes. It returns when the
// next thing is due (zero: nothing scheduled; new drains and sessions are
// found by the next step). Closes run in the background.
func (w *Watcher) Step(now time.Time) time.Time {
	var next time.Time
	seen := map[string]bool{}
	for _, d := range w.o.Drains() {
		if d.Deadline.IsZero() {
			continue
		}
		for _, id := range w.o.Sessions.NodeSessions(d.Node) {
			seen[id] = true
			if at := w.stepSession(d, id, now); !at.IsZero() && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	w.mu.Lock()
	for id := range w.told {
		if !seen[id] {
			delete(w.told, id) // ended, or its node undrained
		}
	}
	for id := range w.closing {
		if !seen[id] {
			delete(w.closing, id) // closed: it left the table
		}
	}
	w.mu.Unlock()
	return next
}

// stepSession applies the plan to one session.
func (w *Watcher) stepSession(d Drain, id string, now time.Time) time.Time {
	w.mu.Lock()
	if w.closing[id] {
		w.mu.Unlock()
		return time.Time{}
	}
	t := w.told[id]
	what, before, next := plan(d, t, now, w.o.Warnings)
	switch what {
	case stepStart, stepWarn:
		w.told[id] = &told{deadline: d.Deadline, message: d.Message, at: now}
	case stepClose:
		w.closing[id] = true
		delete(w.told, id)
	}
	w.mu.Unlock()
	switch what {
	case stepStart:
		n := w.o.Sessions.NotifySession(id, startText(d, now))
		w.notices.WithLabelValues("start").Add(float64(n))
		w.log.Info("maintenance: session told of its node's drain", "session", id, "node", d.Node,
			"deadline", d.Deadline, "terminals", n)
	case stepWarn:
		n := w.o.Sessions.NotifySession(id, warnText(d, before))
		w.notices.WithLabelValues("warning").Add(float64(n))
		w.log.Info("maintenance: session warned", "session", id, "node", d.Node, "before", before, "terminals", n)
	case stepClose:
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			if w.o.Sessions.CloseSession(id, closeText(d)) {
				w.closed.Inc()
				w.log.Info("maintenance: session closed at its node's drain deadline", "session", id, "node", d.Node,
					"reason", "maintenance")
			}
		}()
	}
	return next
}

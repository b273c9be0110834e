package audit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// How an event travels from Record to a destination, written down before
// the code:
//
//   - Each destination (the audit file, each sink) has its own queue and
//     its own writer goroutine. Record appends to the queues, never under
//     a lock held around I/O, so one stalled disk stalls neither another
//     destination nor the other logins.
//   - A queue is bounded per class: Options.QueueEvents authenticated
//     events and Options.UnauthenticatedQueueEvents unauthenticated ones,
//     counting the batch the writer is writing. Whatever does not fit is
//     dropped at once (counted in frontdoor_audit_dropped_events_total by
//     destination and class, and logged at most once per
//     Options.ReportInterval); a flood of failed logins fills only its
//     own budget.
//   - The writer takes everything queued as one batch, writes it, and
//     only then releases its places in the queue. Order is kept.
//   - Write-through while the disk is healthy: Record then waits until its
//     event is written — so the record exists before the client learns
//     the outcome, as it did when writes were synchronous — but never
//     longer than Options.WriteWait, and not at all while a destination's
//     writer has been busy longer than that (a hung disk): then the event
//     stays queued and Record returns at once.
//   - Close stops taking events and waits (bounded) for every writer to
//     write what it holds.

// queued is one event waiting in a destination's queue.
type queued struct {
	e Event
	c Class
}

// output is one destination of a Logger.
type output struct {
	name  string
	write func([]Event) // writes a batch; may block for as long as it likes
	limit [numClasses]int
	wait  time.Duration // Options.WriteWait
	log   *slog.Logger
	m     *metrics
	every time.Duration
	now   func() time.Time

	wake chan struct{} // something was queued, or the queue was closed
	done chan struct{} // closed when the writer returned

	mu sync.Mutex // mu protects the following
	// queue is FIFO; spare is the writer's last batch, reused.
	queue, spare []queued
	// held counts queued events and those in the batch being written.
	held [numClasses]int
	// written is closed once the events queued now are written (nil: none
	// queued since the writer took its batch).
	written chan struct{}
	// busySince is when the write in progress began (zero: idle).
	busySince time.Time
	closed    bool
	// dropped counts drops since the last report line.
	dropped    [numClasses]int64
	lastReport time.Time
}

func newOutput(name string, write func([]Event), opts Options, log *slog.Logger, m *metrics) *output {
	o := &output{name: name, write: write, log: log, m: m, every: opts.ReportInterval, wait: opts.WriteWait, now: time.Now,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	o.limit[ClassAuthenticated] = opts.QueueEvents
	o.limit[ClassUnauthenticated] = opts.UnauthenticatedQueueEvents
	go o.run()
	return o
}

// put queues e, or drops it if its class has no room. It returns what to
// wait on for e to be written, or nil: not queued, or the writer is stuck
// (busy longer than o.wait) and waiting would be pointless. It never
// blocks on anything but mu, which is never held around I/O.
func (o *output) put(e Event, c Class) <-chan struct{} {
	o.mu.Lock()
	if o.closed || o.held[c] >= o.limit[c] {
		reason := "queue_full"
		if o.closed {
			reason = "closed"
		}
		o.dropLocked(c, reason)
		o.mu.Unlock()
		return nil
	}
	o.queue = append(o.queue, queued{e, c})
	o.held[c]++
	if o.written == nil {
		o.written = make(chan struct{})
	}
	written := o.written
	if o.wait <= 0 || (!o.busySince.IsZero() && o.now().Sub(o.busySince) > o.wait) {
		written = nil
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return written
}

func (o *output) dropLocked(c Class, reason string) {
	o.m.dropped.WithLabelValues(o.name, c.String(), reason).Inc()
	o.dropped[c]++
	if now := o.now(); now.Sub(o.lastReport) >= o.every {
		o.reportLocked(now)
	}
}

// reportLocked logs the drops since the last report: an error when
// authenticated events were lost, a warning when only the noise was.
func (o *output) reportLocked(now time.Time) {
	auth, unauth := o.dropped[ClassAuthenticated], o.dropped[ClassUnauthenticated]
	if auth+unauth == 0 {
		return
	}
	attrs := []any{"output", o.name, "dropped_authenticated", auth, "dropped_unauthenticated", unauth,
		"queue_limit", o.limit[ClassAuthenticated], "unauthenticated_queue_limit", o.limit[ClassUnauthenticated]}
	if auth > 0 {
		o.log.Error("AUDIT EVENTS DROPPED: the audit writer cannot keep up (stalled disk or sink?)", attrs...)
	} else {
		o.log.Warn("audit: dropping failed-authentication events: their queue is full (session and admin events are kept)", attrs...)
	}
	o.dropped = [numClasses]int64{}
	o.lastReport = now
}

// run is the writer: it writes what is queued, batch by batch, until the
// output is closed and empty.
func (o *output) run() {
	defer close(o.done)
	for {
		o.mu.Lock()
		for len(o.queue) == 0 && !o.closed {
			o.mu.Unlock()
			<-o.wake
			o.mu.Lock()
		}
		if len(o.queue) == 0 { // closed and empty
			o.reportLocked(o.now())
			o.mu.Unlock()
			return
		}
		// The queue becomes the batch; the last batch's array, the queue.
		batch, written := o.queue, o.written
		o.queue, o.spare, o.written = o.spare[:0], nil, nil
		o.busySince = o.now()
		o.mu.Unlock()
		evs := make([]Event, len(batch))
		for i, q := range batch {
			evs[i] = q.e
		}
		o.write(evs)
		close(written)
		o.mu.Lock()
		o.busySince = time.Time{}
		for _, q := range batch {
			o.held[q.c]--
		}
		clear(batch) // drop references to the events' strings
		o.spare = batch[:0]
		if now := o.now(); now.Sub(o.lastReport) >= o.every {
			o.reportLocked(now)
		}
		o.mu.Unlock()
	}
}

// close stops taking events and waits until the writer has written what
// it holds or ctx ends; it reports whether the writer finished.
func (o *output) close(ctx context.Context) bool {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	select {
	case <-o.done:
		return true
	case <-ctx.Done():
		return false
	}
}

// pending is how many events the output still holds.
func (o *output) pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.held[ClassAuthenticated] + o.held[ClassUnauthenticated]
}

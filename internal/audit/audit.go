// Package audit records who did what through the gateway: one event type, one
// JSON object per line, for every auth attempt and every session start and
// end. Audit events carry the precise reasons the SSH client is never told.
//
// Recording never holds up a login on a stuck disk: Record hands the
// event to a bounded queue per destination (the audit file, each sink
// such as S3), where a writer goroutine per destination does the I/O, and
// waits for the write only while the destination keeps up, and at most
// Options.WriteWait (queue.go).
// Failed authentications, which any stranger can produce, have a budget
// of their own in every queue (class.go), so they never push out session
// and admin records. Reading records back — the audit file, S3 batches
// and their chain headers — is read.go; sinks live in subpackages.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Event types.
const (
	TypeAuth         = "auth"
	TypeSessionStart = "session.start"
	TypeSessionEnd   = "session.end"
	TypeBackend      = "backend" // a backend attempt failed (and another may follow)
	TypeAdmin        = "admin"   // an admin changed cluster state (drain, undrain); User is the admin
	TypeMFA          = "mfa"     // a second factor: asked (result challenge), answered, an unlock
)

// Results.
const (
	ResultOK     = "ok"
	ResultFail   = "fail"   // the attempt did not prove an identity
	ResultDenied = "denied" // the identity is proven; policy refused it
	// ResultError: the identity is proven, and the login could not be
	// completed (no login node took it, no certificate could be made).
	ResultError = "error"
	// ResultChallenge: a second factor was asked for (TypeMFA).
	ResultChallenge = "challenge"
)

// Event is the one audit record shape. Empty fields are omitted.
type Event struct {
	Time     time.Time `json:"time"`
	Type     string    `json:"type"`
	Gateway  string    `json:"gateway,omitempty"`
	Session  string    `json:"session,omitempty"`
	User     string    `json:"user,omitempty"`
	Src      string    `json:"src,omitempty"`
	Method   string    `json:"method,omitempty"`
	Node     string    `json:"node,omitempty"`
	Result   string    `json:"result,omitempty"` // ok | fail | denied
	Reason   string    `json:"reason,omitempty"`
	Rule     string    `json:"rule,omitempty"`
	KeyFP    string    `json:"key_fp,omitempty"`
	BytesIn  int64     `json:"bytes_in,omitempty"`  // client → node
	BytesOut int64     `json:"bytes_out,omitempty"` // node → client
	Duration float64   `json:"duration_s,omitempty"`
	Channels int       `json:"channels,omitempty"`
}

// Sink receives every recorded event, from a writer goroutine of its own
// (never the caller of Logger.Record), in order. Record may block — the
// Logger's queue in front of it absorbs that, up to its bounds — but
// should not wait for the network (a sink that ships elsewhere spools
// locally). The sink's owner closes it after the Logger.
type Sink interface {
	Record(Event)
}

// Named is implemented by sinks that have a name for metrics and logs
// (the output label); others are called "sink".
type Named interface {
	Name() string
}

// Options bound a Logger's queues; DefaultOptions has the defaults.
type Options struct {
	// QueueEvents is how many authenticated events (everything but failed
	// authentications) may wait for each destination. With a destination
	// stalled, more are dropped and counted. Default 8192.
	QueueEvents int
	// UnauthenticatedQueueEvents is the separate budget of failed
	// authentications per destination. Default 1024.
	UnauthenticatedQueueEvents int
	// ReportInterval is the least time between two log lines about
	// dropped events of one destination. Default 1m.
	ReportInterval time.Duration
	// CloseTimeout bounds how long Close waits for the destinations to
	// write what they hold. Default 30s.
	CloseTimeout time.Duration
	// WriteWait is the most Record waits for its event to be written
	// (queue.go: write-through while the disk is healthy). A destination
	// whose writer has been busy longer is not waited for at all. Default
	// 100ms; negative: never wait.
	WriteWait time.Duration
}

// DefaultOptions are the queue bounds a gateway uses: 8192 + 1024 events
// (a few MiB) per destination, drops reported once a minute, write-through
// for up to 100ms.
func DefaultOptions() Options {
	return Options{QueueEvents: 8192, UnauthenticatedQueueEvents: 1024, ReportInterval: time.Minute, CloseTimeout: 30 * time.Second,
		WriteWait: 100 * time.Millisecond}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.QueueEvents <= 0 {
		o.QueueEvents = d.QueueEvents
	}
	if o.UnauthenticatedQueueEvents <= 0 {
		o.UnauthenticatedQueueEvents = d.UnauthenticatedQueueEvents
	}
	if o.ReportInterval <= 0 {
		o.ReportInterval = d.ReportInterval
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = d.CloseTimeout
	}
	if o.WriteWait == 0 {
		o.WriteWait = d.WriteWait
	}
	return o
}

// Logger writes audit events to the process log, to a file (if
// configured) and to its sinks (such as S3). Record is safe for
// concurrent use and never blocks on I/O but the process log's.
type Logger struct {
	log     *slog.Logger
	opts    Options
	metrics *metrics
	// outputs is replaced whole by AddSink; Record reads it without a lock.
	outputs atomic.Pointer[[]*output]
	// file is closed by Close (nil: no file, or not ours to close).
	file io.Closer

	mu     sync.Mutex // mu protects the following
	closed bool
}

// Open returns a Logger appending to path (created 0600); an empty path
// logs to the process log only.
func Open(path string, log *slog.Logger) (*Logger, error) {
	if path == "" {
		return New(nil, log, DefaultOptions()), nil
	}
	f, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	return New(f, log, DefaultOptions()), nil
}

// New returns a Logger writing JSON lines to w (nil: none); Close closes
// w if it is an io.Closer.
func New(w io.Writer, log *slog.Logger, opts Options) *Logger {
	if log == nil {
		log = slog.Default()
	}
	l := &Logger{log: log, opts: opts.withDefaults(), metrics: newMetrics()}
	outs := []*output{}
	if w != nil {
		if c, ok := w.(io.Closer); ok {
			l.file = c
		}
		outs = append(outs, newOutput(fileOutput, l.fileWriter(w), l.opts, log, l.metrics))
	}
	l.outputs.Store(&outs)
	return l
}

// fileWriter writes a batch as JSON lines in one write.
func (l *Logger) fileWriter(w io.Writer) func([]Event) {
	var buf []byte
	return func(evs []Event) {
		buf = buf[:0]
		for _, e := range evs {
			line, err := json.Marshal(e)
			if err != nil {
				l.log.Error("audit: event not written", "err", err, "type", e.Type, "session", e.Session)
				continue
			}
			buf = append(append(buf, line...), '\n')
		}
		if _, err := w.Write(buf); err != nil {
			l.metrics.writeErrors.WithLabelValues("file").Inc()
			l.log.Error("audit write failed", "err", err, "events", len(evs))
		}
	}
}

// AddSink makes every event recorded from now on go to s as well, through
// a queue and writer of its own.
func (l *Logger) AddSink(s Sink) {
	o := l.sinkOutput(s)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		o.close(context.Background())
		return
	}
	outs := append(append([]*output{}, *l.outputs.Load()...), o)
	l.outputs.Store(&outs)
}

// sinkOutput is s as a destination.
func (l *Logger) sinkOutput(s Sink) *output {
	name := "sink"
	if n, ok := s.(Named); ok {
		name = n.Name()
	}
	return newOutput(name, func(evs []Event) {
		for _, e := range evs {
			s.Record(e)
		}
	}, l.opts, l.log, l.metrics)
}

// Collectors are the Logger's metrics, for the caller's registry.
func (l *Logger) Collectors() []prometheus.Collector { return l.metrics.collectors() }

// Record queues one event for every destination and, while they keep up,
// waits until it is written — at most Options.WriteWait, and not at all
// for a destination that is stuck (queue.go). An event a full queue has
// no room for is dropped, counted and logged (see Options).
func (l *Logger) Record(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	level := slog.LevelInfo
	if e.Result == ResultFail || e.Result == ResultDenied || e.Result == ResultError {
		level = slog.LevelWarn
	}
	// The process log is written here, as every other part of the gateway
	// writes it on the login path: the audit trail adds no wait of its own.
	l.log.LogAttrs(context.Background(), level, "audit",
		slog.String("type", e.Type), slog.String("session", e.Session), slog.String("user", e.User),
		slog.String("src", e.Src), slog.String("node", e.Node), slog.String("method", e.Method),
		slog.String("result", e.Result), slog.String("reason", e.Reason))
	c := ClassOf(e)
	outs := *l.outputs.Load()
	var waits [4]<-chan struct{}
	written := waits[:0]
	for _, o := range outs {
		if w := o.put(e, c); w != nil {
			written = append(written, w)
		}
	}
	if len(written) == 0 {
		return
	}
	t := time.NewTimer(l.opts.WriteWait)
	defer t.Stop()
	for _, w := range written {
		select {
		case <-w:
		case <-t.C:
			return
		}
	}
}

// Close stops taking events, waits up to Options.CloseTimeout for every
// destination to write what it holds, and closes the audit file. Events
// recorded after Close reach only the process log.
func (l *Logger) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.CloseTimeout)
	defer cancel()
	return l.CloseContext(ctx)
}

// CloseContext is Close bounded by ctx instead of Options.CloseTimeout.
func (l *Logger) CloseContext(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	var errs []error
	for _, o := range *l.outputs.Load() {
		if !o.close(ctx) {
			errs = append(errs, fmt.Errorf("audit %s: %d events not written: its writer is stalled", o.name, o.pending()))
		}
	}
	if l.file != nil {
		errs = append(errs, l.file.Close())
	}
	return errors.Join(errs...)
}

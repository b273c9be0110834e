// Package audit records who did what through the gateway: one event type, one
// JSON object per line, for every auth attempt and every session start and
// end. Audit events carry the precise reasons the SSH client is never told.
package audit

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Event types.
const (
	TypeAuth         = "auth"
	TypeSessionStart = "session.start"
	TypeSessionEnd   = "session.end"
	TypeBackend      = "backend" // a backend attempt failed (and another may follow)
	TypeAdmin        = "admin"   // an admin changed cluster state (drain, undrain); User is the admin
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

// Sink receives every recorded event, after the file write. Record must
// not block on the network (a sink that ships elsewhere spools locally);
// the sink's owner closes it after the Logger.
type Sink interface {
	Record(Event)
}

// Logger writes audit events to a file (if configured), to the process
// log and to its sinks (such as S3).
type Logger struct {
	log *slog.Logger

	mu    sync.Mutex // mu protects the following
	w     io.WriteCloser
	sinks []Sink
}

// AddSink makes every event recorded from now on go to s as well.
func (l *Logger) AddSink(s Sink) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sinks = append(l.sinks, s)
}

// Open returns a Logger appending to path (created 0600); an empty path
// logs to the process log only.
func Open(path string, log *slog.Logger) (*Logger, error) {
	l := &Logger{log: log}
	if path != "" {
		f, err := OpenFile(path)
		if err != nil {
			return nil, err
		}
		l.w = f
	}
	return l, nil
}

// Record writes one event. It never blocks on anything but a local write.
func (l *Logger) Record(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	level := slog.LevelInfo
	if e.Result == "fail" || e.Result == "denied" {
		level = slog.LevelWarn
	}
	l.log.LogAttrs(context.Background(), level, "audit",
		slog.String("type", e.Type), slog.String("session", e.Session), slog.String("user", e.User),
		slog.String("src", e.Src), slog.String("node", e.Node), slog.String("method", e.Method),
		slog.String("result", e.Result), slog.String("reason", e.Reason))
	l.mu.Lock()
	w, sinks := l.w, l.sinks
	if w != nil {
		if line, err := json.Marshal(e); err == nil {
			if _, err := w.Write(append(line, '\n')); err != nil {
				l.log.Error("audit write failed", "err", err)
			}
		}
	}
	l.mu.Unlock()
	for _, s := range sinks {
		s.Record(e)
	}
}

// Close closes the audit file.
func (l *Logger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return nil
	}
	err := l.w.Close()
	l.w = nil
	return err
}

package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

type memSink struct {
	mu     sync.Mutex
	events []Event
}

func (m *memSink) Record(e Event) { m.mu.Lock(); m.events = append(m.events, e); m.mu.Unlock() }

// Sinks get every event, with its time set, whether or not there is a file.
func TestSinks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, file := range []string{path, ""} {
		l, err := Open(file, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		s := &memSink{}
		l.AddSink(s)
		l.Record(Event{Type: TypeAuth, User: "alice", Result: "fail"})
		l.Record(Event{Type: TypeSessionStart, User: "alice"})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if len(s.events) != 2 || s.events[0].Time.IsZero() || s.events[1].Type != TypeSessionStart {
			t.Errorf("file %q: sink got %+v", file, s.events)
		}
	}
	b, _ := os.ReadFile(path)
	if strings.Count(string(b), "\n") != 2 {
		t.Errorf("audit file: %q", b)
	}
}

// within fails the test unless f returns within d: what must not block
// is run where a hang cannot hang the test.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s: it blocked", what, d)
	}
}

func session(i int) Event {
	return Event{Type: TypeSessionStart, Gateway: "gw1", Session: fmt.Sprintf("s%04d", i), User: "alice"}
}

func noise(i int) Event {
	return Event{Type: TypeAuth, Gateway: "gw1", User: fmt.Sprintf("probe%04d", i), Src: "198.51.100.7:4242", Result: ResultFail, Reason: "no such user"}
}

// readLines decodes JSON lines from r until want events came or r ends;
// a line that does not decode becomes an event of type "bad: ...". It
// runs on goroutines of its own, so it does not fail the test itself.
func readLines(r io.Reader, want int) []Event {
	var out []Event
	sc := bufio.NewScanner(r)
	for len(out) < want && sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			e.Type = "bad: " + err.Error()
		}
		out = append(out, e)
	}
	return out
}

// readWithin reads want events from r, failing the test if they do not
// come within d.
func readWithin(t *testing.T, r io.Reader, want int, d time.Duration) []Event {
	t.Helper()
	got := make(chan []Event, 1)
	go func() { got <- readLines(r, want) }()
	select {
	case evs := <-got:
		return evs
	case <-time.After(d):
		t.Fatalf("%d events not written within %s", want, d)
		return nil
	}
}

// A destination whose writes block (a pipe nobody reads: a hung disk)
// never blocks Record; the queue holds what fits its bound, the rest is
// counted, and once the writer unblocks every queued event arrives, in
// order.
func TestRecordNeverBlocksOnAStalledWriter(t *testing.T) {
	pr, pw := io.Pipe()
	const limit = 16
	l := New(pw, slog.New(slog.DiscardHandler), Options{QueueEvents: limit, UnauthenticatedQueueEvents: 4})
	within(t, 5*time.Second, "Record with the writer stalled", func() {
		for i := range 3 * limit {
			l.Record(session(i))
		}
	})
	dropped := testutil.ToFloat64(l.metrics.dropped.WithLabelValues("file", "authenticated", "queue_full"))
	if dropped != 2*limit {
		t.Errorf("dropped %v of %d with room for %d", dropped, 3*limit, limit)
	}
	// The writer unblocks: everything queued is written, in order.
	evs := readWithin(t, pr, limit, 10*time.Second)
	for i, e := range evs {
		if e.Session != session(i).Session {
			t.Fatalf("event %d is %s: lost or out of order", i, e.Session)
		}
	}
	// Room again once the writer has let go of its batch: a new event goes
	// through.
	out := (*l.outputs.Load())[0]
	deadline := time.Now().Add(10 * time.Second)
	for out.pending() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d events still held after they were written", out.pending())
		}
		time.Sleep(time.Millisecond)
	}
	l.Record(session(1000))
	if evs := readWithin(t, pr, 1, 10*time.Second); len(evs) != 1 || evs[0].Session != "s1000" {
		t.Errorf("after the stall: %+v", evs)
	}
	go io.Copy(io.Discard, pr)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// While the disk keeps up, Record returns once its event is in the file:
// the record exists before the client learns the outcome.
func TestWriteThroughWhileHealthy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 50 {
		l.Record(session(i))
		b, _ := os.ReadFile(path)
		if n := strings.Count(string(b), "\n"); n != i+1 {
			t.Fatalf("after %d Records the file has %d lines", i+1, n)
		}
	}
}

// With the writer stuck, Record waits at most WriteWait, and once the
// writer has been stuck longer than that, not at all.
func TestStuckWriterIsNotWaitedFor(t *testing.T) {
	pr, pw := io.Pipe()
	const wait = 50 * time.Millisecond
	l := New(pw, slog.New(slog.DiscardHandler), Options{WriteWait: wait})
	start := time.Now()
	l.Record(session(0)) // the writer takes it and hangs in Write
	if d := time.Since(start); d < wait || d > wait+2*time.Second {
		t.Errorf("first Record with the writer hung took %v, want about %v", d, wait)
	}
	start = time.Now()
	for i := 1; i <= 100; i++ {
		l.Record(session(i))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("100 Records with the writer known stuck took %v: they waited", d)
	}
	go io.Copy(io.Discard, pr)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// With the destination stalled, a flood of failed authentications fills
// only its own budget: every session event still gets its place, and
// arrives once the writer unblocks.
func TestNoiseNeverDisplacesSessions(t *testing.T) {
	pr, pw := io.Pipe()
	logs := &logRecorder{}
	l := New(pw, slog.New(logs), Options{QueueEvents: 64, UnauthenticatedQueueEvents: 8, ReportInterval: time.Hour})
	within(t, 5*time.Second, "Record with the writer stalled", func() {
		l.Record(noise(-1)) // the writer takes it and blocks writing it
		for i := range 1000 {
			l.Record(noise(i))
		}
		for i := range 50 {
			l.Record(session(i))
		}
	})
	if v := testutil.ToFloat64(l.metrics.dropped.WithLabelValues("file", "unauthenticated", "queue_full")); v != 1001-8 {
		t.Errorf("noise dropped %v, want %d", v, 1001-8)
	}
	if v := testutil.ToFloat64(l.metrics.dropped.WithLabelValues("file", "authenticated", "queue_full")); v != 0 {
		t.Errorf("session events dropped: %v", v)
	}
	evs := readWithin(t, pr, 8+50, 10*time.Second)
	sessions := 0
	for _, e := range evs {
		if e.Type == TypeSessionStart {
			sessions++
		}
	}
	if sessions != 50 {
		t.Errorf("%d of 50 session events written", sessions)
	}
	if lines := logs.count("dropping failed-authentication events"); lines != 1 {
		t.Errorf("%d log lines about the dropped noise, want 1 per interval", lines)
	}
	go io.Copy(io.Discard, pr)
	l.Close()
}

type blockingSink struct {
	release chan struct{}
	memSink
}

func (b *blockingSink) Record(e Event) { <-b.release; b.memSink.Record(e) }

// A stalled sink stalls neither Record nor the audit file; Close waits
// (bounded) for it and says what it could not deliver.
func TestStalledSinkStallsNoOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := &blockingSink{release: make(chan struct{})}
	l.AddSink(s)
	within(t, 5*time.Second, "Record with a sink stalled", func() {
		for i := range 100 {
			l.Record(session(i))
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Count(string(b), "\n") == 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit file has %d of 100 lines while the sink is stalled", strings.Count(string(b), "\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.CloseContext(ctx); err == nil || !strings.Contains(err.Error(), "100 events not written") {
		t.Errorf("Close with a stalled sink: %v", err)
	}
	close(s.release)
}

// Close writes everything queued before it returns; events after Close
// are counted, not written.
func TestCloseFlushes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := &memSink{}
	l.AddSink(s)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				l.Record(session(g*1000 + i))
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Record(session(9999))
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n != 2000 || len(s.events) != 2000 {
		t.Errorf("file %d lines, sink %d events; want 2000", n, len(s.events))
	}
	if v := testutil.ToFloat64(l.metrics.dropped.WithLabelValues("file", "authenticated", "closed")); v != 1 {
		t.Errorf("event after Close counted %v times", v)
	}
}

func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want Class
	}{
		{Event{Type: TypeAuth, Result: ResultFail}, ClassUnauthenticated},
		{Event{Type: TypeAuth, Result: ResultOK}, ClassAuthenticated},
		{Event{Type: TypeAuth, Result: ResultDenied}, ClassAuthenticated},
		{Event{Type: TypeSessionStart}, ClassAuthenticated},
		{Event{Type: TypeSessionEnd, Result: ResultFail}, ClassAuthenticated},
		{Event{Type: TypeBackend, Result: ResultFail}, ClassAuthenticated},
		{Event{Type: TypeAdmin}, ClassAuthenticated},
		{Event{Type: "slurm", Result: ResultFail}, ClassAuthenticated},
	} {
		if got := ClassOf(tc.e); got != tc.want {
			t.Errorf("%s/%s: %s, want %s", tc.e.Type, tc.e.Result, got, tc.want)
		}
	}
}

// logRecorder is a slog.Handler that keeps the messages logged.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	return nil
}

// count is how many messages contained s.
func (r *logRecorder) count(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if strings.Contains(m, s) {
			n++
		}
	}
	return n
}

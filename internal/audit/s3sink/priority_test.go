package s3sink

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// randomHex is n incompressible-ish characters, so that gzip cannot make
// a spool budget meaningless.
func randomHex(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// strangerFailure is what a stranger's guess costs the audit trail.
func strangerFailure(i int) audit.Event {
	return audit.Event{Type: audit.TypeAuth, Gateway: "gw1", Session: fmt.Sprintf("n%06d", i), User: randomHex(64),
		Src: "198.51.100.7:4242", Method: "password", Result: audit.ResultFail, Reason: "no such user"}
}

// loggerDropped is how many events of class c the audit logger's queues
// dropped.
func loggerDropped(t *testing.T, l *audit.Logger, c audit.Class) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(l.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "frontdoor_audit_dropped_events_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "class" && lp.GetValue() == c.String() {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// outage is a sink with the given spool budgets whose bucket is down.
func outage(t *testing.T, spoolMax, unauthMax int64, batchEvents int) (*fakeS3, *Sink) {
	f := startS3(t)
	cfg := testConfig(f, t.TempDir())
	cfg.SpoolMaxBytes, cfg.SpoolUnauthenticatedMaxBytes, cfg.BatchMaxEvents = spoolMax, unauthMax, batchEvents
	s := newSink(t, cfg, nil)
	f.setMode(modeRefuse)
	return f, s
}

func dropped(s *Sink, reason string, c audit.Class) float64 {
	return testutil.ToFloat64(s.metrics.dropped.WithLabelValues(reason, c.String()))
}

// The attack of issue 21: during an S3 outage, failed-auth spam from
// strangers fills the spool; then real sessions happen. Through the
// gateway's own path (audit.Logger → its queue → this sink): the noise
// takes only its share and its drop is counted, every session record is
// kept and uploaded once S3 is back.
func TestNoiseCannotDisplaceSessions(t *testing.T) {
	f, s := outage(t, 256<<10, 32<<10, 100)
	cfg := s.cfg
	l := audit.New(nil, slog.New(slog.DiscardHandler), audit.Options{})
	l.AddSink(s)

	for i := range 20000 {
		l.Record(strangerFailure(i))
	}
	for i := range 500 {
		l.Record(audit.Event{Type: audit.TypeSessionStart, Gateway: "gw1", Session: fmt.Sprintf("s%05d", i), User: "alice", Node: "login1"})
		l.Record(audit.Event{Type: audit.TypeAdmin, Gateway: "gw1", Session: fmt.Sprintf("a%05d", i), User: "root", Reason: "drain login2"})
	}
	if err := l.Close(); err != nil { // every event handed to the sink
		t.Fatal(err)
	}
	noiseDropped := dropped(s, "spool_full", audit.ClassUnauthenticated)
	if noiseDropped == 0 {
		t.Fatal("no failed-auth event dropped: the spool was never under pressure, the test proves nothing")
	}
	s.mu.Lock()
	noiseBytes, total := s.bytes[audit.ClassUnauthenticated], s.totalLocked()
	s.mu.Unlock()
	if noiseBytes > cfg.SpoolUnauthenticatedMaxBytes {
		t.Errorf("failed auth takes %d bytes of the spool, over its %d", noiseBytes, cfg.SpoolUnauthenticatedMaxBytes)
	}
	if v := loggerDropped(t, l, audit.ClassAuthenticated); v != 0 {
		t.Errorf("the audit logger's queue dropped %v session/admin events", v)
	}
	f.setMode(modeNormal)
	closeSink(t, s)
	counts, _ := f.sessionCounts(t)
	for i := range 500 {
		for _, id := range []string{fmt.Sprintf("s%05d", i), fmt.Sprintf("a%05d", i)} {
			if counts[id] != 1 {
				t.Fatalf("%s in the bucket %d times, want 1", id, counts[id])
			}
		}
	}
	if v := dropped(s, "spool_full", audit.ClassAuthenticated); v != 0 {
		t.Errorf("%v session/admin events dropped", v)
	}
	t.Logf("20000 failed logins: %.0f dropped by the logger's queue, %.0f by the spool (%d bytes of the spool, total %d); 1000 session/admin events: all uploaded",
		loggerDropped(t, l, audit.ClassUnauthenticated), noiseDropped, noiseBytes, total)
}

// When session records need room that is not there, failed-auth batches
// already in the spool are shed — counted, and said in the next batch
// header — before any session record is dropped.
func TestNoiseShedForSessions(t *testing.T) {
	f, s := outage(t, 128<<10, 64<<10, 10000)
	// Noise up to its budget, closed into bodies.
	for i := 0; dropped(s, "spool_full", audit.ClassUnauthenticated) == 0; i++ {
		s.Record(strangerFailure(i))
		if i%100 == 99 {
			s.mu.Lock()
			s.rotateLocked(audit.ClassUnauthenticated)
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	s.rotateLocked(audit.ClassUnauthenticated)
	s.mu.Unlock()
	eventually(t, "noise sealed into bodies", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.ready) == 0 && len(s.bodies) > 0
	})
	// Sessions, until one needs more than the room left beside the noise.
	n := 0
	for ; n < 1000 && dropped(s, "shed", audit.ClassUnauthenticated) == 0; n++ {
		s.Record(audit.Event{Time: time.Now(), Type: audit.TypeSessionEnd, Gateway: "gw1", Session: fmt.Sprintf("s%05d", n), User: "alice", Reason: randomHex(300)})
	}
	shed := dropped(s, "shed", audit.ClassUnauthenticated)
	if shed == 0 {
		t.Fatal("no failed-auth batch shed: the sessions never needed the room")
	}
	if v := dropped(s, "spool_full", audit.ClassAuthenticated); v != 0 {
		t.Fatalf("%v session events dropped while failed-auth batches could be shed", v)
	}
	f.setMode(modeNormal)
	closeSink(t, s)
	counts, _ := f.sessionCounts(t)
	for i := range n {
		if id := fmt.Sprintf("s%05d", i); counts[id] != 1 {
			t.Fatalf("%s in the bucket %d times", id, counts[id])
		}
	}
	var reported int64
	for _, c := range f.chains(t) {
		for _, b := range c {
			reported += b.Header.Dropped[audit.ClassUnauthenticated.String()]
		}
	}
	if want := int64(shed + dropped(s, "spool_full", audit.ClassUnauthenticated)); reported != want {
		t.Errorf("batch headers report %d dropped failed-auth events, the sink dropped %d", reported, want)
	}
	t.Logf("%d session events kept; %.0f failed-auth events shed from the spool for them", n, shed)
}

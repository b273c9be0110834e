package s3sink

import (
	"context"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// BenchmarkRecord is the cost a login pays per audit event with S3
// shipping on: one JSON encoding and one append to the spool (uploads run
// behind it, against gofakes3).
func BenchmarkRecord(b *testing.B) {
	f := startS3(b)
	cfg := testConfig(f, b.TempDir())
	cfg.BatchMaxEvents = 1000
	s, err := New(context.Background(), cfg, "gw1", Options{Logger: quietLog()})
	if err != nil {
		b.Fatal(err)
	}
	e := audit.Event{Time: time.Now(), Type: audit.TypeSessionEnd, Gateway: "gw1", Session: "3f2a9c0d1e2b", User: "alice",
		Src: "192.0.2.10:50122", Node: "ip-10-1-0-11", Result: "ok", BytesIn: 123456, BytesOut: 7654321, Duration: 3600.5, Channels: 3}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Record(e)
	}
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

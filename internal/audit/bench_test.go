package audit

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var benchEvent = Event{Time: time.Now(), Type: TypeSessionEnd, Gateway: "gw1", Session: "3f2a9c0d1e2b", User: "alice",
	Src: "192.0.2.10:50122", Node: "ip-10-1-0-11", Result: "ok", BytesIn: 123456, BytesOut: 7654321, Duration: 3600.5, Channels: 3}

// BenchmarkRecord is what a login pays per audit event with an audit
// file on a working disk: the process log line (discarded here), the
// hand-off to the file's writer and the wait for its write, from many
// logins at once.
func BenchmarkRecord(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "audit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	l := New(f, slog.New(slog.DiscardHandler), Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Record(benchEvent)
		}
	})
	b.StopTimer()
	l.Close()
}

// BenchmarkRecordStalled is the same with the file's disk hung (a pipe
// nobody reads): the queue fills, then every event is counted and
// dropped; nothing waits.
func BenchmarkRecordStalled(b *testing.B) {
	pr, pw := io.Pipe()
	l := New(pw, slog.New(slog.DiscardHandler), Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Record(benchEvent)
		}
	})
	b.StopTimer()
	go io.Copy(io.Discard, pr)
	l.Close()
}

package audit

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
		l.Close()
		if len(s.events) != 2 || s.events[0].Time.IsZero() || s.events[1].Type != TypeSessionStart {
			t.Errorf("file %q: sink got %+v", file, s.events)
		}
	}
	b, _ := os.ReadFile(path)
	if strings.Count(string(b), "\n") != 2 {
		t.Errorf("audit file: %q", b)
	}
}

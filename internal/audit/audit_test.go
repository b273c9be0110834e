package audit

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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

// A file swapped in takes the events from then on; the previous one is
// closed.
func TestSetFile(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	l, err := Open(first, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Record(Event{Type: TypeAuth, User: "alice"})
	if _, err := OpenFile(filepath.Join(dir, "missing", "c.jsonl")); err == nil {
		t.Fatal("opened a file in a missing directory")
	}
	f, err := OpenFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetFile(f); err != nil {
		t.Fatal(err)
	}
	l.Record(Event{Type: TypeAuth, User: "carol"})
	for path, want := range map[string][]string{first: {"alice"}, second: {"carol"}} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e Event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatal(err)
			}
			got = append(got, e.User)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s holds %v, want %v", filepath.Base(path), got, want)
		}
	}
}

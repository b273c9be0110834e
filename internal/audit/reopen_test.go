package audit

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A file or sink swapped in takes the events from then on; the one it
// replaces has written what it held, and the previous file is closed.
func TestSetFileAndSinks(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	l, err := Open(first, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s1, s2 := &memSink{}, &memSink{}
	l.AddSink(s1)
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
	l.SetSinks(s2)
	l.Record(Event{Type: TypeAuth, User: "carol"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
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
	for s, want := range map[*memSink]string{s1: "alice", s2: "carol"} {
		s.mu.Lock()
		if len(s.events) != 1 || s.events[0].User != want {
			t.Errorf("sink holds %+v, want %s only", s.events, want)
		}
		s.mu.Unlock()
	}
}

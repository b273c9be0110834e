package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSummarizeRuns checks the series table: a goal's value in each run,
// pinned runs on rows of their own, the median, and the count of runs
// that met it.
func TestSummarizeRuns(t *testing.T) {
	g := func(v float64, met bool) []goal {
		return []goal{{Goal: "throughput ×socat, aes, up", Value: v, Aim: "≥ 0.95", Met: met}}
	}
	results := []*result{
		{Goals: g(0.90, false)},
		{Goals: g(1.00, true)},
		{Goals: g(0.97, true)},
		{Goals: g(1.10, true), Pinned: true},
	}
	dir := t.TempDir()
	var names []string
	var loaded []*result
	for i, r := range results {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "relay-run"+string(rune('a'+i))+".json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := loadResult(path)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, "run"+string(rune('a'+i)))
		loaded = append(loaded, l)
	}
	s := summarizeRuns(names, loaded)
	for _, want := range []string{
		"| goal | aim | runa | runb | runc | rund | median | met |",
		"| throughput ×socat, aes, up | ≥ 0.95 | 0.90 | **1.00** | **0.97** |  | 0.97 | 2 of 3 |",
		"| throughput ×socat, aes, up, pinned | ≥ 0.95 |  |  |  | **1.10** | 1.10 | 1 of 1 |",
		"Met in every run: 1 of 2 goals.",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if _, err := loadResult(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file loaded")
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{"goals":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadResult(empty); err == nil {
		t.Error("a result without goals loaded")
	}
}

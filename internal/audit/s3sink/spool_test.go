package s3sink

import (
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

func TestBatchFileNames(t *testing.T) {
	for _, tc := range []struct {
		b    batchFile
		name string
	}{
		{batchFile{kind: "open", class: audit.ClassAuthenticated, id: 7}, "open-authenticated-0000000007.jsonl"},
		{batchFile{kind: "body", class: audit.ClassUnauthenticated, id: 6}, "body-unauthenticated-0000000006.jsonl.gz"},
		{batchFile{kind: "link", id: 5, seq: 42}, "link-0000000042-0000000005.jsonl.gz"},
	} {
		if got := tc.b.name(); got != tc.name {
			t.Errorf("%+v: name %q, want %q", tc.b, got, tc.name)
		}
		back, ok := parseBatchFile(tc.name)
		if !ok || back != tc.b {
			t.Errorf("parse %q: %+v %v", tc.name, back, ok)
		}
	}
	for _, bad := range []string{"", "chain", "seq", "open-authenticated-7.jsonl", "open-authenticated-0000000007.jsonl.gz",
		"body-authenticated-0000000007.jsonl", "body-noise-0000000007.jsonl.gz", "link-0000000001-0000000002.jsonl",
		"open-authenticated-00000000007.jsonl", "2026-12-03_gw1-0000000042.jsonl.gz", "link-0000000042-0000000005.jsonl.gz.tmp"} {
		if b, ok := parseBatchFile(bad); ok {
			t.Errorf("parseBatchFile(%q) accepted: %+v", bad, b)
		}
	}
}

// Spool file names are read back at start: whatever is in the directory,
// a name that parses round-trips.
func FuzzParseBatchFile(f *testing.F) {
	f.Add("open-authenticated-0000000007.jsonl")
	f.Add("body-unauthenticated-0000000006.jsonl.gz")
	f.Add("link-0000000042-0000000005.jsonl.gz")
	f.Add("link-18446744073709551615-0000000005.jsonl.gz")
	f.Fuzz(func(t *testing.T, s string) {
		b, ok := parseBatchFile(s)
		if !ok {
			return
		}
		if b.name() != s {
			t.Fatalf("%q → %+v → %q", s, b, b.name())
		}
	})
}

package s3sink

import (
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

func TestKeys(t *testing.T) {
	day := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		k   Key
		key string
	}{
		{Key{Gateway: "gw-1.example", Day: day, Chain: "20261203T060102Z-1a2b3c4d", Seq: 42},
			"audit/gw-1.example/2026/12/03/20261203T060102Z-1a2b3c4d-0000000042.jsonl.gz"},
		{Key{Gateway: "gw1", Day: day, Seq: 42, Legacy: true}, "audit/2026/12/03/gw1-0000000042.jsonl.gz"},
		// A gateway named like a year is still told apart by the segments.
		{Key{Gateway: "2026", Day: day, Chain: "20261203T060102Z-1a2b3c4d", Seq: 1},
			"audit/2026/2026/12/03/20261203T060102Z-1a2b3c4d-0000000001.jsonl.gz"},
		{Key{Gateway: "gw1", Day: day, Chain: "20261203T060102Z-1a2b3c4d", Seq: 12345678901},
			"audit/gw1/2026/12/03/20261203T060102Z-1a2b3c4d-12345678901.jsonl.gz"},
	} {
		if got := tc.k.String("audit"); got != tc.key {
			t.Errorf("%+v: %q, want %q", tc.k, got, tc.key)
		}
		back, err := ParseKey("audit", tc.key)
		if err != nil || back != tc.k {
			t.Errorf("ParseKey(%q) = %+v, %v", tc.key, back, err)
		}
	}
	for _, bad := range []string{
		"audit/gw1/2026/12/03/20261203T060102Z-1a2b3c4d-42.jsonl.gz",                   // short seq
		"audit/gw1/2026/12/03/20261203T060102Z-1a2b3c4d-00000000042.jsonl.gz",          // padded beyond 10
		"audit/gw1/2026/13/03/20261203T060102Z-1a2b3c4d-0000000042.jsonl.gz",           // no such month
		"audit/gw1/2026/12/3/20261203T060102Z-1a2b3c4d-0000000042.jsonl.gz",            // not zero-padded
		"audit/gw_1/2026/12/03/20261203T060102Z-1a2b3c4d-0000000042.jsonl.gz",          // not a gateway name
		"audit/gw1/2026/12/03/20261203T060102Z-1A2B3C4D-0000000042.jsonl.gz",           // not a chain name
		"audit/gw1/2026/12/03/20261203T060102Z-1a2b3c4d-0000000042.jsonl",              // not gzip
		"audit/gw1/x/2026/12/03/20261203T060102Z-1a2b3c4d-0000000042.jsonl.gz",         // too deep
		"audit/2026/12/03/gw_1-0000000042.jsonl.gz",                                    // legacy, bad gateway
		"other/gw1/2026/12/03/20261203T060102Z-1a2b3c4d-0000000042.jsonl.gz",           // another prefix
		"audit/gw1/2026/12/03/20261203T060102Z-1a2b3c4d-99999999999999999999.jsonl.gz", // overflows
		"audit/readme.txt",
	} {
		if k, err := ParseKey("audit", bad); err == nil {
			t.Errorf("ParseKey(%q) accepted: %+v", bad, k)
		}
	}
	got := strings.Join(DayPrefixes("audit", []string{"gw1", "gw2"}, day.Add(5*time.Hour)), " ")
	if got != "audit/2026/12/03/ audit/gw1/2026/12/03/ audit/gw2/2026/12/03/" {
		t.Errorf("DayPrefixes: %s", got)
	}
}

// Object keys are read from a bucket a stolen gateway writes into: a key
// that parses names a valid gateway and round-trips exactly.
func FuzzParseKey(f *testing.F) {
	f.Add("audit/gw1/2026/12/03/20261203T060102Z-1a2b3c4d-0000000042.jsonl.gz")
	f.Add("audit/2026/12/03/gw1-0000000042.jsonl.gz")
	f.Add("audit/2026/2026/12/03/20261203T060102Z-1a2b3c4d-18446744073709551615.jsonl.gz")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey("audit", s)
		if err != nil {
			return
		}
		if !names.Gateway.Valid(k.Gateway) || k.Legacy == (k.Chain != "") {
			t.Fatalf("%q → %+v", s, k)
		}
		if back := k.String("audit"); back != s {
			t.Fatalf("%q → %+v → %q", s, k, back)
		}
	})
}

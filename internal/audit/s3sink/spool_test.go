package s3sink

import (
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

func TestBatchNames(t *testing.T) {
	b := batchName{day: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC), gateway: "gw-1.example", seq: 42}
	if got := b.String(); got != "2026-12-03_gw-1.example-0000000042" {
		t.Errorf("name %q", got)
	}
	if got := b.key("audit"); got != "audit/2026/12/03/gw-1.example-0000000042.jsonl.gz" {
		t.Errorf("key %q", got)
	}
	back, err := parseBatchName(b.String())
	if err != nil || back != b {
		t.Errorf("parse: %+v %v", back, err)
	}
	for _, bad := range []string{"", "2026-12-03", "2026-13-03_gw-1", "2026-12-03_gw", "2026-12-03_-1", "2026-12-03_gw-x", "2026-12-03_g/w-1", "2026-12-03_gw-99999999999999999999999"} {
		if _, err := parseBatchName(bad); err == nil {
			t.Errorf("parseBatchName(%q) accepted", bad)
		}
	}
}

// Spool file names are read back at start: whatever is in the directory,
// a name that parses names a safe key and round-trips.
func FuzzParseBatchName(f *testing.F) {
	f.Add("2026-12-03_gw1-0000000001")
	f.Add("2026-12-03_a.b-c-18446744073709551615")
	f.Add("0000-01-01_x-0")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := parseBatchName(s)
		if err != nil {
			return
		}
		if !names.Gateway.Valid(b.gateway) {
			t.Fatalf("%q: gateway %q", s, b.gateway)
		}
		if !prefixRE.MatchString(b.key("audit")) {
			t.Fatalf("%q: unsafe key %q", s, b.key("audit"))
		}
		again, err := parseBatchName(b.String())
		if err != nil || again != b {
			t.Fatalf("%q → %q does not round-trip: %+v %v", s, b.String(), again, err)
		}
	})
}

package verify

import (
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
)

// FuzzInspect: verify's checks of one object, on any key a listing can
// return and any bytes a stolen gateway can upload. Never a panic; every
// finding names the object; the hash is always the object's.
func FuzzInspect(f *testing.F) {
	hdr := `{"time":"2026-12-03T07:01:00Z","type":"batch","v":1,"gateway":"gw1","chain":"20261203T060000Z-00c0ffee","seq":2,"prev":"ab","events":1,"first":"2026-12-03T06:00:00Z","last":"2026-12-03T06:00:00Z"}`
	ev := `{"time":"2026-12-03T06:00:00Z","type":"session.start","gateway":"gw1","session":"s1"}`
	f.Add("audit/gw1/2026/12/03/20261203T060000Z-00c0ffee-0000000002.jsonl.gz", append(gzipped(hdr), gzipped(ev)...))
	f.Add("audit/2026/12/03/gw1-0000000002.jsonl.gz", gzipped(ev))
	f.Add("audit/gw1/2026/12/03/20261203T060000Z-00c0ffee-0000000002.jsonl.gz", gzipped(ev, hdr))
	f.Fuzz(func(t *testing.T, key string, body []byte) {
		k, err := s3sink.ParseKey("audit", key)
		if err != nil {
			return
		}
		got := inspect(Object{Key: key}, k, body, nil)
		if got.hash != audit.Hash(body) {
			t.Fatal("hash is not the object's")
		}
		for _, p := range got.problems {
			if p.Key != key || p.Kind == "" || p.Detail == "" {
				t.Fatalf("finding %+v", p)
			}
		}
	})
}

package gateway

import (
	"testing"
	"time"
)

func TestAdmission(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := newAdmission(AdmissionLimits{MaxStartups: 5, PerSourceMaxStartups: 3, PerSourceRate: 1, PerSourceBurst: 4}, clock)
	var held []func()
	admit := func(src, want string) {
		t.Helper()
		rel, why := a.admit(src)
		if why != want {
			t.Fatalf("admit(%s) refused %q, want %q", src, why, want)
		}
		if rel != nil {
			held = append(held, rel)
		}
	}
	admit("a", "")
	admit("a", "")
	admit("a", "")
	admit("a", admitPerSource) // three pending from a
	held[0]()
	held[0]()      // releasing twice is harmless
	admit("a", "") // fourth token of the burst
	held[1]()
	admit("a", admitRate) // burst of 4 used, no time passed
	now = now.Add(time.Second)
	admit("a", "") // one token per second
	admit("b", "")
	admit("c", "")
	admit("d", admitFull) // 5 pending: a×3, b, c
	if n := a.unauthenticated(); n != 5 {
		t.Fatalf("unauthenticated = %d, want 5", n)
	}
	rel, why := a.admitExempt()
	if why != admitFull || rel != nil {
		t.Fatalf("exempt source beyond max_startups: %q", why)
	}
}

func TestSourceKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:5555":            "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:22": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:22": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.7]:22":     "192.0.2.7",
		"[fe80::1%eth0]:22":         "fe80::/64",
		"not an address":            "not an address",
		"2001:db8:1:2:3:4:5:6":      "2001:db8:1:2::/64",
	} {
		if got := SourceKey(in); got != want {
			t.Errorf("SourceKey(%q) = %q, want %q", in, got, want)
		}
	}
}

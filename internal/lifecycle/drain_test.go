package lifecycle

import (
	"strings"
	"testing"
	"time"
)

func TestDrainNotices(t *testing.T) {
	start := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		reason  string
		timeout time.Duration
		at      []time.Duration // after start
		first   string
	}{
		{ReasonShutdown, 30 * time.Minute, []time.Duration{0, 20 * time.Minute, 29 * time.Minute},
			"this gateway is shutting down: this session goes on until it ends, or at most 30m (until 09:30 UTC); log in again to continue through another gateway"},
		{ReasonUpgrade, 2 * time.Hour, []time.Duration{0, 110 * time.Minute, 119 * time.Minute},
			"this gateway has been upgraded: this session goes on until it ends, or at most 2h (until 11:00 UTC); new logins already use the new version"},
		{ReasonShutdown, 5 * time.Minute, []time.Duration{0, 4 * time.Minute}, ""},
		{ReasonShutdown, 10 * time.Minute, []time.Duration{0, 9 * time.Minute}, ""}, // "10 minutes before" is the start
		{ReasonShutdown, 20 * time.Second, []time.Duration{0}, ""},
	} {
		ns := drainNotices(tt.reason, start, start.Add(tt.timeout))
		var got []time.Duration
		for _, n := range ns {
			got = append(got, n.at.Sub(start))
			if strings.ContainsAny(n.text, "\r\n") {
				t.Errorf("notice %q is not one line", n.text)
			}
		}
		if len(got) != len(tt.at) {
			t.Fatalf("%s %s: notices at %v, want %v", tt.reason, tt.timeout, got, tt.at)
		}
		for i := range got {
			if got[i] != tt.at[i] {
				t.Fatalf("%s %s: notices at %v, want %v", tt.reason, tt.timeout, got, tt.at)
			}
		}
		if tt.first != "" && ns[0].text != tt.first {
			t.Errorf("first notice %q, want %q", ns[0].text, tt.first)
		}
	}
	if n := drainNotices(ReasonShutdown, start, start.Add(time.Hour)); n[2].text != "this session will be closed in 1m (gateway shutting down); log in again to continue through another gateway" {
		t.Errorf("last warning %q", n[2].text)
	}
	if s := closeText(ReasonShutdown, 90*time.Minute); s != "gateway shutting down (drain timeout 1h30m); log in again to continue through another gateway" {
		t.Errorf("close text %q", s)
	}
}

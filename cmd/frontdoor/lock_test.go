package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseExpire(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.Local)
	for _, tc := range []struct {
		in    string
		d     time.Duration
		until time.Time
		err   string
	}{
		{in: "90m", d: 90 * time.Minute},
		{in: "8h", d: 8 * time.Hour},
		{in: "7d", d: 7 * 24 * time.Hour},
		{in: "2026-12-24", until: time.Date(2026, 12, 24, 0, 0, 0, 0, time.Local)},
		{in: "2026-12-24 18:30", until: time.Date(2026, 12, 24, 18, 30, 0, 0, time.Local)},
		{in: "2026-12-24T18:30:00Z", until: time.Date(2026, 12, 24, 18, 30, 0, 0, time.UTC)},
		{in: "0s", err: "positive"},
		{in: "-1h", err: "positive"},
		{in: "0d", err: "positive"},
		{in: "2026-01-01", err: "past"},
		{in: "tomorrow", err: "want a duration"},
	} {
		d, until, err := parseExpire(tc.in, now)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
		case err != nil || d != tc.d || !until.Equal(tc.until):
			t.Errorf("%q: %v %v %v, want %v %v", tc.in, d, until, err, tc.d, tc.until)
		}
	}
}

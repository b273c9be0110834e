package lifecycle

import (
	"strings"
	"testing"
	"time"
)

// The drains the new process sends the old one: read back as sent, and
// refused whole when one would put anything but text on a terminal.
func TestMaintenanceMessage(t *testing.T) {
	at := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	in := strings.Join([]string{
		`{"t":"maintenance","maintenance":[{"node":"login2","deadline":"2026-12-03T15:00:00Z","message":"kernel update","by":"unix:root"}]}`,
		`{"t":"maintenance","maintenance":[]}`,
		`{"t":"maintenance","maintenance":[{"node":"login2","message":"\u001b[2J"}]}`,
		`{"t":"maintenance","maintenance":[{"node":"../etc","message":"x"}]}`,
	}, "\n") + "\n"
	r := newLineReader(strings.NewReader(in))
	m, err := r.next("maintenance")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := checkMaintenance(m.Maintenance)
	if err != nil || len(ds) != 1 || ds[0].Node != "login2" || !ds[0].Deadline.Equal(at) || ds[0].Message != "kernel update" || ds[0].By != "unix:root" {
		t.Fatalf("drains %+v, %v", ds, err)
	}
	if m, err = r.next("maintenance"); err != nil {
		t.Fatal(err)
	}
	if ds, err := checkMaintenance(m.Maintenance); err != nil || len(ds) != 0 {
		t.Fatalf("no drains: %+v %v", ds, err)
	}
	for _, want := range []string{"U+001B", "node name"} {
		if m, err = r.next("maintenance"); err != nil {
			t.Fatal(err)
		}
		if _, err := checkMaintenance(m.Maintenance); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("want %q: %v", want, err)
		}
	}
}

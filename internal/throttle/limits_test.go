package throttle

import (
	"reflect"
	"testing"
	"time"
)

// SetLimits takes every limit (a field added to Config and forgotten there
// fails here) and keeps the failures counted so far.
func TestSetLimits(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	cfg := DefaultConfig()
	cfg.Now = func() time.Time { return now }
	th := New(cfg)
	th.Failure("alice", "192.0.2.1")
	th.Failure("alice", "192.0.2.1")
	now = now.Add(2 * time.Minute) // past the backoff, within the window
	if _, ok := th.Check("alice", ""); !ok {
		t.Fatal("two failures under a limit of three refused")
	}

	next := Config{UserFailures: 2, UserSourceFailures: 2, UserWindow: time.Hour, SourceFailures: 7, SourceWindow: 2 * time.Hour,
		BaseDelay: 3 * time.Second, MaxDelay: 4 * time.Minute, MaxEntries: 5, MaxInFlightPerUser: 2, MaxInFlightPerSource: 9,
		Now: time.Now}
	th.SetLimits(next)
	got, want := reflect.ValueOf(th.cfg), reflect.ValueOf(next)
	for i := range got.NumField() {
		name := got.Type().Field(i).Name
		if name == "Now" {
			continue // the throttle's clock is th.now, checked below
		}
		if !reflect.DeepEqual(got.Field(i).Interface(), want.Field(i).Interface()) {
			t.Errorf("%s = %v after SetLimits, want %v", name, got.Field(i), want.Field(i))
		}
	}
	if th.now().Year() != 2026 {
		t.Error("SetLimits replaced the throttle's clock")
	}
	if _, ok := th.Check("alice", ""); ok {
		t.Fatal("the two failures counted before are not judged by the new limit of two")
	}
}

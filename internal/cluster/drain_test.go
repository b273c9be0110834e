package cluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The texts a drain may carry to users' terminals, and those it may not.
func TestCheckDrainText(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		ok      bool
	}{
		{"empty", "", true},
		{"plain", "kernel update", true},
		{"unicode", "Kernel-Update — bitte speichern, 保存してください", true},
		{"at the limit", strings.Repeat("x", MaxDrainMessage), true},
		{"one over", strings.Repeat("x", MaxDrainMessage+1), false},
		{"escape sequence", "kernel \x1b[2J\x1b[Hupdate", false},
		{"OSC title", "\x1b]0;pwned\x07", false},
		{"newline", "line one\nline two", false},
		{"carriage return", "all fine\rrm -rf", false},
		{"tab", "a\tb", false},
		{"NUL", "a\x00b", false},
		{"DEL", "a\x7fb", false},
		{"C1 CSI", "a\u009b2Jb", false},
		{"bidi override", "update \u202eevil", false},
		{"bidi isolate", "update \u2066evil\u2069", false},
		{"line separator", "a\u2028b", false},
		{"paragraph separator", "a\u2029b", false},
		{"invalid UTF-8", "a\xffb", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDrainText(tc.s, MaxDrainMessage)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckDrainText(%q) = %v, want ok=%v", tc.s, err, tc.ok)
			}
		})
	}
}

func TestCheckDrainDeadline(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{{-time.Second, false}, {0, false}, {time.Nanosecond, true}, {30 * time.Minute, true},
		{MaxDrainDeadline, true}, {MaxDrainDeadline + time.Second, false}} {
		err := CheckDrainDeadline(now.Add(tc.d), now)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrDrainDeadline)) {
			t.Errorf("deadline in %s: %v, want ok=%v", tc.d, err, tc.ok)
		}
	}
}

// writer is judge that can also write (its writes queue, unsent).
func writer(t *testing.T) *Cluster {
	c := judge(t)
	c.pending, c.kick = map[string]entry{}, make(chan struct{}, 1)
	return c
}

// A local drain with a deadline: refused when hostile or out of bounds,
// listed with its deadline and message when not; an undrain ends it.
func TestDrainUntil(t *testing.T) {
	c := writer(t)
	now := time.Now()
	for _, tc := range []struct {
		name     string
		deadline time.Time
		message  string
		want     error
	}{
		{"past", now.Add(-time.Minute), "x", ErrDrainDeadline},
		{"too far", now.Add(MaxDrainDeadline + time.Hour), "x", ErrDrainDeadline},
		{"escape", now.Add(time.Hour), "\x1b[31mred", ErrDrainMessage},
		{"huge", now.Add(time.Hour), strings.Repeat("A", 1<<20), ErrDrainMessage},
		{"newline", now.Add(time.Hour), "a\nb", ErrDrainMessage},
	} {
		if err := c.DrainUntil("login1", tc.deadline, tc.message, "unix:root"); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if ds := c.Drains(); len(ds) != 0 {
		t.Fatalf("refused drains were stored: %+v", ds)
	}
	deadline := now.Add(30 * time.Minute)
	if err := c.DrainUntil("login1", deadline, "kernel update", "unix:root"); err != nil {
		t.Fatal(err)
	}
	ds := c.Drains()
	if len(ds) != 1 || ds[0].Node != "login1" || !ds[0].Deadline.Equal(deadline.Round(time.Millisecond)) ||
		ds[0].Message != "kernel update" || ds[0].By != "unix:root" {
		t.Fatalf("drains %+v", ds)
	}
	if ns := c.Nodes(); len(ns) != 0 {
		t.Fatalf("nodes %+v", ns) // no health: the drain alone lists nothing
	}
	// A plain drain afterwards is the latest intent: no deadline any more.
	if err := c.Drain("login1", true, "unix:ops"); err != nil {
		t.Fatal(err)
	}
	if ds := c.Drains(); len(ds) != 1 || !ds[0].Deadline.IsZero() || ds[0].By != "unix:ops" {
		t.Fatalf("after a plain drain: %+v", ds)
	}
	if err := c.Drain("login1", false, "unix:ops"); err != nil {
		t.Fatal(err)
	}
	if ds := c.Drains(); len(ds) != 0 {
		t.Fatalf("after undrain: %+v", ds)
	}
}

// Discovery's drains: never later than one in force, never over an
// admin's drain without a deadline, ended only by discovery itself.
func TestDrainIfSoonerUndrainIf(t *testing.T) {
	c := writer(t)
	now := time.Now()
	soon, later := now.Add(5*time.Minute), now.Add(10*time.Minute)
	wrote := func(deadline time.Time, want bool) {
		t.Helper()
		ok, err := c.DrainIfSooner("login1", deadline, "HyperPod is updating this node's software", "hyperpod")
		if err != nil || ok != want {
			t.Fatalf("DrainIfSooner(%s): %v %v, want wrote=%v", deadline.Sub(now).Round(time.Second), ok, err, want)
		}
	}
	wrote(later, true)
	wrote(soon, true)   // sooner: taken
	wrote(later, false) // a second gateway noticing later does not push it
	if ds := c.Drains(); len(ds) != 1 || !ds[0].Deadline.Equal(soon.Round(time.Millisecond)) {
		t.Fatalf("drains %+v", ds)
	}
	if _, err := c.DrainIfSooner("login1", now.Add(time.Minute), "\x1b[2J", "hyperpod"); !errors.Is(err, ErrDrainMessage) {
		t.Fatalf("hostile message: %v", err)
	}
	if ok, err := c.UndrainIf("login1", "unix:root"); ok || err != nil {
		t.Fatalf("UndrainIf by another author ended it: %v %v", ok, err)
	}
	if ok, err := c.UndrainIf("login1", "hyperpod"); !ok || err != nil {
		t.Fatalf("UndrainIf: %v %v", ok, err)
	}
	if ok, _ := c.UndrainIf("login1", "hyperpod"); ok {
		t.Fatal("UndrainIf twice")
	}
	// An admin's drain without a deadline: discovery leaves it alone.
	if err := c.Drain("login2", true, "unix:root"); err != nil {
		t.Fatal(err)
	}
	wrote2, err := c.DrainIfSooner("login2", soon, "m", "hyperpod")
	if wrote2 || err != nil {
		t.Fatalf("discovery replaced an admin's drain: %v %v", wrote2, err)
	}
	if ok, _ := c.UndrainIf("login2", "hyperpod"); ok {
		t.Fatal("discovery ended an admin's drain")
	}
}

// Drains from the gossip: what a gateway would not write is refused, and
// counted as bad_drain.
func TestAdmitDrain(t *testing.T) {
	c := judge(t)
	now := time.Now()
	ver := uint64(now.UnixNano())
	good := drainVal{Draining: true, By: "unix:root", Deadline: now.Add(time.Hour), Message: "kernel update", Until: now.Add(time.Hour + c.cfg.DrainTTL)}
	with := func(f func(*drainVal)) entry {
		v := good
		f(&v)
		return entry{Key: "d/login1", Ver: ver, Origin: "gw2", Val: val(t, v)}
	}
	for _, tc := range []struct {
		name string
		e    entry
		want string
	}{
		{"maintenance drain", with(func(*drainVal) {}), ""},
		{"deadline passed (a late copy: its sessions close at once)", with(func(v *drainVal) { v.Deadline = now.Add(-time.Hour) }), ""},
		{"plain drain of the previous release", entry{Key: "d/login1", Ver: ver, Origin: "gw2", Val: val(t, drainVal{Draining: true})}, ""},
		{"undrain", with(func(v *drainVal) { *v = drainVal{} }), ""},
		{"tombstone", entry{Key: "d/login1", Ver: ver, Origin: "gw2", Del: true}, ""},
		{"escape sequence", with(func(v *drainVal) { v.Message = "\x1b]0;owned\x07" }), refusedDrain},
		{"newline", with(func(v *drainVal) { v.Message = "ok\r\nfrontdoor: fake notice" }), refusedDrain},
		{"huge", with(func(v *drainVal) { v.Message = strings.Repeat("A", 100_000) }), refusedDrain},
		{"bidi", with(func(v *drainVal) { v.Message = "\u202e" }), refusedDrain},
		{"author with escapes", with(func(v *drainVal) { v.By = "\x1b[31mroot" }), refusedDrain},
		{"deadline a year ahead", with(func(v *drainVal) { v.Deadline = now.Add(365 * 24 * time.Hour) }), refusedDrain},
		{"lasting forever", with(func(v *drainVal) { v.Until = now.Add(100 * 365 * 24 * time.Hour) }), refusedDrain},
		{"not JSON", entry{Key: "d/login1", Ver: ver, Origin: "gw2", Val: []byte(`"x"`)}, refusedMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			_, err := c.admit(&e, true, now)
			if got := reasonOf(err); got != tc.want || (tc.want == "" && err != nil) {
				t.Fatalf("admit: %v (reason %q), want %q", err, got, tc.want)
			}
		})
	}
}

// Two gateways drain the same node differently at once: after both hear
// of both, they agree on one, the later write (or the larger origin on a
// tie), whatever order the writes arrive in.
func TestDrainMergeConverges(t *testing.T) {
	now := time.Now()
	a := entry{Key: "d/login1", Ver: 100, Origin: "gw1", Val: val(t, drainVal{Draining: true, Deadline: now.Add(time.Hour), Message: "from gw1"})}
	b := entry{Key: "d/login1", Ver: 100, Origin: "gw2", Val: val(t, drainVal{Draining: true, Deadline: now.Add(time.Minute), Message: "from gw2"})}
	c := entry{Key: "d/login1", Ver: 101, Origin: "gw1", Val: val(t, drainVal{By: "undrain"})}
	for _, order := range [][]entry{{a, b, c}, {c, b, a}, {b, c, a}, {a, c, b}} {
		s := newStore("gw3", DefaultConfig())
		for _, e := range order {
			s.merge(e, now)
		}
		got, _ := decode[drainVal](s.live("d/login1"))
		if got.Draining || got.By != "undrain" {
			t.Fatalf("order %v: %+v", keysOf(order), got)
		}
		s = newStore("gw3", DefaultConfig())
		for _, e := range order {
			if e.Ver == 100 {
				s.merge(e, now)
			}
		}
		got, _ = decode[drainVal](s.live("d/login1"))
		if got.Message != "from gw2" {
			t.Fatalf("tie, order %v: %+v", keysOf(order), got)
		}
	}
}

func keysOf(es []entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%s@%d ", e.Origin, e.Ver)
	}
	return b.String()
}

// A drain with a deadline reaches the other gateway with its deadline and
// message, and an undrain there ends it on both.
func TestDrainUntilGossiped(t *testing.T) {
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	gw2 := start(t, gatewayConfig("gw2", gw1), RoleGateway)
	deadline := time.Now().Add(time.Hour).Round(time.Millisecond)
	if err := gw1.DrainUntil("n1", deadline, "kernel update", "unix:root"); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		ds := gw2.Drains()
		if len(ds) != 1 || ds[0].Message != "kernel update" || !ds[0].Deadline.Equal(deadline) {
			return fmt.Errorf("gw2 drains %+v", ds)
		}
		return nil
	})
	if err := gw2.Drain("n1", false, "unix:root"); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		if ds := gw1.Drains(); len(ds) != 0 {
			return fmt.Errorf("gw1 drains %+v", ds)
		}
		return nil
	})
}

// FuzzCheckDrainText: whatever passes holds nothing a terminal acts on.
func FuzzCheckDrainText(f *testing.F) {
	for _, s := range []string{"kernel update", "\x1b[2J", "a\u202eb", "\u009b", "ok\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckDrainText(s, MaxDrainMessage) != nil {
			return
		}
		if len(s) > MaxDrainMessage || strings.ContainsAny(s, "\x1b\r\n\x00\x07\x08\x7f\u009b\u202e\u2028") {
			t.Fatalf("passed: %q", s)
		}
	})
}

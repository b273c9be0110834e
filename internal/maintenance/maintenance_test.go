package maintenance

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 6, 1, 14, 0, 0, 0, time.UTC)

// The schedule: told at once, warned at 10 and 1 minute before, closed at
// the deadline; never a burst of missed warnings; a changed drain starts
// over.
func TestPlan(t *testing.T) {
	d := Drain{Node: "login1", Deadline: t0.Add(30 * time.Minute), Message: "kernel update"}
	toldAt := func(at time.Time) *told { return &told{deadline: d.Deadline, message: d.Message, at: at} }
	for _, tc := range []struct {
		name   string
		d      Drain
		told   *told
		now    time.Time
		want   step
		before time.Duration
		next   time.Time
	}{
		{"new session", d, nil, t0, stepStart, 0, t0.Add(20 * time.Minute)},
		{"told, nothing due", d, toldAt(t0), t0.Add(time.Minute), stepNone, 0, t0.Add(20 * time.Minute)},
		{"10 minutes before", d, toldAt(t0), t0.Add(20 * time.Minute), stepWarn, 10 * time.Minute, t0.Add(29 * time.Minute)},
		{"warned at 10, nothing due", d, toldAt(t0.Add(20 * time.Minute)), t0.Add(25 * time.Minute), stepNone, 0, t0.Add(29 * time.Minute)},
		{"1 minute before", d, toldAt(t0.Add(20 * time.Minute)), t0.Add(29 * time.Minute), stepWarn, time.Minute, d.Deadline},
		{"both missed: only the latest", d, toldAt(t0), t0.Add(29*time.Minute + 30*time.Second), stepWarn, time.Minute, d.Deadline},
		{"first seen after 1 minute mark", d, nil, t0.Add(29*time.Minute + 30*time.Second), stepStart, 0, d.Deadline},
		{"told after the mark: not warned for it", d, toldAt(t0.Add(29*time.Minute + 30*time.Second)), t0.Add(29*time.Minute + 40*time.Second), stepNone, 0, d.Deadline},
		{"deadline", d, toldAt(t0.Add(29 * time.Minute)), d.Deadline, stepClose, 0, time.Time{}},
		{"deadline passed, never told", d, nil, d.Deadline.Add(time.Hour), stepClose, 0, time.Time{}},
		{"deadline moved", Drain{Node: "login1", Deadline: t0.Add(time.Hour), Message: d.Message}, toldAt(t0), t0.Add(time.Minute), stepStart, 0, t0.Add(50 * time.Minute)},
		{"message changed", Drain{Node: "login1", Deadline: d.Deadline, Message: "firmware"}, toldAt(t0), t0.Add(time.Minute), stepStart, 0, t0.Add(20 * time.Minute)},
		{"short drain: no warning before the start", Drain{Node: "login1", Deadline: t0.Add(30 * time.Second)}, nil, t0, stepStart, 0, t0.Add(30 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, before, next := plan(tc.d, tc.told, tc.now, DefaultWarnings)
			if got != tc.want || before != tc.before || !next.Equal(tc.next) {
				t.Fatalf("plan = %v %v %v, want %v %v %v", got, before, next, tc.want, tc.before, tc.next)
			}
		})
	}
}

func TestTexts(t *testing.T) {
	d := Drain{Node: "login1", Deadline: t0.Add(30 * time.Minute), Message: "kernel update"}
	for _, tc := range []struct{ got, want string }{
		{startText(d, t0), "login node login1 goes down for maintenance at 14:30:00 UTC, in 30m (kernel update): this session will be closed then; save your work (new logins go to other nodes)"},
		{warnText(d, 10*time.Minute), "login node login1 goes down for maintenance in 10m (kernel update): this session will be closed then; save your work"},
		{closeText(d), "login node login1 is going down for maintenance (kernel update); log in again to continue on another node"},
		{closeText(Drain{Node: "login2"}), "login node login2 is going down for maintenance; log in again to continue on another node"},
		{short(90 * time.Minute), "1h30m"},
		{short(2 * time.Hour), "2h"},
		{short(45*time.Second + 400*time.Millisecond), "45s"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
	}
}

// fakeSessions is a session table: sessions by node, and what each got.
type fakeSessions struct {
	mu       sync.Mutex        // mu protects the following
	nodes    map[string]string // session → node
	pty      map[string]bool   // sessions with a terminal
	notices  map[string][]string
	closedBy map[string]string
}

func newFakeSessions() *fakeSessions {
	return &fakeSessions{nodes: map[string]string{}, pty: map[string]bool{}, notices: map[string][]string{}, closedBy: map[string]string{}}
}

func (f *fakeSessions) add(id, node string, pty bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[id], f.pty[id] = node, pty
}

func (f *fakeSessions) NodeSessions(node string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id, n := range f.nodes {
		if n == node {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (f *fakeSessions) NotifySession(id, line string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.nodes[id]; !ok || !f.pty[id] {
		return 0
	}
	f.notices[id] = append(f.notices[id], line)
	return 1
}

func (f *fakeSessions) CloseSession(id, reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.nodes[id]; !ok {
		return false
	}
	if f.pty[id] {
		f.notices[id] = append(f.notices[id], "closing this session: "+reason)
	}
	f.closedBy[id] = reason
	delete(f.nodes, id)
	return true
}

func (f *fakeSessions) got(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.notices[id])
}

func (f *fakeSessions) closed(id string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.closedBy[id]
	return r, ok
}

// waitClosed polls (closes run in the background) until id is closed.
func waitClosed(t *testing.T, f *fakeSessions, id string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, ok := f.closed(id); ok {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not closed", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The watcher over a session table, stepped through a drain on a made-up
// clock: the terminal session gets each notice once and the reason; the
// command gets no text and is closed as well; a session on another node
// is left alone; an undrain before the deadline closes nothing.
func TestWatcher(t *testing.T) {
	f := newFakeSessions()
	f.add("pty", "login1", true)
	f.add("cmd", "login1", false)
	f.add("other", "login2", true)
	var mu sync.Mutex
	drains := []Drain{{Node: "login1", Deadline: t0.Add(15 * time.Minute), Message: "kernel update"}}
	w := New(Options{Sessions: f, Log: slog.New(slog.DiscardHandler), Drains: func() []Drain {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(drains)
	}})
	now := t0
	step := func(to time.Time) time.Time {
		t.Helper()
		now = to
		return w.Step(now)
	}
	if next := step(t0); !next.Equal(t0.Add(5 * time.Minute)) {
		t.Fatalf("next %v", next)
	}
	// Steps with nothing due change nothing.
	for i := range 10 {
		step(t0.Add(time.Duration(i) * 20 * time.Second))
	}
	if got := f.got("pty"); len(got) != 1 || !strings.Contains(got[0], "goes down for maintenance at 14:15:00 UTC, in 15m (kernel update)") {
		t.Fatalf("pty notices %q", got)
	}
	if next := step(t0.Add(5 * time.Minute)); !next.Equal(t0.Add(14 * time.Minute)) {
		t.Fatalf("next %v", next)
	}
	step(t0.Add(14 * time.Minute))
	step(t0.Add(14*time.Minute + 30*time.Second))
	got := f.got("pty")
	if len(got) != 3 || !strings.Contains(got[1], "in 10m (kernel update)") || !strings.Contains(got[2], "in 1m (kernel update)") {
		t.Fatalf("pty notices %q", got)
	}
	// A session that starts late gets the start notice only.
	f.add("late", "login1", true)
	step(t0.Add(14*time.Minute + 40*time.Second))
	if got := f.got("late"); len(got) != 1 || !strings.Contains(got[0], "in 20s") {
		t.Fatalf("late notices %q", got)
	}
	step(t0.Add(15 * time.Minute))
	for _, id := range []string{"pty", "cmd", "late"} {
		if r := waitClosed(t, f, id); r != "login node login1 is going down for maintenance (kernel update); log in again to continue on another node" {
			t.Fatalf("%s closed with %q", id, r)
		}
	}
	if got := f.got("pty"); len(got) != 4 || !strings.HasPrefix(got[3], "closing this session: login node login1") {
		t.Fatalf("pty notices %q", got)
	}
	if got := f.got("cmd"); len(got) != 0 {
		t.Fatalf("the command got text: %q", got)
	}
	if _, ok := f.closed("other"); ok || len(f.got("other")) != 0 {
		t.Fatal("a session on another node was touched")
	}
	step(t0.Add(16 * time.Minute))
	if got := f.got("pty"); len(got) != 4 {
		t.Fatalf("notices after the close: %q", got)
	}

	// Undrain before the deadline: told, then nothing more, never closed.
	f.add("keep", "login2", true)
	mu.Lock()
	drains = []Drain{{Node: "login2", Deadline: t0.Add(20 * time.Minute)}}
	mu.Unlock()
	step(t0.Add(16 * time.Minute))
	mu.Lock()
	drains = nil
	mu.Unlock()
	for _, at := range []time.Duration{19 * time.Minute, 20 * time.Minute, time.Hour} {
		step(t0.Add(at))
	}
	w.wg.Wait()
	if _, ok := f.closed("keep"); ok {
		t.Fatal("undrained, closed all the same")
	}
	if got := f.got("keep"); len(got) != 1 {
		t.Fatalf("keep notices %q", got)
	}
}

// A process that takes over (an upgrade) with a drain under way: its
// sessions get the notice due for them once, not the series it missed.
func TestWatcherTakesOver(t *testing.T) {
	f := newFakeSessions()
	f.add("s", "login1", true)
	d := Drain{Node: "login1", Deadline: t0.Add(15 * time.Minute)}
	w := New(Options{Sessions: f, Log: slog.New(slog.DiscardHandler), Drains: func() []Drain { return []Drain{d} }})
	w.Step(t0.Add(14*time.Minute + 30*time.Second))
	w.Step(t0.Add(14*time.Minute + 31*time.Second))
	if got := f.got("s"); len(got) != 1 || !strings.Contains(got[0], "in 30s") {
		t.Fatalf("notices %q", got)
	}
}

// Run follows the real clock: a drain half a second ahead closes on time.
func TestWatcherRun(t *testing.T) {
	f := newFakeSessions()
	f.add("s", "login1", false)
	deadline := time.Now().Add(500 * time.Millisecond)
	w := New(Options{Sessions: f, Log: slog.New(slog.DiscardHandler), Poll: 50 * time.Millisecond,
		Drains: func() []Drain { return []Drain{{Node: "login1", Deadline: deadline}} }})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitClosed(t, f, "s")
	if late := time.Since(deadline); late < 0 || late > 2*time.Second {
		t.Fatalf("closed %s after the deadline", late)
	}
}

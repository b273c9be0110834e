package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for a Cluster built without transports.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeClock) add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// offline is a gateway's Cluster without transports: what apply, admit
// and the store do with entries, as if they came sealed from the other
// gateways.
func offline(name string, clock *fakeClock) *Cluster {
	cfg := DefaultConfig()
	cfg.Name = name
	cfg.LocksFile = ""
	return &Cluster{cfg: cfg, role: RoleGateway, log: slog.New(slog.DiscardHandler), now: clock.now,
		changed: make(chan struct{}, 1), kick: make(chan struct{}, 1), st: newStore(name, cfg),
		alive: map[string]Member{}, pending: map[string]entry{}, refusals: map[string]uint64{},
		refusalLogged: map[string]time.Time{}}
}

// lockEntry is a lock entry as another gateway would send it.
func lockEntry(t *testing.T, user string, ver uint64, origin string, v lockVal) entry {
	return entry{Key: kindLock + "/" + user, Ver: ver, Origin: origin, Val: val(t, v)}
}

// TestLockUnlockOutOfOrder: whichever of a lock and the later unlock
// arrives first, the unlock wins; a later lock wins over both; equal
// versions are decided by origin the same way everywhere.
func TestLockUnlockOutOfOrder(t *testing.T) {
	clock := &fakeClock{t: t0}
	ver := func(d time.Duration) uint64 { return uint64(t0.Add(d).UnixNano()) }
	lock := lockEntry(t, "alice", ver(-2*time.Second), "gw1", lockVal{Locked: true, Reason: "incident 7", By: "ops", At: t0.Add(-2 * time.Second)})
	unlock := lockEntry(t, "alice", ver(-time.Second), "gw2", lockVal{By: "ops", At: t0.Add(-time.Second)})
	relock := lockEntry(t, "alice", ver(0), "gw1", lockVal{Locked: true, By: "ops", At: t0})
	for _, tc := range []struct {
		name   string
		order  []entry
		locked bool
	}{
		{"lock then unlock", []entry{lock, unlock}, false},
		{"unlock before lock", []entry{unlock, lock}, false},
		{"lock, unlock, lock again", []entry{lock, unlock, relock}, true},
		{"relock first, then the older two", []entry{relock, unlock, lock}, true},
		{"unlock, relock, lock", []entry{unlock, relock, lock}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := offline("gw3", clock)
			for _, e := range tc.order {
				c.apply([]entry{e}, true)
			}
			if _, got := c.Locked("alice"); got != tc.locked {
				t.Fatalf("locked = %v, want %v", got, tc.locked)
			}
			if n := c.Refusals()[refusedLock]; n != 0 {
				t.Fatalf("%d lock entries refused", n)
			}
		})
	}
	t.Run("same version: origin decides, in any order", func(t *testing.T) {
		a := lockEntry(t, "bob", ver(0), "gw1", lockVal{Locked: true, At: t0})
		b := lockEntry(t, "bob", ver(0), "gw2", lockVal{At: t0})
		for _, order := range [][]entry{{a, b}, {b, a}} {
			c := offline("gw3", clock)
			c.apply(order, true)
			if _, locked := c.Locked("bob"); locked {
				t.Fatal("gw2's unlock should win the tie on origin")
			}
		}
	})
}

// TestLockLocalWrites: an unlock made on one gateway after a lock made on
// another wins on a third, whatever order they reach it in, by the
// hybrid clock alone.
func TestLockLocalWrites(t *testing.T) {
	clock := &fakeClock{t: t0}
	gw1, gw2, gw3 := offline("gw1", clock), offline("gw2", clock), offline("gw3", clock)
	l, err := gw1.Lock("alice", LockSpec{Reason: "stolen key", Message: "call the help desk", By: "ops", EndSessions: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.User != "alice" || !l.EndSessions || l.Gateway != "gw1" {
		t.Fatalf("lock %+v", l)
	}
	lockE := gw1.pending["l/alice"]
	clock.add(time.Millisecond)
	if _, err := gw2.Unlock("alice", "ops2"); err != nil {
		t.Fatal(err)
	}
	unlockE := gw2.pending["l/alice"]
	gw3.apply([]entry{unlockE}, true)
	gw3.apply([]entry{lockE}, true)
	if _, locked := gw3.Locked("alice"); locked {
		t.Fatal("the unlock made after the lock lost")
	}
	gw1.apply([]entry{unlockE}, true)
	if _, locked := gw1.Locked("alice"); locked {
		t.Fatal("gw1 kept its lock after the later unlock")
	}
}

// TestLockRefusesHostileEntries: lock entries no gateway of this release
// writes are refused and counted, and leave no lock behind.
func TestLockRefusesHostileEntries(t *testing.T) {
	clock := &fakeClock{t: t0}
	v := func(f func(*lockVal)) lockVal {
		x := lockVal{Locked: true, Reason: "r", By: "ops", At: t0}
		if f != nil {
			f(&x)
		}
		return x
	}
	ver := uint64(t0.UnixNano())
	for _, tc := range []struct {
		name string
		e    entry
	}{
		{"upper-case name", lockEntry(t, "Alice", ver, "gw1", v(nil))},
		{"realm in the name", lockEntry(t, `hpc\alice`, ver, "gw1", v(nil))},
		{"node suffix", lockEntry(t, "alice+login1", ver, "gw1", v(nil))},
		{"NUL in the name", lockEntry(t, "alice\x00", ver, "gw1", v(nil))},
		{"overlong name", lockEntry(t, strings.Repeat("a", 65), ver, "gw1", v(nil))},
		{"huge reason", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.Reason = strings.Repeat("x", 100000) }))},
		{"huge message", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.Message = strings.Repeat("x", maxLockText+1) }))},
		{"escape sequence in the message", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.Message = "\x1b[2J\x1b[Hlogin: " }))},
		{"newline in the reason", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.Reason = "a\nforged log line" }))},
		{"bidi override in the message", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.Message = "ok \u202e" }))},
		{"C1 control", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.By = "ops\u009b" }))},
		{"expiry too far", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.Until = t0.Add(2 * 366 * 24 * time.Hour) }))},
		{"expires before made", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.At = t0.Add(-time.Hour); x.Until = t0.Add(-2 * time.Hour) }))},
		{"made in the future", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.At = t0.Add(time.Hour) }))},
		{"no time", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.At = time.Time{} }))},
		{"an unlock carrying a message", lockEntry(t, "alice", ver, "gw1", v(func(x *lockVal) { x.Locked = false; x.Reason = ""; x.Message = "boo" }))},
		{"tombstone", entry{Key: "l/alice", Ver: ver, Origin: "gw1", Del: true}},
		{"not JSON", entry{Key: "l/alice", Ver: ver, Origin: "gw1", Val: json.RawMessage(`"locked"`)}},
		{"version far ahead", lockEntry(t, "alice", ver+uint64(time.Hour), "gw1", v(nil))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := offline("gw3", clock)
			c.apply([]entry{tc.e}, true)
			if _, locked := c.Locked(strings.TrimPrefix(tc.e.Key, "l/")); locked {
				t.Fatal("a hostile entry locked the account")
			}
			if len(c.Locks()) != 0 || len(c.st.entries) != 0 {
				t.Fatalf("entry kept: %+v", c.st.entries)
			}
			refused := 0
			for _, n := range c.Refusals() {
				refused += int(n)
			}
			if refused != 1 {
				t.Fatalf("refusals %v, want one", c.Refusals())
			}
		})
	}
	t.Run("bounded number of locks", func(t *testing.T) {
		c := offline("gw3", clock)
		es := make([]entry, 0, maxLocks+1)
		for i := range maxLocks + 1 {
			es = append(es, lockEntry(t, fmt.Sprintf("u%d", i), ver, "gw1", lockVal{Locked: true, At: t0}))
		}
		for i := 0; i < len(es); i += 500 {
			c.apply(es[i:min(i+500, len(es))], true)
		}
		if n := len(c.Locks()); n != maxLocks {
			t.Fatalf("%d locks held, want the bound %d", n, maxLocks)
		}
		if _, err := c.Lock("onemore", LockSpec{By: "ops"}); err == nil {
			t.Fatal("a local lock past the bound was taken")
		}
		// A user already held may still change.
		if _, err := c.Unlock("u1", "ops"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLockLocalChecks: an admin's request is checked like gossip.
func TestLockLocalChecks(t *testing.T) {
	clock := &fakeClock{t: t0}
	c := offline("gw1", clock)
	for _, tc := range []struct {
		user string
		s    LockSpec
	}{
		{"Alice", LockSpec{By: "ops"}},
		{"alice", LockSpec{By: "ops", Reason: strings.Repeat("r", 201)}},
		{"alice", LockSpec{By: "ops", Message: "bye\r\n"}},
		{"alice", LockSpec{By: "ops", Until: t0.Add(-time.Second)}},
		{"alice", LockSpec{By: "ops", Until: t0.Add(MaxLockFor + time.Hour)}},
	} {
		if _, err := c.Lock(tc.user, tc.s); !errors.Is(err, ErrLockInvalid) {
			t.Errorf("Lock(%q, %+v) = %v, want ErrLockInvalid", tc.user, tc.s, err)
		}
	}
	if _, err := c.Unlock("a b", "ops"); !errors.Is(err, ErrLockInvalid) {
		t.Errorf("Unlock of a bad name: %v", err)
	}
	if len(c.st.entries) != 0 {
		t.Fatalf("refused requests left entries: %+v", c.st.entries)
	}
}

// TestLockExpires: a lock with an expiry ends then, everywhere by its own
// clock; an expired copy arriving later is refused by merge; the unlock
// record is kept for unlockKeep and then forgotten.
func TestLockExpires(t *testing.T) {
	clock := &fakeClock{t: t0}
	c := offline("gw1", clock)
	if _, err := c.Lock("alice", LockSpec{By: "ops", Until: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	old := c.pending["l/alice"]
	if _, ok := c.Locked("alice"); !ok {
		t.Fatal("not locked")
	}
	clock.add(time.Minute)
	if _, ok := c.Locked("alice"); ok {
		t.Fatal("still locked at its expiry")
	}
	c.st.gc(clock.now(), func(string) bool { return true })
	if c.st.entries["l/alice"] != nil {
		t.Fatal("expired lock not collected")
	}
	other := offline("gw2", clock)
	other.apply([]entry{old}, true)
	if _, ok := other.Locked("alice"); ok || other.st.entries["l/alice"] != nil {
		t.Fatal("an expired lock was taken")
	}

	if _, err := c.Unlock("bob", "ops"); err != nil {
		t.Fatal(err)
	}
	clock.add(unlockKeep - time.Second)
	c.st.gc(clock.now(), func(string) bool { return true })
	if c.st.entries["l/bob"] == nil {
		t.Fatal("unlock record forgotten early")
	}
	clock.add(2 * time.Second)
	c.st.gc(clock.now(), func(string) bool { return true })
	if c.st.entries["l/bob"] != nil {
		t.Fatal("unlock record kept past unlockKeep")
	}
}

// lockConfig is a gateway with a locks file in dir.
func lockConfig(name, dir string, peers ...*Cluster) Config {
	c := gatewayConfig(name, peers...)
	c.LocksFile = filepath.Join(dir, name, "locks.json")
	return c
}

// TestLockSurvivesRestartOfEveryGateway: a lock made on one gateway holds
// on the other at once, and after both stop and start again; an unlock
// made while a gateway was down beats the older lock in its file.
func TestLockSurvivesRestartOfEveryGateway(t *testing.T) {
	dir := t.TempDir()
	gw1 := start(t, lockConfig("gw1", dir), RoleGateway)
	gw2 := start(t, lockConfig("gw2", dir, gw1), RoleGateway)
	if _, err := gw1.Lock("alice", LockSpec{Reason: "incident", By: "ops", EndSessions: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := gw1.Lock("bob", LockSpec{By: "ops"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		for _, u := range []string{"alice", "bob"} {
			if l, ok := gw2.Locked(u); !ok || l.By != "ops" {
				return fmt.Errorf("gw2: %s not locked (%+v)", u, l)
			}
		}
		return filesHold(dir, "gw1", "gw2")
	})

	// Both stop; gw1 comes back alone, then gw2: locks from the files.
	gw1.Close()
	gw2.Close()
	gw1 = start(t, lockConfig("gw1", dir), RoleGateway)
	if l, ok := gw1.Locked("alice"); !ok || l.Reason != "incident" || !l.EndSessions {
		t.Fatalf("alice's lock lost with the restart: %+v", l)
	}
	// While gw2 is down, bob is unlocked on gw1; gw2's file still says
	// locked, with the older version.
	if _, err := gw1.Unlock("bob", "ops"); err != nil {
		t.Fatal(err)
	}
	es, err := readLocksFile(filepath.Join(dir, "gw2", "locks.json"))
	if err != nil {
		t.Fatal(err)
	}
	bobLocked := false
	for _, e := range es {
		if v, ok := decode[lockVal](&e); ok && e.Key == "l/bob" {
			bobLocked = v.Locked
		}
	}
	if !bobLocked {
		t.Fatal("gw2's file should still hold bob's lock")
	}
	gw2 = start(t, lockConfig("gw2", dir, gw1), RoleGateway)
	eventually(t, waitLong, func() error {
		if _, ok := gw2.Locked("bob"); ok {
			return errors.New("gw2: the older lock in its file still beats the unlock")
		}
		if _, ok := gw1.Locked("bob"); ok {
			return errors.New("gw1: bob locked again by gw2's file")
		}
		if _, ok := gw2.Locked("alice"); !ok {
			return errors.New("gw2: alice unlocked")
		}
		return nil
	})
}

// filesHold checks each gateway's locks file holds alice's lock.
func filesHold(dir string, gws ...string) error {
	for _, g := range gws {
		es, err := readLocksFile(filepath.Join(dir, g, "locks.json"))
		if err != nil {
			return err
		}
		found := false
		for _, e := range es {
			found = found || e.Key == "l/alice"
		}
		if !found {
			return fmt.Errorf("%s's file lacks alice", g)
		}
	}
	return nil
}

// TestLocksFileIsInput: the file is checked like gossip (an entry of
// another kind, a hostile lock are dropped), and a file that does not
// parse is moved aside rather than stopping the gateway.
func TestLocksFileIsInput(t *testing.T) {
	dir := t.TempDir()
	cfg := lockConfig("gw1", dir)
	if err := os.MkdirAll(filepath.Dir(cfg.LocksFile), 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ver := uint64(now.Add(-time.Second).UnixNano())
	lf := locksFile{Version: 1, Gateway: "gw1", Entries: []entry{
		lockEntry(t, "alice", ver, "gw2", lockVal{Locked: true, By: "ops", At: now.Add(-time.Second)}),
		lockEntry(t, "mallory", ver, "gw2", lockVal{Locked: true, By: "ops", Message: "\x1b]0;pwned\x07", At: now}),
		{Key: "b/user:bob", Ver: ver, Origin: "gw2", Val: val(t, banVal{Until: now.Add(time.Hour)})},
	}}
	b, _ := json.Marshal(lf)
	if err := os.WriteFile(cfg.LocksFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c := start(t, cfg, RoleGateway)
	if _, ok := c.Locked("alice"); !ok {
		t.Fatal("alice's lock not loaded")
	}
	if _, ok := c.Locked("mallory"); ok {
		t.Fatal("a lock with an escape sequence was loaded")
	}
	if _, ok := c.Banned("user:bob"); ok {
		t.Fatal("a ban was taken from the locks file")
	}
	if n := c.Refusals()[refusedLock]; n != 2 {
		t.Fatalf("refused %v, want 2 bad_lock", c.Refusals())
	}
	c.Close()

	if err := os.WriteFile(cfg.LocksFile, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = start(t, cfg, RoleGateway)
	if len(c.Locks()) != 0 {
		t.Fatal("locks from a damaged file")
	}
	aside, _ := filepath.Glob(cfg.LocksFile + ".bad-*")
	if len(aside) != 1 {
		t.Fatalf("damaged file not moved aside: %v", aside)
	}
	if _, err := c.Lock("carol", LockSpec{By: "ops"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		es, err := readLocksFile(cfg.LocksFile)
		if err != nil || len(es) != 1 || es[0].Key != "l/carol" {
			return fmt.Errorf("file after a new lock: %v %v", es, err)
		}
		st, err := os.Stat(cfg.LocksFile)
		if err != nil || st.Mode().Perm() != 0o600 {
			return fmt.Errorf("file mode: %v %v", st, err)
		}
		return nil
	})
}

// TestHostileLocksOverTheWire: lock entries a gateway key holder sends
// (a stolen gateway, a bug) cross the real transports, sealed, direct and
// by gateway sync, and are refused by the gateway that gets them.
func TestHostileLocksOverTheWire(t *testing.T) {
	dir := t.TempDir()
	gw1 := start(t, lockConfig("gw1", dir), RoleGateway)
	evil := start(t, lockConfig("evil", dir, gw1), RoleGateway)
	eventually(t, waitLong, func() error {
		if len(gw1.Members()) != 2 {
			return fmt.Errorf("members %+v", gw1.Members())
		}
		return nil
	})
	now := time.Now()
	ver := uint64(now.UnixNano())
	bad := []entry{
		lockEntry(t, "Alice", ver, "evil", lockVal{Locked: true, At: now}),
		lockEntry(t, "bob", ver, "evil", lockVal{Locked: true, At: now, Message: "\x1b[31mpwned"}),
		lockEntry(t, "carol", ver, "evil", lockVal{Locked: true, At: now, Until: now.Add(5 * 366 * 24 * time.Hour)}),
	}
	// Too large for one packet: only the gateway sync carries it.
	huge := lockEntry(t, "dave", ver, "evil", lockVal{Locked: true, At: now, Reason: strings.Repeat("r", 64<<10)})
	evil.mu.Lock()
	huge.recv = now
	evil.st.set(&huge)
	evil.mu.Unlock()
	for _, e := range bad {
		evil.send(e)
	}
	// And one good lock, which must arrive: the channel works.
	if _, err := evil.Lock("erin", LockSpec{By: "ops"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		if _, ok := gw1.Locked("erin"); !ok {
			return errors.New("the good lock did not arrive")
		}
		if n := gw1.Refusals()[refusedLock]; n < 4 {
			return fmt.Errorf("refused %v, want 4 bad_lock", gw1.Refusals())
		}
		return nil
	})
	for _, u := range []string{"alice", "Alice", "bob", "carol", "dave"} {
		if _, ok := gw1.Locked(u); ok {
			t.Errorf("%s locked by a hostile entry", u)
		}
	}
}

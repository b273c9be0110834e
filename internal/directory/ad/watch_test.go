package ad

// The directory watch against the real Samba DC: every kind of change an
// admin makes reaches the cache within a few watch intervals, changes no
// login reads leave cached identities alone, and the watch resumes where it
// stopped after an outage.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// watchInterval is the tests' watch_interval; a change must be in force
// within watchBound of being committed.
const (
	watchInterval = 200 * time.Millisecond
	watchBound    = 3*watchInterval + slack
)

// watchedDir is a directory whose cache outlives every test (cache_ttl 1h):
// only the watch can make it notice a change.
func watchedDir(t *testing.T, mut func(*Config)) *Directory {
	t.Helper()
	d := newDir(t, func(c *Config) {
		c.CacheTTL, c.OfflineMaxAge = time.Hour, time.Hour
		c.WatchInterval = watchInterval
		c.CachePasswords = true
		if mut != nil {
			mut(c)
		}
	})
	waitWatched(t, d)
	return d
}

var watchSeq atomic.Int32

// watchUser creates an account for one test (unique across -count=N).
func watchUser(t *testing.T, prefix string, groups ...string) string {
	t.Helper()
	name := fmt.Sprintf("%s%d", prefix, watchSeq.Add(1))
	if _, err := dc.CreateUser(ctxT(t), name, pw(name), groups...); err != nil {
		t.Fatal(err)
	}
	return name
}

func watchGroup(t *testing.T, prefix string, memberOf ...string) string {
	t.Helper()
	name := fmt.Sprintf("%s%d", prefix, watchSeq.Add(1))
	if err := dc.CreateGroup(ctxT(t), name, memberOf...); err != nil {
		t.Fatal(err)
	}
	return name
}

// mustCache looks name up until a second lookup is answered from the
// cache. (A lookup that overlaps a round of the watch is not stored: the
// rounds that see the accounts a test just created can take a few tries.)
func mustCache(t *testing.T, d *Directory, name string) directory.Identity {
	t.Helper()
	var id directory.Identity
	within(t, "", time.Now(), 10*time.Second, func() error {
		first, err := d.Lookup(ctxT(t), name)
		if err != nil {
			t.Fatalf("lookup %s: %v", name, err)
		}
		if id, err = d.Lookup(ctxT(t), name); err != nil || !id.FetchedAt.Equal(first.FetchedAt) {
			return fmt.Errorf("lookup %s again: fetched at %v (first %v), %v: not cached", name, id.FetchedAt, first.FetchedAt, err)
		}
		return nil
	})
	return id
}

// within polls cond until it holds or bound has passed since start, and
// returns how long it took.
func within(t *testing.T, what string, start time.Time, bound time.Duration, cond func() error) time.Duration {
	t.Helper()
	for {
		err := cond()
		if err == nil {
			took := time.Since(start)
			if what != "" {
				t.Logf("%s: %v after the change", what, took.Round(time.Millisecond))
			}
			return took
		}
		if time.Since(start) > bound {
			t.Fatalf("%s: not within %v: %v", what, bound, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// refused is a poll condition: looking name up fails with kind and reason.
func refused(d *Directory, name string, kind error, reason string) func() error {
	return func() error {
		id, err := d.Lookup(context.Background(), name)
		if errors.Is(err, kind) && directory.Reason(err) == reason {
			return nil
		}
		return fmt.Errorf("lookup: %+v, %v", id.Groups, err)
	}
}

// tool runs samba-tool on the DC's database and returns when the change is
// committed.
func tool(t *testing.T, args ...string) time.Time {
	t.Helper()
	if out, err := dc.Tool(ctxT(t), args...); err != nil {
		t.Fatalf("samba-tool %v: %v: %s", args, err, out)
	}
	return time.Now()
}

// settle waits until the watch has handled every change committed so far.
func settle(t *testing.T, d *Directory) {
	t.Helper()
	var usn uint64
	err := d.dcs.do(ctxT(t), func(c *ldap.Conn) error {
		r, err := readRootDSE(c, testTimeout)
		usn = r.usn
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	within(t, "", time.Now(), 10*time.Second, func() error {
		if got := testutil.ToFloat64(d.metrics.watchUSN); got < float64(usn) {
			return fmt.Errorf("the watch is at USN %v, the DC at %d", got, usn)
		}
		return nil
	})
}

func counter(d *Directory, vec string, label string) float64 {
	switch vec {
	case "invalidations":
		return testutil.ToFloat64(d.metrics.invalidations.WithLabelValues(label))
	case "flushes":
		return testutil.ToFloat64(d.metrics.flushes.WithLabelValues(label))
	}
	return testutil.ToFloat64(d.metrics.watchErrors.WithLabelValues(label))
}

// TestWatchAccountChanges: disabled, expired, locked out and deleted
// accounts are refused within a few watch intervals although their
// identities are cached for an hour; a user who only logged in (which
// writes lastLogonTimestamp) keeps identity and offline password hash.
func TestWatchAccountChanges(t *testing.T) {
	d := watchedDir(t, nil)
	dis, exp, lock, del, keep := watchUser(t, "wdis", "nlp-lab"), watchUser(t, "wexp"), watchUser(t, "wlock"),
		watchUser(t, "wdel", "nlp-lab"), watchUser(t, "wkeep")
	t.Cleanup(func() { dc.Unlock(context.Background(), lock) })
	for _, n := range []string{dis, exp, lock, del, keep} {
		mustCache(t, d, n)
	}
	kept, err := d.VerifyPassword(ctxT(t), keep, pw(keep)) // its first bind: lastLogonTimestamp
	if err != nil {
		t.Fatal(err)
	}

	start := tool(t, "user", "disable", dis)
	within(t, "disabled account refused", start, watchBound, refused(d, dis, directory.ErrAccountDisabled, "ad: account disabled"))

	start = tool(t, "user", "setexpiry", exp, "--days=0")
	within(t, "expired account refused", start, watchBound, refused(d, exp, directory.ErrAccountDisabled, "ad: account expired"))

	// Five wrong passwords (the package's lockout threshold), straight to
	// the DC as from another machine.
	for range 5 {
		c, err := dc.Dial(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Bind(fmt.Sprintf("%s@%s", lock, dc.UPNSuffix()), "Wrong-Passw0rd!")
		c.Close()
	}
	start = time.Now()
	within(t, "locked-out account refused", start, watchBound, refused(d, lock, directory.ErrAccountDisabled, "ad: account locked out"))

	if err := dc.DeleteUser(ctxT(t), del); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	within(t, "deleted account refused", start, watchBound, refused(d, del, directory.ErrNoSuchUser, "ad: no such account"))

	// Every change above came after keep's bind, so the watch has been
	// through it: keep is still cached, password hash and all.
	if e := d.cache.get(Name{Account: keep}); e == nil || !e.id.FetchedAt.Equal(kept.FetchedAt) || e.pwHash == "" {
		t.Errorf("a login (lastLogonTimestamp) dropped %s from the cache: %+v", keep, e)
	}
	for _, c := range []string{causeUser, causeUserDeleted} {
		if counter(d, "invalidations", c) == 0 {
			t.Errorf("frontdoor_ad_cache_invalidations_total{cause=%q} did not move", c)
		}
	}
	if n := counter(d, "flushes", causeTooMany) + counter(d, "flushes", causeSearchFailed) + counter(d, "flushes", causeDCChanged); n != 0 {
		t.Errorf("%v whole-cache flushes; want the changed identities dropped one by one", n)
	}
}

// TestWatchGroupChanges: membership changes re-rule a cached identity
// within a few watch intervals, directly and through a nested group, in
// both directions; other members of the group keep their cached identity.
func TestWatchGroupChanges(t *testing.T) {
	d := watchedDir(t, nil)
	outer := watchGroup(t, "wouter")
	inner := watchGroup(t, "winner", outer)
	vision := watchGroup(t, "wvision")
	nested, bob, other := watchUser(t, "wnest", inner), watchUser(t, "wbob", vision), watchUser(t, "wother", vision)
	hasGroup := func(name, group string, want bool) func() error {
		return func() error {
			id, err := d.Lookup(context.Background(), name)
			if err != nil {
				return err
			}
			if slices.Contains(id.Groups, group) != want {
				return fmt.Errorf("%s's groups %v (want %s: %v)", name, id.Groups, group, want)
			}
			return nil
		}
	}
	for _, n := range []string{nested, bob, other} {
		mustCache(t, d, n)
	}
	if err := hasGroup(nested, outer, true)(); err != nil {
		t.Fatal(err)
	}
	kept := mustCache(t, d, other)

	start := tool(t, "group", "removemembers", vision, bob)
	within(t, "removed member re-ruled", start, watchBound, hasGroup(bob, vision, false))

	start = tool(t, "group", "removemembers", outer, inner)
	within(t, "nested group removed: member re-ruled", start, watchBound, hasGroup(nested, outer, false))

	start = tool(t, "group", "addmembers", outer, inner)
	within(t, "nested group added: member re-ruled", start, watchBound, hasGroup(nested, outer, true))

	start = tool(t, "group", "addmembers", vision, bob)
	within(t, "added member re-ruled", start, watchBound, hasGroup(bob, vision, true))

	if e := d.cache.get(Name{Account: other}); e == nil || !e.id.FetchedAt.Equal(kept.FetchedAt) {
		t.Errorf("%s, a member of %s throughout, was dropped from the cache", other, vision)
	}
	if counter(d, "invalidations", causeGroup) < 4 {
		t.Errorf("frontdoor_ad_cache_invalidations_total{cause=group_changed} = %v, want at least 4", counter(d, "invalidations", causeGroup))
	}
}

// TestWatchNewAccount: a name AD did not know is remembered as unknown
// for 30 s; creating the account ends that at the watch's next round.
func TestWatchNewAccount(t *testing.T) {
	d := watchedDir(t, nil)
	name := fmt.Sprintf("wnew%d", watchSeq.Add(1))
	_, err := d.Lookup(ctxT(t), name)
	wantErr(t, err, directory.ErrNoSuchUser, "ad: no such account")
	if _, err := dc.CreateUser(ctxT(t), name, pw(name)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	within(t, "new account found", start, watchBound, func() error {
		_, err := d.Lookup(context.Background(), name)
		return err
	})
}

// TestWatchTooManyChanges: a round with more to handle than
// watch_max_changes drops the whole cache, and says so in the metrics.
func TestWatchTooManyChanges(t *testing.T) {
	d := watchedDir(t, func(c *Config) { c.WatchMaxChanges = 2 })
	big := watchGroup(t, "wbig")
	for range 3 {
		watchUser(t, "wmany", big)
	}
	settle(t, d)
	before := mustCache(t, d, "erin") // in no group: only a flush drops her
	flushes := counter(d, "flushes", causeTooMany)
	// One changed group with four members: five entries to handle.
	start := tool(t, "group", "addmembers", big, "alice")
	within(t, "cache flushed", start, watchBound, func() error {
		if counter(d, "flushes", causeTooMany) == flushes {
			return errors.New("no too_many_changes flush yet")
		}
		return nil
	})
	if e := d.cache.get(Name{Account: "erin"}); e != nil && e.id.FetchedAt.Equal(before.FetchedAt) {
		t.Error("erin survived a flush")
	}
}

// TestWatchResumesAfterOutage: an account disabled while the DC is down
// is refused shortly after the DC is back; the watch picks up where it
// stopped (same DC, USN kept), so only that identity is dropped.
func TestWatchResumesAfterOutage(t *testing.T) {
	d := watchedDir(t, nil)
	victim, bystander := watchUser(t, "wres"), watchUser(t, "wby")
	mustCache(t, d, victim)
	kept := mustCache(t, d, bystander)
	restarted := false
	defer func() {
		if !restarted {
			_ = dc.Restart(context.Background())
		}
	}()
	dc.Kill()
	errs := counter(d, "errors", "read")
	// samba-tool writes the database directly: the change is committed
	// while no DC serves it.
	tool(t, "user", "disable", victim)
	within(t, "the watch notices the outage", time.Now(), 10*time.Second, func() error {
		if counter(d, "errors", "read") == errs {
			return errors.New("no failed read yet")
		}
		return nil
	})
	mustCache(t, d, victim) // still served: nothing told the cache otherwise
	restarted = true
	if err := dc.Restart(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// The watch backs off after failed reads (up to retry_max, 500 ms here).
	within(t, "account disabled during the outage refused", start, watchBound+d.cfg.RetryMax,
		refused(d, victim, directory.ErrAccountDisabled, "ad: account disabled"))
	if e := d.cache.get(Name{Account: bystander}); e == nil || !e.id.FetchedAt.Equal(kept.FetchedAt) {
		t.Errorf("%s was dropped: the watch flushed instead of resuming", bystander)
	}
}

// TestWatchFlushes: what the watch does when it cannot know what changed.
func TestWatchFlushes(t *testing.T) {
	d := newDir(t, func(c *Config) { c.URLs = []string{"ldaps://127.0.2.254:636"} }) // no DC: only these calls touch the cache
	w := &usnWatch{d: d, baselined: make(chan struct{})}
	tests := []struct {
		prev  string
		root  rootDSE
		cause string
	}{
		{"", rootDSE{service: "CN=DC1", usn: 10}, causeWatchStarted},
		{formatVersion("CN=DC1", 10), rootDSE{service: "CN=DC2", usn: 50}, causeDCChanged},
		{formatVersion("CN=DC2", 50), rootDSE{service: "CN=DC2", usn: 49}, causeUSNWentBack},
		{"garbage", rootDSE{service: "CN=DC2", usn: 49}, causeDCChanged},
	}
	for _, tc := range tests {
		gen := d.cache.generation()
		d.cache.put(cached("alice", "A"), time.Now(), gen)
		w.root = tc.root
		before := counter(d, "flushes", tc.cause)
		if err := w.changed(context.Background(), tc.prev, formatVersion(tc.root.service, tc.root.usn)); err != nil {
			t.Fatal(err)
		}
		if d.cache.len() != 0 || counter(d, "flushes", tc.cause) != before+1 || counter(d, "invalidations", tc.cause) == 0 {
			t.Errorf("%q → %+v: cache %d entries, flushes{%s} %v", tc.prev, tc.root, d.cache.len(), tc.cause, counter(d, "flushes", tc.cause))
		}
	}
	select {
	case <-w.baselined:
	default:
		t.Error("the first version did not count as the baseline")
	}
}

// TestSearchBounded: pages are followed to the end, a search over the limit
// stops with errTooManyChanges, and the connection stays usable.
func TestSearchBounded(t *testing.T) {
	d := newDir(t, nil)
	users := func() *ldap.SearchRequest {
		return ldap.NewSearchRequest(dc.BaseDN(), ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 0, 5, false,
			"(&(objectCategory=person)(objectClass=user))", []string{"sAMAccountName"}, nil)
	}
	err := d.dcs.do(ctxT(t), func(c *ldap.Conn) error {
		all, err := c.SearchWithPaging(users(), 100)
		if err != nil {
			return err
		}
		n := len(all.Entries)
		got, err := searchBounded(ctxT(t), c, users(), 1000, 2)
		if err != nil || len(got) != n {
			return fmt.Errorf("pages of 2: %d entries, %v; want %d", len(got), err, n)
		}
		if _, err := searchBounded(ctxT(t), c, users(), n-1, 2); !errors.Is(err, errTooManyChanges) {
			return fmt.Errorf("limit %d of %d: %v, want errTooManyChanges", n-1, n, err)
		}
		if got, err := searchBounded(ctxT(t), c, users(), n, 2); err != nil || len(got) != n {
			return fmt.Errorf("limit %d of %d: %d, %v", n, n, len(got), err)
		}
		_, err = readRootDSE(c, testTimeout)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

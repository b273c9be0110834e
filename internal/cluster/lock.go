package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Account locks: an admin's "this account may not log in", on every
// gateway, at once, and after any restart.
//
//	l/USER  account lock  shared  (USER: the canonical account name,
//	                               names.Account, as the directory returns it)
//
// The value says locked or unlocked. An unlock is a value (Locked false),
// not a tombstone: tombstones are forgotten after TombstoneTTL, and an
// older lock still held in the locks file of a gateway that was down
// during the unlock would then come back. An unlock record is kept for
// unlockKeep, a lock until it expires (Until) or for good. The value
// (lockVal) and its expiry sit with the other kinds' in state.go.
//
// Which wins: the last writer, by (Ver, Origin), like every shared key
// (state.go). Ver is the hybrid clock of the gateway that wrote it, so an
// unlock made after a lock (on any gateway, clocks within MaxClockSkew)
// beats it wherever the two arrive, in either order; a new lock beats the
// unlock before it. Nothing in the value (its At) takes part in the
// order.
//
// Persistence (lockfile.go): each gateway writes the lock entries, with
// their versions, to its LocksFile whenever they change, and reads them
// back at Start before it binds a port, merging them like gossip: an old
// lock in the file loses to the newer unlock the peers hold, and after a
// restart of every gateway each one re-asserts what it had on the first
// exchange with the others.
//
// Gossip is hostile input even sealed (a stolen gateway key): checkLock
// refuses a lock entry whose name is not a canonical account name, whose
// texts are overlong or carry control or bidirectional-override
// characters (they end up on terminals and in logs), whose expiry is past
// maxLockFor, or that is a tombstone; and a gateway keeps at most
// maxLocks of them.

// Bounds on a lock, checked for local writes and gossip alike.
const (
	// maxLockText bounds the reason and the message, in bytes: one
	// terminal line, and room in one UDP packet (send.go's maxPacket).
	maxLockText = 200
	// maxLockBy bounds the admin's name.
	maxLockBy = 128
	// maxLockFor is the longest expiry a lock may have; without one it
	// lasts until unlocked.
	maxLockFor = 366 * 24 * time.Hour
	// maxLocks bounds the lock entries (locks and unlocks) a gateway
	// keeps; new users beyond it are refused.
	maxLocks = 10000
)

// refusedLock: a lock entry that checkLock refused.
const refusedLock = "bad_lock"

// Lock is an account lock in force.
type Lock struct {
	// User is the canonical account name.
	User string
	// Reason is for admins only; Message is shown to the user.
	Reason, Message string
	// By is the admin who locked, as their credential named them.
	By string
	// At is when the lock was made; Until when it ends (zero: never).
	At, Until time.Time
	// EndSessions: every gateway closes the user's sessions.
	EndSessions bool
	// Gateway is the gateway that took the admin's request.
	Gateway string
}

// LockSpec is what an admin asks for.
type LockSpec struct {
	Reason, Message, By string
	// Until is when the lock ends; zero for never.
	Until       time.Time
	EndSessions bool
}

// ErrLockInvalid marks a lock request that checkLock would refuse.
var ErrLockInvalid = errors.New("invalid lock")

// Lock locks user's account on every gateway. user must already be the
// canonical account name (names.Account): the caller resolves what the
// admin typed through the directory, as a login does.
func (c *Cluster) Lock(user string, s LockSpec) (Lock, error) {
	now := c.now()
	v := lockVal{Locked: true, Reason: s.Reason, Message: s.Message, By: s.By, At: now, Until: s.Until, End: s.EndSessions}
	if !names.Account.Valid(user) {
		return Lock{}, fmt.Errorf("%w: %q is not an account name (%s)", ErrLockInvalid, clip(user), names.Account.Syntax)
	}
	if err := checkLockVal(v, now, c.cfg.MaxClockSkew); err != nil {
		return Lock{}, fmt.Errorf("%w: %v", ErrLockInvalid, err)
	}
	if err := c.writeLock(user, v); err != nil {
		return Lock{}, err
	}
	return toLock(user, c.cfg.Name, v), nil
}

// Unlock lifts user's lock on every gateway; was reports whether this
// gateway held one in force. It writes the unlock either way: the lock
// may be on its way here from another gateway still.
func (c *Cluster) Unlock(user, by string) (was bool, err error) {
	if !names.Account.Valid(user) {
		return false, fmt.Errorf("%w: %q is not an account name (%s)", ErrLockInvalid, clip(user), names.Account.Syntax)
	}
	now := c.now()
	v := lockVal{By: by, At: now}
	if err := checkLockVal(v, now, c.cfg.MaxClockSkew); err != nil {
		return false, fmt.Errorf("%w: %v", ErrLockInvalid, err)
	}
	_, was = c.Locked(user)
	return was, c.writeLock(user, v)
}

// writeLock stores and sends a lock entry, and has the file follow.
func (c *Cluster) writeLock(user string, v lockVal) error {
	key := kindLock + "/" + user
	c.mu.Lock()
	if c.st.entries[key] == nil && len(c.st.byKind[kindLock]) >= maxLocks {
		c.mu.Unlock()
		return fmt.Errorf("cluster: %d account locks held already", maxLocks)
	}
	c.mu.Unlock()
	if err := c.write(key, v); err != nil {
		return err
	}
	c.locksChanged()
	return nil
}

// Locked returns user's lock if one is in force now.
func (c *Cluster) Locked(user string) (Lock, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.st.live(kindLock + "/" + user)
	if e == nil {
		return Lock{}, false
	}
	v, ok := decode[lockVal](e)
	if !ok || !inForce(v, now) {
		return Lock{}, false
	}
	return toLock(user, e.Origin, v), true
}

// Locks lists the locks in force, by user.
func (c *Cluster) Locks() []Lock {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Lock
	for k, e := range c.st.byKind[kindLock] {
		if v, ok := decode[lockVal](e); ok && inForce(v, now) {
			out = append(out, toLock(strings.TrimPrefix(k, kindLock+"/"), e.Origin, v))
		}
	}
	slices.SortFunc(out, func(a, b Lock) int { return strings.Compare(a.User, b.User) })
	return out
}

func inForce(v lockVal, now time.Time) bool {
	return v.Locked && (v.Until.IsZero() || now.Before(v.Until))
}

func toLock(user, origin string, v lockVal) Lock {
	return Lock{User: user, Reason: v.Reason, Message: v.Message, By: v.By, At: v.At, Until: v.Until,
		EndSessions: v.End, Gateway: origin}
}

// checkLock decides whether a lock entry from gossip or from the locks
// file may be merged (trust.go's admit). The caller must not hold mu.
func (c *Cluster) checkLock(e *entry, now time.Time) error {
	user := strings.TrimPrefix(e.Key, kindLock+"/")
	if !names.Account.Valid(user) {
		return refuse(refusedLock, "lock of %q: not an account name", clip(user))
	}
	if e.Del {
		return refuse(refusedLock, "lock of %s: a deletion (an unlock is a value)", user)
	}
	v, ok := decode[lockVal](e)
	if !ok {
		return refuse(refusedLock, "lock of %s: value", user)
	}
	if err := checkLockVal(v, now, c.cfg.MaxClockSkew); err != nil {
		return refuse(refusedLock, "lock of %s from %s: %v", user, clip(e.Origin), err)
	}
	c.mu.Lock()
	full := c.st.entries[e.Key] == nil && len(c.st.byKind[kindLock]) >= maxLocks
	c.mu.Unlock()
	if full {
		return refuse(refusedLock, "lock of %s: %d locks held already", user, maxLocks)
	}
	return nil
}

// checkLockVal checks a lock's value against the bounds above.
func checkLockVal(v lockVal, now time.Time, skew time.Duration) error {
	for _, f := range []struct {
		name, s string
		max     int
	}{{"reason", v.Reason, maxLockText}, {"message", v.Message, maxLockText}, {"by", v.By, maxLockBy}} {
		if err := checkText(f.s, f.max); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	switch {
	case v.At.IsZero():
		return errors.New("no time")
	case v.At.After(now.Add(skew)):
		return fmt.Errorf("made %v ahead of our clock", v.At.Sub(now).Round(time.Second))
	case !v.Locked && (v.Reason != "" || v.Message != "" || !v.Until.IsZero() || v.End):
		return errors.New("an unlock with a lock's fields")
	case v.Until.IsZero():
		return nil
	case !v.Until.After(v.At):
		return errors.New("expires before it was made")
	case v.Until.Sub(v.At) > maxLockFor:
		return fmt.Errorf("expires after more than %v", maxLockFor)
	}
	return nil
}

// checkText refuses text that is overlong, not UTF-8, or holds control
// characters or bidirectional formatting (which could rewrite what a
// terminal or a log shows around it).
func checkText(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("longer than %d bytes", max)
	}
	if !utf8.ValidString(s) {
		return errors.New("not UTF-8")
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
	}); i >= 0 {
		return fmt.Errorf("control character at byte %d", i)
	}
	return nil
}

// CheckLockText checks an admin's reason or message before it is sent
// (the gateway checks again): at most 200 bytes, no control characters.
func CheckLockText(s string) error { return checkText(s, maxLockText) }

// MaxLockFor is the longest expiry a lock may have.
const MaxLockFor = maxLockFor

// lockCollector is frontdoor_locks_active.
func (c *Cluster) lockCollector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "frontdoor_locks_active",
		Help: "Account locks in force (frontdoor lock), as this gateway holds them: every gateway refuses these users' logins."},
		func() float64 { return float64(len(c.Locks())) })
}

package gateway

import (
	"fmt"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/login"
)

// Account locks at the door: a locked account is refused once it proved
// who it is (a key's signature, a password the directory accepted), never
// before: a stranger who only knows the name or holds a public key learns
// nothing, and no node is dialled ahead for a locked account. With
// EndSessions, every gateway also closes the account's live sessions,
// telling interactive ones why (proxy notices).
//
// The lock is looked up by the canonical account name the directory
// returned (directory.Identity.Name), which every form of a login name
// (user+node, HPC\User, user@realm) resolves to.

// AccountLock is what the gateway needs of an account lock
// (internal/cluster.Lock, through the assembly).
type AccountLock struct {
	// Reason and By go to the audit log only; Message is shown to the
	// user.
	Reason, Message, By string
	// Until is when the lock ends (zero: until unlocked).
	Until time.Time
	// EndSessions: close the account's live sessions too.
	EndSessions bool
}

// Locks are the account locks every gateway of a cluster honours.
type Locks interface {
	// Locked returns user's lock if one is in force now.
	Locked(user string) (AccountLock, bool)
}

// lockCheckEvery is how often the sessions are checked against the
// locks: the bound on how long a session of an account locked with
// EndSessions (on any gateway) goes on, besides gossip's delay.
const lockCheckEvery = 250 * time.Millisecond

// lockRefusal refuses a login of an account locks has locked (nil: no
// locks).
func lockRefusal(locks Locks, user string) *login.Refusal {
	if locks == nil {
		return nil
	}
	l, ok := locks.Locked(user)
	if !ok {
		return nil
	}
	return &login.Refusal{Stage: login.StageLocked, UserMsg: login.LockedMessage(l.Message, l.Until), Reason: lockReason(l)}
}

// lockReason is the audit reason of a lock.
func lockReason(l AccountLock) string {
	s := "account locked by " + l.By
	if l.Reason != "" {
		s += ": " + l.Reason
	}
	if !l.Until.IsZero() {
		s += fmt.Sprintf(" (until %s)", l.Until.UTC().Format(time.RFC3339))
	}
	return s
}

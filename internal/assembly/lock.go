package assembly

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Account locks as the admin API and the SSH server see them: kept by
// the current gossip member (internal/cluster, lock.go), keyed by the
// canonical account name, which the admin's typed name is resolved to
// the way a login resolves it.

var _ admin.LockSource = (*Gateway)(nil)

// Lock locks the account req.User names on every gateway.
func (a *Gateway) Lock(ctx context.Context, req admin.LockRequest, by string) (admin.Lock, error) {
	cl := a.cluster.Load()
	if cl == nil {
		return admin.Lock{}, admin.ErrNoLocks
	}
	user, err := a.lockName(ctx, req.User, req.Force)
	if err != nil {
		return admin.Lock{}, err
	}
	spec := cluster.LockSpec{Reason: req.Reason, Message: req.Message, By: by, EndSessions: req.EndSessions}
	now := time.Now()
	switch {
	case req.For != "" && !req.Until.IsZero():
		return admin.Lock{}, fmt.Errorf("%w: give for or until, not both", admin.ErrLockRequest)
	case req.For != "":
		d, err := time.ParseDuration(req.For)
		if err != nil || d <= 0 || d > cluster.MaxLockFor {
			return admin.Lock{}, fmt.Errorf("%w: for %q: want a duration above 0 and at most %v", admin.ErrLockRequest, req.For, cluster.MaxLockFor)
		}
		spec.Until = now.Add(d)
	case !req.Until.IsZero():
		if !req.Until.After(now) || req.Until.Sub(now) > cluster.MaxLockFor {
			return admin.Lock{}, fmt.Errorf("%w: until %s: want a time in the next %v", admin.ErrLockRequest,
				req.Until.UTC().Format(time.RFC3339), cluster.MaxLockFor)
		}
		spec.Until = req.Until
	}
	l, err := cl.Lock(user, spec)
	if errors.Is(err, cluster.ErrLockInvalid) {
		err = fmt.Errorf("%w: %w", admin.ErrLockRequest, err)
	}
	if err != nil {
		return admin.Lock{}, err
	}
	return adminLock(l), nil
}

// Unlock lifts the lock of the account user names on every gateway.
func (a *Gateway) Unlock(ctx context.Context, typed, by string) (admin.Unlocked, error) {
	cl := a.cluster.Load()
	if cl == nil {
		return admin.Unlocked{}, admin.ErrNoLocks
	}
	// An unlock must work for a name the directory no longer knows.
	user, err := a.lockName(ctx, typed, true)
	if err != nil {
		return admin.Unlocked{}, err
	}
	was, err := cl.Unlock(user, by)
	if errors.Is(err, cluster.ErrLockInvalid) {
		err = fmt.Errorf("%w: %w", admin.ErrLockRequest, err)
	}
	return admin.Unlocked{User: user, WasLocked: was, By: by}, err
}

// Locks lists the locks in force.
func (a *Gateway) Locks() []admin.Lock {
	cl := a.cluster.Load()
	if cl == nil {
		return nil
	}
	var out []admin.Lock
	for _, l := range cl.Locks() {
		out = append(out, adminLock(l))
	}
	return out
}

// statusLocks are the locks for the status: without the admins' reason
// and the message, which read-only credentials do not see.
func (a *Gateway) statusLocks() []admin.Lock {
	ls := a.Locks()
	for i := range ls {
		ls[i].Reason, ls[i].Message = "", ""
	}
	return ls
}

func adminLock(l cluster.Lock) admin.Lock {
	return admin.Lock{User: l.User, Reason: l.Reason, Message: l.Message, By: l.By, At: l.At, Until: l.Until,
		EndSessions: l.EndSessions, Gateway: l.Gateway}
}

// canonicalizer is a directory that maps every form of a name to its
// account (AD: HPC\Alice, alice@realm → alice) without asking the
// directory server.
type canonicalizer interface {
	CanonicalName(typed string) string
}

// lockName resolves what an admin typed to the canonical account name a
// login of that user would carry: "+node" dropped, then the directory's
// answer. A disabled or expired account, or a directory that cannot be
// reached, still gets the name by the directory's own normalisation (an
// emergency lock must not wait for AD). A name the directory says does
// not exist is refused unless force: a typo must not lock nobody.
func (a *Gateway) lockName(ctx context.Context, typed string, force bool) (string, error) {
	name, _, err := login.SplitUser(strings.TrimSpace(typed))
	if err != nil {
		return "", fmt.Errorf("%w: user %q: %w", admin.ErrLockRequest, login.Sanitize(typed), err)
	}
	dir := a.Directory()
	canon := strings.ToLower(name)
	if c, ok := dir.(canonicalizer); ok {
		canon = strings.ToLower(c.CanonicalName(name))
	}
	lookup := func(n string) (directory.Identity, error) {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return dir.Lookup(lctx, n)
	}
	id, err := lookup(name)
	if err != nil && canon != name {
		// A form this directory does not take as typed (upper case in
		// the static one): its normal form may be an account.
		id, err = lookup(canon)
	}
	switch {
	case err == nil:
		return id.Name, nil
	case errors.Is(err, directory.ErrNoSuchUser) && !force:
		return "", fmt.Errorf("%w: user %s: the directory has no such account (force locks the name anyway)",
			admin.ErrLockRequest, login.Sanitize(name))
	}
	if !names.Account.Valid(canon) {
		return "", fmt.Errorf("%w: user %s: %s, and %q is no account name (%s)", admin.ErrLockRequest,
			login.Sanitize(name), directory.Reason(err), login.Sanitize(canon), names.Account.Syntax)
	}
	a.log.Info("lock: name resolved without the directory", "user", canon, "typed", login.Sanitize(typed), "reason", directory.Reason(err))
	return canon, nil
}

// clusterLocks are the locks as the SSH server sees them, through the
// current gossip member.
type clusterLocks struct{ a *Gateway }

var _ gateway.Locks = clusterLocks{}

func (l clusterLocks) Locked(user string) (gateway.AccountLock, bool) {
	cl := l.a.cluster.Load()
	if cl == nil {
		return gateway.AccountLock{}, false
	}
	x, ok := cl.Locked(user)
	if !ok {
		return gateway.AccountLock{}, false
	}
	return gateway.AccountLock{Reason: x.Reason, Message: x.Message, By: x.By, Until: x.Until, EndSessions: x.EndSessions}, true
}

package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/throttle"
)

// Password guesses are what lock accounts out in AD, so every password
// attempt passes three gates before it reaches the directory:
//
//  1. bans: with a gossip cluster, an account or source banned by any
//     gateway is refused here (the gateway whose throttle trips bans it
//     on all of them, so guesses spread over gateways meet one limit);
//  2. the throttle reservation (internal/throttle): one verification per
//     account at a time, a few per source, attempts in flight counted
//     against the allowance — a burst of N parallel guesses reaches the
//     directory at most allowance times;
//  3. a global bound on verifications running at once (argon2id hashing
//     at 64 MiB each, LDAP binds), whoever they are for.
//
// Key logins never bind to AD and are not throttled.

// Ban key namespaces in the cluster.
const (
	banUser = "user:"
	banAddr = "addr:"
)

// failureFloor is the least time a refused password takes to answer.
// Without it an unknown name (no bind) answers faster than a known one
// with a wrong password (a bind to AD), which tells a stranger which
// accounts exist. It is above a bind's usual latency; a typo costs the
// user a quarter of a second.
const failureFloor = 250 * time.Millisecond

// errThrottled marks a password attempt refused before the directory.
var errThrottled = errors.New("password attempt refused by the throttle")

// checkPassword verifies name's password through the gates above. On
// failure reason is the audit reason.
func (g *Gateway) checkPassword(ctx context.Context, c *conn, name, pw string) (directory.Identity, string, error) {
	// Throttle on the account, not the name typed: AD users often have a
	// UPN whose prefix is not their account name (john.doe@… for jdoe),
	// and every name must share one allowance or AD's lockout is
	// reachable.
	key := g.accountKey(name)
	if id, err := c.resolve(name); err == nil {
		key = id.Name
	}
	if wait, why, banned := g.banned(key, c.srcK); banned {
		return directory.Identity{}, fmt.Sprintf("%s for %s after repeated failures", why, wait.Round(time.Second)), errThrottled
	}
	r, wait, err := g.throttle.Reserve(ctx, key, c.srcK)
	switch {
	case errors.Is(err, throttle.ErrThrottled):
		return directory.Identity{}, fmt.Sprintf("throttled for %s after repeated failures", wait.Round(time.Second)), errThrottled
	case err != nil:
		return directory.Identity{}, "gave up waiting for another password attempt of the account or source", err
	}
	select {
	case g.pwChecks <- struct{}{}:
	case <-ctx.Done():
		r.Release()
		return directory.Identity{}, "gave up waiting for a password check slot", ctx.Err()
	}
	vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	id, err := g.dir.VerifyPassword(vctx, name, pw)
	cancel()
	<-g.pwChecks
	if err != nil {
		// A directory that could not answer counts too: otherwise a
		// guesser tries without limit while the DC is away (and against
		// a password cache, when one is on).
		r.Fail()
		g.banIfTripped(key, c.srcK)
		return directory.Identity{}, "", err
	}
	r.Success()
	return id, "", nil
}

// padFailure waits until a refused password has taken failureFloor and
// the lookup floor since start (or ctx ends).
func (g *Gateway) padFailure(ctx context.Context, start time.Time) {
	sleepUntil(ctx, start.Add(max(failureFloor, g.lookups.floor())))
}

// banned reports a cluster-wide ban of the account or source.
func (g *Gateway) banned(key, src string) (wait time.Duration, why string, ok bool) {
	if g.cluster == nil {
		return 0, "", false
	}
	now := time.Now()
	if until, banned := g.cluster.Banned(banUser + key); banned {
		return until.Sub(now), "account banned cluster-wide", true
	}
	if until, banned := g.cluster.Banned(banAddr + src); banned {
		return until.Sub(now), "address banned cluster-wide", true
	}
	return 0, "", false
}

// banIfTripped bans the account or address cluster-wide, for as long as
// the local throttle refuses it, once a failure tripped a limit.
func (g *Gateway) banIfTripped(key, src string) {
	if g.cluster == nil {
		return
	}
	now := time.Now()
	if wait, ok := g.throttle.Check(key, ""); !ok {
		if err := g.cluster.Ban(banUser+key, now.Add(wait), "password failures"); err != nil {
			g.log.Error("cluster ban failed", "user", key, "err", err)
		}
	}
	if wait, ok := g.throttle.Check("", src); !ok {
		if err := g.cluster.Ban(banAddr+src, now.Add(wait), "password failures"); err != nil {
			g.log.Error("cluster ban failed", "src", src, "err", err)
		}
	}
}

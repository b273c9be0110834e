package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/throttle"
)

// Password guesses are what lock accounts out in AD, so every password
// attempt passes three gates before it reaches the directory:
//
//  1. bans: with a gossip cluster, an account, an (account, source) pair
//     or a source banned by any gateway is refused here (the gateway whose
//     throttle trips bans it on all of them, so guesses spread over
//     gateways meet one limit);
//  2. the throttle reservation (internal/throttle): one verification per
//     account at a time, a few per source, attempts in flight counted
//     against the allowances — a burst of N parallel guesses reaches the
//     directory at most allowance times. The allowances are per (account,
//     source) first and per account only when several sources fail, so a
//     stranger cannot keep the owner off by failing on purpose;
//  3. a global bound on verifications running at once (argon2id hashing
//     at 64 MiB each, LDAP binds), whoever they are for.
//
// An attempt the directory never judged (no domain controller to ask,
// directory.ErrNotChecked) counts against nothing: an outage must not end
// in a throttle or a ban. One whose password reached a DC that then failed
// to answer counts as a failure: AD may have counted it.
//
// Key logins never bind to AD and are not throttled.

// Ban key namespaces in the cluster.
const (
	banUser = "user:" // the account, from every source
	banPair = "pair:" // the account from one source: throttle.PairKey
	banAddr = "addr:" // the source, whichever account
)

// errThrottled marks a password attempt refused before the directory.
var errThrottled = errors.New("password attempt refused by the throttle")

// Bans are password bans every gateway of a cluster honours
// (internal/cluster.Cluster).
type Bans interface {
	Banned(key string) (until time.Time, ok bool)
	Ban(key string, until time.Time, reason string) error
}

// passwordGate is the three gates. Safe for concurrent use.
type passwordGate struct {
	dir      directory.Directory
	bans     Bans // nil without gossip
	throttle *throttle.Throttle
	checks   chan struct{} // one per password verification running
	log      *slog.Logger
}

func newPasswordGate(dir directory.Directory, bans Bans, cfg throttle.Config, maxChecks int, log *slog.Logger) *passwordGate {
	return &passwordGate{dir: dir, bans: bans, throttle: throttle.New(cfg), checks: make(chan struct{}, maxChecks), log: log}
}

// checkPassword verifies name's password through the gates above. On
// failure reason is the audit reason.
func (g *passwordGate) check(ctx context.Context, srcKey, account, name, pw string) (directory.Identity, string, error) {
	// Throttle on the account, not the name typed: AD users often have a
	// UPN whose prefix is not their account name (john.doe@… for jdoe),
	// and every name must share one allowance or AD's lockout is
	// reachable.
	key := account
	if key == "" {
		key = g.accountKey(name)
	}
	if wait, why, banned := g.banned(key, srcKey); banned {
		return directory.Identity{}, fmt.Sprintf("%s for %s after repeated failures", why, wait.Round(time.Second)), errThrottled
	}
	r, wait, err := g.throttle.Reserve(ctx, key, srcKey)
	switch {
	case errors.Is(err, throttle.ErrThrottled):
		return directory.Identity{}, fmt.Sprintf("throttled for %s after repeated failures %s", wait.Round(time.Second),
			whose(g.throttle.Waits(key, srcKey))), errThrottled
	case err != nil:
		return directory.Identity{}, "gave up waiting for another password attempt of the account or source", err
	}
	select {
	case g.checks <- struct{}{}:
	case <-ctx.Done():
		r.Release()
		return directory.Identity{}, "gave up waiting for a password check slot", ctx.Err()
	}
	// Not cancelled with the client's connection: a bind cut off half-way
	// may still count at AD, and then it must count here too.
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	id, err := g.dir.VerifyPassword(vctx, name, pw)
	cancel()
	<-g.checks
	switch {
	case err == nil:
		r.Success()
		return id, "", nil
	case errors.Is(err, directory.ErrNotChecked):
		r.Release() // an answer the directory never gave is not a failed password
	default:
		// Wrong passwords, unknown names (counted like accounts, or the
		// throttle would tell them apart), and answers lost after the
		// password reached a DC.
		r.Fail()
		g.banIfTripped(key, srcKey)
	}
	return directory.Identity{}, "", err
}

// whose says which allowance a throttled attempt met, for the audit.
func whose(w throttle.Waits) string {
	switch w.Max() {
	case 0:
		return "(the throttle's table is full)"
	case w.Account:
		return "of the account (several sources)"
	case w.Pair:
		return "of the account from this address"
	}
	return "from this address"
}

// canonicalizer is implemented by directories where one user may type
// several names (AD: alice, HPC\alice, alice@hpc.example.edu).
type canonicalizer interface {
	CanonicalName(typed string) string
}

// accountKey is the per-account throttling key of a name that could not be
// resolved: every form of a name counts against the same allowance.
func (g *passwordGate) accountKey(name string) string {
	if c, ok := g.dir.(canonicalizer); ok {
		return c.CanonicalName(name)
	}
	return name
}

// banned reports a cluster-wide ban of the account, of the account from
// this source, or of the source.
func (g *passwordGate) banned(key, src string) (wait time.Duration, why string, ok bool) {
	if g.bans == nil {
		return 0, "", false
	}
	now := time.Now()
	for _, b := range []struct{ key, why string }{
		{banUser + key, "account banned cluster-wide"},
		{banPair + throttle.PairKey(key, src), "account banned cluster-wide from this address"},
		{banAddr + src, "address banned cluster-wide"},
	} {
		if until, banned := g.bans.Banned(b.key); banned {
			return until.Sub(now), b.why, true
		}
	}
	return 0, "", false
}

// banIfTripped bans the account, the pair or the address cluster-wide, for
// as long as the local throttle refuses it, once a failure tripped a limit.
func (g *passwordGate) banIfTripped(key, src string) {
	if g.bans == nil {
		return
	}
	now := time.Now()
	w := g.throttle.Waits(key, src)
	for _, b := range []struct {
		wait time.Duration
		key  string
	}{{w.Account, banUser + key}, {w.Pair, banPair + throttle.PairKey(key, src)}, {w.Source, banAddr + src}} {
		if b.wait <= 0 {
			continue
		}
		if err := g.bans.Ban(b.key, now.Add(b.wait), "password failures"); err != nil {
			g.log.Error("cluster ban failed", "user", key, "src", src, "ban", b.key, "err", err)
		}
	}
}

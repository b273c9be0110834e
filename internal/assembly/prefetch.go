package assembly

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

// Keeping the identity cache warm (directory.ad.prefetch_interval): the
// users the policy lets in are looked up in the background, so that a
// gateway that has just started, or sees a burst of reconnects, knows them
// before they log in (see internal/directory/ad's Warm).

// prefetchFirst is how long after the start the first round waits: the
// directory's watch has read its first USN by then, and logins that
// arrive at once do their own lookups.
const prefetchFirst = 5 * time.Second

// prefetchRetry is how soon a round that could not list the users, or a
// configuration without prefetching, is looked at again (a reload may
// turn it on).
const prefetchRetry = time.Minute

// warmer is a directory that can warm its cache (AD).
type warmer interface {
	Warm(ctx context.Context, names []string) int
}

// prefetch runs rounds until ctx ends, each with the configuration and
// directory in use then.
func (a *Gateway) prefetch(ctx context.Context) {
	t := time.NewTimer(prefetchFirst)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(a.prefetchRound(ctx))
	}
}

// prefetchRound warms the cache once and returns when to go again.
func (a *Gateway) prefetchRound(ctx context.Context) time.Duration {
	p := a.cur.Load()
	ad := p.cfg.Directory.AD
	w, ok := p.dir.(warmer)
	l, isLister := p.dir.(directory.Lister)
	if !ok || !isLister || ad.PrefetchInterval <= 0 {
		return prefetchRetry
	}
	start := time.Now()
	names, err := policyUsers(ctx, p.cfg.Policy, l, ad.MaxCacheEntries)
	if err != nil {
		a.log.Warn("identity prefetch: listing the policy's users", "err", err)
		return min(prefetchRetry, ad.PrefetchInterval)
	}
	n := w.Warm(ctx, names)
	a.log.Info("identity prefetch: cache warmed", "users", len(names), "looked_up", n,
		"took", time.Since(start).Round(time.Millisecond), "next_in", ad.PrefetchInterval)
	return ad.PrefetchInterval
}

// policyUsers lists who the policy may let in, by name: the users its
// allowing rules name and the members of their groups (a rule for every
// group, "*", names nobody it could list), at most max of them, without
// repeats.
func policyUsers(ctx context.Context, pol policy.Config, l directory.Lister, max int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(u string) {
		k := strings.ToLower(u)
		if !seen[k] && len(out) < max {
			seen[k] = true
			out = append(out, u)
		}
	}
	var groups []string
	for _, r := range pol.Rules {
		if r.Deny {
			continue
		}
		for _, u := range r.Users {
			add(u)
		}
		for _, g := range r.Groups {
			if g != "*" && !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	for _, g := range groups {
		ms, err := l.Members(ctx, g)
		if errors.Is(err, directory.ErrNoSuchGroup) {
			continue // a rule for a group not created yet lets nobody in
		}
		if err != nil {
			return nil, fmt.Errorf("members of %q: %w", g, err)
		}
		for _, u := range ms {
			add(u)
		}
	}
	return out, nil
}

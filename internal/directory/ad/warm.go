package ad

import (
	"context"
	"errors"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// Warming the cache. A key login of a user the gateway has not seen waits
// for AD before the key is even considered, and the gateway answers a key
// before proof at a fixed time (gateway.key_refusal_delay): a lookup that
// takes longer refuses the key unseen. Users a gateway has never seen are
// everyone after a restart, and many in a burst of reconnects. Warm looks
// the users the policy names up in the background, so their identities
// are cached (and, once older than cache_ttl, still known to Stale) before
// they log in.

// Warm looks each of names up that is not cached and fresh, one at a time,
// at most PrefetchRate a second, once the directory watch has read its
// first USN, until ctx ends or AD goes offline (the outage's own
// reconnection takes over then). Names that do not parse are
// skipped. It reports how many lookups went to AD.
func (d *Directory) Warm(ctx context.Context, names []string) (looked int) {
	// An identity cached before the watch knew a USN is dropped at its
	// first read (watch.go): wait for it.
	select {
	case <-d.watched:
	case <-ctx.Done():
		return 0
	}
	rate := d.cfg.PrefetchRate
	if rate <= 0 {
		rate = DefaultConfig().PrefetchRate
	}
	every := time.Duration(float64(time.Second) / rate)
	var next time.Time
	for _, name := range names {
		if ctx.Err() != nil || d.Offline() {
			return looked
		}
		n, err := ParseName(name, d.cfg.Domain, d.cfg.UPNSuffixes)
		if err != nil {
			continue
		}
		if e := d.cache.get(n); e != nil && d.now().Sub(e.id.FetchedAt) < d.cfg.CacheTTL {
			d.metrics.prefetched.WithLabelValues("fresh").Inc()
			continue
		}
		if wait := time.Until(next); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return looked
			case <-t.C:
			}
		}
		next = time.Now().Add(every)
		lctx, cancel := context.WithTimeout(ctx, 4*d.cfg.Timeout)
		_, err = d.lookup(lctx, n)
		cancel()
		looked++
		switch {
		case err == nil:
			d.metrics.prefetched.WithLabelValues("ok").Inc()
		case errors.Is(err, directory.ErrNoSuchUser), errors.Is(err, directory.ErrAccountDisabled):
			d.metrics.prefetched.WithLabelValues("refused").Inc()
		default:
			d.metrics.prefetched.WithLabelValues("error").Inc()
		}
	}
	return looked
}

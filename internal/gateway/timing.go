package gateway

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Refusals must not tell a stranger which accounts exist. An unknown name
// and a known one with the wrong key (or password) are both refused, but
// unpadded they take different times: a known user's first lookup also
// fetches groups, a cached user answers at once, a password check binds to
// AD only for an account that exists. So the first refusal for a name on
// a connection answers no earlier than the lookup floor — above what
// recent directory lookups took — and a refused password no earlier than
// failureFloor or the lookup floor, whichever is later.

// lookupTimes remembers how long recent directory lookups took.
type lookupTimes struct {
	mu   sync.Mutex // mu protects the following
	ring [128]time.Duration
	n    int // lookups recorded, for the ring position
}

// Bounds of the lookup floor: at least minLookupFloor even when the
// directory answers from memory, never more than maxLookupFloor however
// slow AD gets (a stalled DC is seen in the logs, not by every user).
const (
	minLookupFloor = 20 * time.Millisecond
	maxLookupFloor = time.Second
)

func (l *lookupTimes) record(d time.Duration) {
	l.mu.Lock()
	l.ring[l.n%len(l.ring)] = d
	l.n++
	l.mu.Unlock()
}

// floor is 1.5 × the 95th percentile of recent lookups, within bounds.
func (l *lookupTimes) floor() time.Duration {
	l.mu.Lock()
	n := min(l.n, len(l.ring))
	ds := slices.Clone(l.ring[:n])
	l.mu.Unlock()
	if n == 0 {
		return minLookupFloor
	}
	slices.Sort(ds)
	p95 := ds[min((n*95)/100, n-1)]
	return min(max(p95*3/2, minLookupFloor), maxLookupFloor)
}

// sleepUntil waits until t (or ctx ends).
func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

// failureFloor is the least time a refused password takes to answer.
// Without it an unknown name (no bind) answers faster than a known one
// with a wrong password (a bind to AD), which tells a stranger which
// accounts exist. It is above a bind's usual latency; a typo costs the
// user a quarter of a second.
const failureFloor = 250 * time.Millisecond

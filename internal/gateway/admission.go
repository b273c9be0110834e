package gateway

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Who may start a handshake. A connection that has not authenticated costs
// the gateway a goroutine and a key exchange, may cost a login node a
// speculative connection, and holds a slot for up to auth_timeout. Like
// sshd's MaxStartups and PerSourcePenalties, admission bounds those costs:
//
//   - at most MaxStartups unauthenticated connections in all, handshaking
//     at once; a connection beyond them waits for a place, first come first
//     served, with at most MaxStartupsQueue waiting, and is refused only if
//     no place frees up within its wait (auth_timeout from accept);
//   - at most PerSourceMaxStartups of them (handshaking or waiting) from
//     one source (an IPv4 address or an IPv6 /64, see SourceKey);
//   - new connections from one source at PerSourceRate per second, with
//     bursts of PerSourceBurst (a token bucket).
//
// A connection is admitted at accept (after its PROXY header, so the
// source is the real client) and releases its place once it authenticated
// or went away; a release hands the place straight to the first waiter. So
// a flood from one address fills its own allowance, never the gateway's,
// and other users keep logging in; and a storm of honest clients (the
// other gateway died, and its users all reconnect here at once) waits its
// turn instead of being refused, as it would be by sshd's MaxStartups,
// which drops connections at random between start and full. A waiting
// connection costs a goroutine and a socket, nothing more: its key
// exchange has not started.

// AdmissionLimits are the gateway.* admission settings.
type AdmissionLimits struct {
	MaxStartups          int
	MaxStartupsQueue     int // connections that may wait for a place
	PerSourceMaxStartups int
	PerSourceRate        float64 // tokens per second
	PerSourceBurst       int
}

// Refusal reasons, as metric labels.
const (
	admitFull      = "max_startups"
	admitPerSource = "per_source_max_startups"
	admitRate      = "per_source_rate"
)

// admission tracks unauthenticated connections. Safe for concurrent use.
type admission struct {
	lim AdmissionLimits
	now func() time.Time

	mu      sync.Mutex // mu protects the following
	total   int        // places taken (handshaking), at most MaxStartups
	queue   []chan struct{}
	sources map[string]*sourceState
}

type sourceState struct {
	pending int // unauthenticated connections now, waiting ones included
	bucket
}

func newAdmission(lim AdmissionLimits, now func() time.Time) *admission {
	return &admission{lim: lim, now: now, sources: map[string]*sourceState{}}
}

// admit takes a place for a new connection from source key src, waiting
// for one while ctx lasts if MaxStartups are taken. It returns a release
// func (call once; extra calls are ignored) or the reason for a refusal.
func (a *admission) admit(ctx context.Context, src string) (release func(), refused string) {
	now := a.now()
	a.mu.Lock()
	s := a.sources[src]
	if s == nil {
		if len(a.sources) >= maxSources {
			a.prune(now)
		}
		s = &sourceState{bucket: newBucket(a.lim.PerSourceBurst, now)}
		a.sources[src] = s
	}
	if s.pending >= a.lim.PerSourceMaxStartups {
		a.mu.Unlock()
		return nil, admitPerSource
	}
	if a.total >= a.lim.MaxStartups && len(a.queue) >= a.lim.MaxStartupsQueue {
		a.mu.Unlock()
		return nil, admitFull
	}
	if !s.take(now, a.lim.PerSourceRate, a.lim.PerSourceBurst) {
		a.mu.Unlock()
		return nil, admitRate
	}
	s.pending++
	return a.take(ctx, s) // unlocks
}

// admitExempt takes a place for a connection from an exempt source: only
// MaxStartups (and its queue) apply.
func (a *admission) admitExempt(ctx context.Context) (release func(), refused string) {
	a.mu.Lock()
	if a.total >= a.lim.MaxStartups && len(a.queue) >= a.lim.MaxStartupsQueue {
		a.mu.Unlock()
		return nil, admitFull
	}
	return a.take(ctx, nil) // unlocks
}

// take gives the connection a place, at once or after waiting in the queue
// while ctx lasts (s nil: an exempt source). mu is held on entry and
// released.
func (a *admission) take(ctx context.Context, s *sourceState) (release func(), refused string) {
	if a.total < a.lim.MaxStartups && len(a.queue) == 0 {
		a.total++
		a.mu.Unlock()
		return a.releaser(s), ""
	}
	w := make(chan struct{})
	a.queue = append(a.queue, w)
	a.mu.Unlock()
	select {
	case <-w: // a release handed its place over
		return a.releaser(s), ""
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-w: // handed over as the wait ended: pass it on
		a.handOver()
	default:
		a.queue = slices.DeleteFunc(a.queue, func(q chan struct{}) bool { return q == w })
	}
	if s != nil {
		s.pending--
	}
	return nil, admitFull
}

// handOver gives a place back, to the first waiter if there is room;
// mu held.
func (a *admission) handOver() {
	a.total--
	a.fill()
}

// fill gives free places to waiters, first come first served; mu held.
func (a *admission) fill() {
	for len(a.queue) > 0 && a.total < a.lim.MaxStartups {
		close(a.queue[0])
		a.queue = a.queue[1:]
		a.total++
	}
}

// releaser returns the func that gives a place back (s nil: an exempt
// source). Calls after the first are ignored.
func (a *admission) releaser(s *sourceState) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.handOver()
			if s != nil {
				s.pending--
			}
		})
	}
}

// prune drops sources with nothing pending whose bucket is full again
// (they would start afresh anyway); mu held.
func (a *admission) prune(now time.Time) {
	pruneSources(a.sources, func(s *sourceState) bool { return s.pending == 0 },
		func(s *sourceState) bool { return s.full(now, a.lim.PerSourceRate, a.lim.PerSourceBurst) })
}

// unauthenticated is the number of connections admitted and not yet
// released, for metrics.
func (a *admission) unauthenticated() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.total
}

// waiting is the number of connections waiting for a place, for metrics.
func (a *admission) waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue)
}

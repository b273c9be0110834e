package gateway

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Who may make the gateway ask the directory. Every user name a client
// sends before proving anything may cost an LDAP search (three for an
// account that exists, with nested groups), and the directory's connection
// pool is small: a stranger cycling random names would queue everyone's
// logins behind their searches, and load the DC. The lookup gate bounds
// that work:
//
//   - a source (see SourceKey) may have names looked up at PerSourceRate
//     per second, in bursts of PerSourceBurst (a token bucket); a name over
//     it is not looked up at all (the caller refuses it, at the same time
//     as any other refusal);
//   - at most PerSource lookups of one source run at once, and at most
//     queueFactor×PerSource more wait; beyond that a name is not looked up;
//   - at most Max lookups run at once in all. The waiting ones are served
//     by source, the source with the fewest lookups running first, then
//     round-robin: whoever floods, another source's lookup takes the next
//     free place, never waiting behind the flood's queue.
//
// Sources in admission_exempt (one NAT for many users) are not limited per
// source, only by Max and the round-robin. The gate knows nothing of the
// directory's cache: a cached answer passes it too, quickly.

// LookupLimits are the gateway.* lookup settings.
type LookupLimits struct {
	Max            int
	PerSource      int
	PerSourceRate  float64 // names per second
	PerSourceBurst int
}

// queueFactor × PerSource lookups of one source may wait for their turn.
const queueFactor = 4

// Refusals of the gate (metric labels: lookup_rate, lookup_queue).
var (
	errLookupRate  = errors.New("lookup refused: per_source_lookup_rate")
	errLookupQueue = errors.New("lookup refused: too many lookups of this source waiting")
)

// lookupGate is the gate. Safe for concurrent use.
type lookupGate struct {
	lim LookupLimits
	now func() time.Time

	mu      sync.Mutex // mu protects the following
	running int
	sources map[string]*lookupSource
	ready   []*lookupSource // sources with waiters, in round-robin order
}

type lookupSource struct {
	key     string
	limited bool // per-source limits apply (not exempt)
	running int
	waiting []chan struct{} // FIFO; closed when granted
	queued  bool            // in ready
	bucket
}

func newLookupGate(lim LookupLimits, now func() time.Time) *lookupGate {
	return &lookupGate{lim: lim, now: now, sources: map[string]*lookupSource{}}
}

// acquire waits for a place to look a name up for source src (limited:
// per-source limits apply). It returns the release func (call once), or
// errLookupRate / errLookupQueue at once, or ctx's error.
func (g *lookupGate) acquire(ctx context.Context, src string, limited bool) (release func(), err error) {
	now := g.now()
	g.mu.Lock()
	s := g.sources[src]
	if s == nil {
		if len(g.sources) >= maxSources {
			g.prune(now)
		}
		s = &lookupSource{key: src, bucket: newBucket(g.lim.PerSourceBurst, now)}
		g.sources[src] = s
	}
	s.limited = limited
	if limited {
		if len(s.waiting) >= queueFactor*g.lim.PerSource {
			g.mu.Unlock()
			return nil, errLookupQueue
		}
		if !s.take(now, g.lim.PerSourceRate, g.lim.PerSourceBurst) {
			g.mu.Unlock()
			return nil, errLookupRate
		}
	}
	if len(g.ready) == 0 && g.eligible(s) {
		g.grant(s)
		g.mu.Unlock()
		return g.releaser(s), nil
	}
	ch := make(chan struct{})
	s.waiting = append(s.waiting, ch)
	if !s.queued {
		s.queued = true
		g.ready = append(g.ready, s)
	}
	g.dispatch()
	g.mu.Unlock()
	select {
	case <-ch:
		return g.releaser(s), nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, w := range s.waiting {
		if w == ch {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			return nil, ctx.Err()
		}
	}
	// Granted meanwhile: give the place back.
	g.releaseLocked(s)
	return nil, ctx.Err()
}

// eligible reports whether s may start a lookup now. g.mu held.
func (g *lookupGate) eligible(s *lookupSource) bool {
	return g.running < g.lim.Max && (!s.limited || s.running < g.lim.PerSource)
}

func (g *lookupGate) grant(s *lookupSource) {
	g.running++
	s.running++
}

// dispatch grants waiting lookups while there is room: each time to the
// waiting source with the fewest lookups running, the longest-waiting one
// among equals (round-robin). g.mu held.
func (g *lookupGate) dispatch() {
	for g.running < g.lim.Max {
		best := -1
		for i := 0; i < len(g.ready); i++ {
			s := g.ready[i]
			if len(s.waiting) == 0 { // its waiters gave up
				g.ready = append(g.ready[:i], g.ready[i+1:]...)
				s.queued = false
				i--
				continue
			}
			if g.eligible(s) && (best < 0 || s.running < g.ready[best].running) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		s := g.ready[best]
		ch := s.waiting[0]
		s.waiting = s.waiting[1:]
		g.grant(s)
		close(ch)
		// Served: to the back of the round, or out of it.
		g.ready = append(g.ready[:best], g.ready[best+1:]...)
		if len(s.waiting) > 0 {
			g.ready = append(g.ready, s)
		} else {
			s.queued = false
		}
	}
}

func (g *lookupGate) releaser(s *lookupSource) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.releaseLocked(s)
		})
	}
}

func (g *lookupGate) releaseLocked(s *lookupSource) {
	g.running--
	s.running--
	g.dispatch()
}

// prune drops sources with nothing running or waiting whose bucket is
// full again. g.mu held.
func (g *lookupGate) prune(now time.Time) {
	pruneSources(g.sources, func(s *lookupSource) bool { return s.running == 0 && len(s.waiting) == 0 },
		func(s *lookupSource) bool { return s.full(now, g.lim.PerSourceRate, g.lim.PerSourceBurst) })
}

package gateway

import (
	"sync"
	"time"
)

// Who may start a handshake. A connection that has not authenticated costs
// the gateway a goroutine and a key exchange, may cost a login node a
// speculative connection, and holds a slot for up to auth_timeout. Like
// sshd's MaxStartups and PerSourcePenalties, admission bounds those costs:
//
//   - at most MaxStartups unauthenticated connections in all;
//   - at most PerSourceMaxStartups of them from one source (an IPv4 address
//     or an IPv6 /64, see SourceKey);
//   - new connections from one source at PerSourceRate per second, with
//     bursts of PerSourceBurst (a token bucket).
//
// A connection is admitted at accept (after its PROXY header, so the
// source is the real client) and releases its place once it authenticated
// or went away. So a flood from one address fills its own allowance, never
// the gateway's, and other users keep logging in.

// AdmissionLimits are the gateway.* admission settings.
type AdmissionLimits struct {
	MaxStartups          int
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
	total   int
	sources map[string]*sourceState
}

type sourceState struct {
	pending int // unauthenticated connections now
	bucket
}

func newAdmission(lim AdmissionLimits, now func() time.Time) *admission {
	return &admission{lim: lim, now: now, sources: map[string]*sourceState{}}
}

// admit takes a place for a new connection from source key src. It returns
// a release func (call once; extra calls are ignored) or the reason for a
// refusal.
func (a *admission) admit(src string) (release func(), refused string) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.total >= a.lim.MaxStartups {
		return nil, admitFull
	}
	s := a.sources[src]
	if s == nil {
		if len(a.sources) >= maxSources {
			a.prune(now)
		}
		s = &sourceState{bucket: newBucket(a.lim.PerSourceBurst, now)}
		a.sources[src] = s
	}
	if s.pending >= a.lim.PerSourceMaxStartups {
		return nil, admitPerSource
	}
	if !s.take(now, a.lim.PerSourceRate, a.lim.PerSourceBurst) {
		return nil, admitRate
	}
	s.pending++
	a.total++
	return a.releaser(s), ""
}

// releaser returns the func that gives a place back (s nil: an exempt
// source). Calls after the first are ignored.
func (a *admission) releaser(s *sourceState) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.total--
			if s != nil {
				s.pending--
			}
		})
	}
}

// admitExempt takes a place for a connection from an exempt source: only
// MaxStartups applies.
func (a *admission) admitExempt() (release func(), refused string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.total >= a.lim.MaxStartups {
		return nil, admitFull
	}
	a.total++
	return a.releaser(nil), ""
}

// prune drops sources with nothing pending whose bucket is full again;
// mu held.
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

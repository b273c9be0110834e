// Package throttle limits authentication failures per user and per source
// address, so that nobody can lock a researcher's AD account out through
// frontdoor and password guessing gets slow quickly.
//
// Two mechanisms apply to each key (user, source):
//
//   - a sliding window: at most N failures within W; the next attempt is
//     refused until the oldest of them leaves the window;
//   - exponential backoff: after two consecutive failures, each further
//     attempt waits BaseDelay, 2*BaseDelay, ... up to MaxDelay.
//
// AD locks an account after "lockout threshold" bad passwords within its
// observation window ("reset account lockout counter after") and resets the
// count on a successful logon. With UserFailures below the threshold and
// UserWindow at least the observation window, frontdoor alone can never
// trigger a lockout. Each gateway counts on its own: with G gateways set
// UserFailures to at most (threshold-1)/G.
//
// Checking and recording apart would let N parallel guesses all pass the
// check before the first failure is recorded: one burst of connections
// would reach AD N times and lock the account. So a password attempt first
// Reserves its place: at most MaxInFlightPerUser (1) verification per
// account and MaxInFlightPerSource per source run at once (later ones wait
// their turn), and attempts in flight count as failures when the allowance
// is checked. The reservation then ends as a Fail, a Success or a Release.
//
// The user key must be the normalised account name (for AD:
// ad.ParseName(...).Account), or cycling between alice, HPC\alice and
// alice@realm would multiply the allowance.
package throttle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Config sets the limits: the `throttle:` section of the gateway
// configuration. Start from DefaultConfig.
type Config struct {
	// UserFailures is the number of failures per user allowed within
	// UserWindow: keep it below AD's lockout threshold, divided by the
	// number of gateways.
	UserFailures int `yaml:"user_failures"`
	// UserWindow is the per-user window: at least AD's lockout
	// observation window.
	UserWindow time.Duration `yaml:"user_window"`
	// SourceFailures is the number of failures per source address allowed
	// within SourceWindow.
	SourceFailures int `yaml:"source_failures"`
	// SourceWindow is the per-source window.
	SourceWindow time.Duration `yaml:"source_window"`
	// BaseDelay is the wait after the second consecutive failure; each
	// further failure doubles it, up to MaxDelay.
	BaseDelay time.Duration `yaml:"base_delay"`
	// MaxDelay caps the backoff; at least BaseDelay.
	MaxDelay time.Duration `yaml:"max_delay"`
	// MaxEntries bounds the number of tracked keys (users and sources);
	// the oldest are forgotten first.
	MaxEntries int `yaml:"max_entries"`
	// MaxInFlightPerUser is how many password verifications of one
	// account may run at once; others wait their turn.
	MaxInFlightPerUser int `yaml:"max_in_flight_per_user"`
	// MaxInFlightPerSource is how many password verifications from one
	// source address may run at once.
	MaxInFlightPerSource int `yaml:"max_in_flight_per_source"`
	// Now is the clock (time.Now); tests inject their own.
	Now func() time.Time `yaml:"-"`
}

// DefaultConfig returns limits that never lock an AD account with the
// common lockout threshold of 5 (or more) and two gateways: 3 failures per
// user in 30 minutes.
func DefaultConfig() Config {
	return Config{
		UserFailures:         3,
		UserWindow:           30 * time.Minute,
		SourceFailures:       20,
		SourceWindow:         10 * time.Minute,
		BaseDelay:            time.Second,
		MaxDelay:             time.Minute,
		MaxEntries:           100000,
		MaxInFlightPerUser:   1,
		MaxInFlightPerSource: 4,
		Now:                  time.Now,
	}
}

// Validate reports limits that cannot work, each error as
// "throttle.key: problem" (errors.Join'ed).
func (c Config) Validate() error {
	var errs []error
	for _, n := range []struct {
		key string
		v   int
	}{{"user_failures", c.UserFailures}, {"source_failures", c.SourceFailures}, {"max_entries", c.MaxEntries},
		{"max_in_flight_per_user", c.MaxInFlightPerUser}, {"max_in_flight_per_source", c.MaxInFlightPerSource}} {
		if n.v < 1 {
			errs = append(errs, fmt.Errorf("throttle.%s: must be at least 1", n.key))
		}
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"user_window", c.UserWindow}, {"source_window", c.SourceWindow}, {"base_delay", c.BaseDelay}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("throttle.%s: must be positive", d.key))
		}
	}
	if c.MaxDelay < c.BaseDelay {
		errs = append(errs, fmt.Errorf("throttle.max_delay: must be at least base_delay (%s)", c.BaseDelay))
	}
	if c.Now == nil {
		errs = append(errs, errors.New("throttle: no clock (start from DefaultConfig)"))
	}
	return errors.Join(errs...)
}

// Throttle tracks failures. It is safe for concurrent use.
type Throttle struct {
	cfg Config

	// mu protects the following.
	mu      sync.Mutex
	users   map[string]*state
	sources map[string]*state
	// wake is closed (and replaced) whenever a reservation ends, so that
	// attempts waiting their turn look again.
	wake chan struct{}
}

// state is the failure history of one key.
type state struct {
	fails       []time.Time // failures within the window, oldest first, at most limit
	consecutive int         // failures since the last success
	last        time.Time   // time of the last failure
	inflight    int         // reservations not yet ended
}

// New returns a Throttle with cfg's limits; cfg must be valid (see
// Validate).
func New(cfg Config) *Throttle {
	return &Throttle{cfg: cfg, users: map[string]*state{}, sources: map[string]*state{}, wake: make(chan struct{})}
}

// Check reports whether an attempt by user from src may proceed now. When
// not, retryAfter says how long until it may. An empty user or src is not
// checked (e.g. before the user name is known).
func (t *Throttle) Check(user, src string) (retryAfter time.Duration, ok bool) {
	now := t.cfg.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	wait := t.waitLocked(user, src, now)
	return wait, wait == 0
}

// waitLocked is how long an attempt must wait by the failures recorded
// for user and src. t.mu held.
func (t *Throttle) waitLocked(user, src string, now time.Time) time.Duration {
	var wait time.Duration
	if s := t.users[user]; user != "" && s != nil {
		wait = max(wait, s.wait(now, t.cfg.UserFailures, t.cfg.UserWindow, t.cfg))
	}
	if s := t.sources[src]; src != "" && s != nil {
		wait = max(wait, s.wait(now, t.cfg.SourceFailures, t.cfg.SourceWindow, t.cfg))
	}
	return wait
}

// ErrThrottled is returned by Reserve when the allowance is used up.
var ErrThrottled = errors.New("throttled")

// Reservation is one password attempt's place, from Reserve until it ends
// with exactly one of Fail, Success or Release (later calls are ignored).
type Reservation struct {
	t         *Throttle
	user, src string
	done      bool
}

// Reserve takes a place for one password attempt by user from src. While
// MaxInFlightPerUser attempts for user, or MaxInFlightPerSource from src,
// are being verified it waits for one to end (or for ctx). Then it checks
// the allowance, counting attempts in flight as failures: if it is used
// up, Reserve returns ErrThrottled and how long until an attempt may
// proceed. An empty user or src is not limited.
func (t *Throttle) Reserve(ctx context.Context, user, src string) (*Reservation, time.Duration, error) {
	for {
		now := t.cfg.Now()
		t.mu.Lock()
		busy := user != "" && t.busy(t.users[user], now, t.cfg.MaxInFlightPerUser, t.cfg.UserFailures, t.cfg.UserWindow) ||
			src != "" && t.busy(t.sources[src], now, t.cfg.MaxInFlightPerSource, t.cfg.SourceFailures, t.cfg.SourceWindow)
		if !busy {
			if wait := t.waitLocked(user, src, now); wait > 0 {
				t.mu.Unlock()
				return nil, wait, ErrThrottled
			}
			if !t.room(t.users, user, now, t.cfg.UserWindow) || !t.room(t.sources, src, now, t.cfg.SourceWindow) {
				t.mu.Unlock()
				return nil, t.cfg.MaxDelay, ErrThrottled
			}
			if user != "" {
				t.get(t.users, user, now, t.cfg.UserWindow).inflight++
			}
			if src != "" {
				t.get(t.sources, src, now, t.cfg.SourceWindow).inflight++
			}
			t.mu.Unlock()
			return &Reservation{t: t, user: user, src: src}, 0, nil
		}
		wake := t.wake
		t.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// room reports whether key is tracked, or can be without forgetting a key
// that still restricts: a full table refuses a newcomer (fail closed)
// rather than drop someone's history. t.mu held.
func (t *Throttle) room(m map[string]*state, key string, now time.Time, window time.Duration) bool {
	if key == "" || m[key] != nil || len(m) < t.cfg.MaxEntries {
		return true
	}
	t.pruneIdle(m, now, window)
	return len(m) < t.cfg.MaxEntries
}

// pruneIdle drops keys that no longer restrict anything. t.mu held.
func (t *Throttle) pruneIdle(m map[string]*state, now time.Time, window time.Duration) {
	for k, s := range m {
		if s.inflight == 0 && now.Sub(s.last) >= max(window, t.cfg.MaxDelay) {
			delete(m, k)
		}
	}
}

// busy reports whether a key has as many attempts in flight as it may, or
// so many that, were they all to fail, the allowance would be used up: the
// next attempt must wait for one to end. t.mu held.
func (t *Throttle) busy(s *state, now time.Time, maxInFlight, limit int, window time.Duration) bool {
	if s == nil || s.inflight == 0 {
		return false
	}
	s.expire(now, window)
	return s.inflight >= maxInFlight || len(s.fails)+s.inflight >= limit
}

// Fail ends the attempt as a failure (wrong password, unknown user, or a
// directory that could not answer: those count too, or a guesser could try
// without limit while the DC is away, and against a password cache).
func (r *Reservation) Fail() {
	r.end(func(now time.Time) { r.t.failureLocked(r.user, r.src, now) })
}

// Success ends the attempt as a successful login (see Throttle.Success).
func (r *Reservation) Success() {
	r.end(func(time.Time) { r.t.successLocked(r.user, r.src) })
}

// Release ends the attempt without an outcome (it never reached the
// directory).
func (r *Reservation) Release() { r.end(func(time.Time) {}) }

func (r *Reservation) end(outcome func(now time.Time)) {
	if r == nil || r.done {
		return
	}
	r.done = true
	t := r.t
	now := t.cfg.Now()
	t.mu.Lock()
	if s := t.users[r.user]; r.user != "" && s != nil {
		s.inflight = max(s.inflight-1, 0)
	}
	if s := t.sources[r.src]; r.src != "" && s != nil {
		s.inflight = max(s.inflight-1, 0)
	}
	outcome(now)
	close(t.wake)
	t.wake = make(chan struct{})
	t.mu.Unlock()
}

// Failure records a failed attempt (wrong password, unknown user).
func (t *Throttle) Failure(user, src string) {
	now := t.cfg.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failureLocked(user, src, now)
}

func (t *Throttle) failureLocked(user, src string, now time.Time) {
	if user != "" {
		t.get(t.users, user, now, t.cfg.UserWindow).fail(now, t.cfg.UserFailures, t.cfg.UserWindow)
	}
	if src != "" {
		t.get(t.sources, src, now, t.cfg.SourceWindow).fail(now, t.cfg.SourceFailures, t.cfg.SourceWindow)
	}
}

// Success records a successful login: the user's failures are forgotten (as
// AD resets badPwdCount), the source's backoff restarts but its window count
// stays, so one valid account cannot launder guesses against others.
func (t *Throttle) Success(user, src string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.successLocked(user, src)
}

func (t *Throttle) successLocked(user, src string) {
	if s := t.users[user]; s != nil && s.inflight > 0 {
		// Another attempt is still in flight: keep its count.
		s.fails, s.consecutive = nil, 0
	} else {
		delete(t.users, user)
	}
	if s := t.sources[src]; s != nil {
		s.consecutive = 0
	}
}

// Len is the number of tracked keys (users + sources), for metrics.
func (t *Throttle) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.users) + len(t.sources)
}

func (t *Throttle) get(m map[string]*state, key string, now time.Time, window time.Duration) *state {
	if s := m[key]; s != nil {
		return s
	}
	if len(m) >= t.cfg.MaxEntries {
		t.prune(m, now, window)
	}
	s := &state{}
	m[key] = s
	return s
}

// prune drops keys that no longer restrict anything; if all still do, it
// drops an arbitrary one to bound memory. Reserve never gets here with a
// full table (room refuses the newcomer instead: a flood of names must not
// flush a victim's history), only Failure called outside a reservation.
func (t *Throttle) prune(m map[string]*state, now time.Time, window time.Duration) {
	t.pruneIdle(m, now, window)
	if len(m) < t.cfg.MaxEntries {
		return
	}
	for k, s := range m {
		if s.inflight == 0 {
			delete(m, k)
			return
		}
	}
}

func (s *state) fail(now time.Time, limit int, window time.Duration) {
	s.expire(now, window)
	s.fails = append(s.fails, now)
	if len(s.fails) > limit {
		s.fails = s.fails[len(s.fails)-limit:]
	}
	s.consecutive++
	s.last = now
}

func (s *state) expire(now time.Time, window time.Duration) {
	i := 0
	for i < len(s.fails) && now.Sub(s.fails[i]) >= window {
		i++
	}
	s.fails = s.fails[i:]
}

// wait is how long this key must still wait.
func (s *state) wait(now time.Time, limit int, window time.Duration, cfg Config) time.Duration {
	s.expire(now, window)
	var w time.Duration
	if len(s.fails) >= limit {
		w = s.fails[0].Add(window).Sub(now)
	}
	if s.consecutive >= 2 {
		delay := cfg.BaseDelay
		for i := 2; i < s.consecutive && delay < cfg.MaxDelay; i++ {
			delay *= 2
		}
		delay = min(delay, cfg.MaxDelay)
		if until := s.last.Add(delay).Sub(now); until > w {
			w = until
		}
	}
	return max(w, 0)
}

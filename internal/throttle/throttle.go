// Package throttle limits authentication failures, so that nobody can lock
// a researcher's AD account out through frontdoor, nobody can keep a
// researcher off password logins by failing on purpose from an address of
// their own, and password guessing gets slow quickly.
//
// A failure counts against three keys, each with its own limit:
//
//   - the pair (account, source): at most UserSourceFailures failures
//     within UserWindow, then that account's password logins from that
//     source are refused until the oldest failure leaves the window, with
//     an exponential backoff (BaseDelay, 2×BaseDelay, ... up to MaxDelay)
//     after two consecutive failures;
//   - the account, every source together: at most UserFailures failures
//     within UserWindow. Reaching it escalates: the account's password
//     logins are refused from every source until the oldest failure leaves
//     the window;
//   - the source, every account together: at most SourceFailures within
//     SourceWindow, with the same backoff.
//
// So a stranger failing from one address spends at most UserSourceFailures
// of the account's UserFailures, and the owner logging in from another
// address still reaches the directory (and a success forgets the account's
// failures, as AD resets badPwdCount). Only failures from at least
// ⌈UserFailures / UserSourceFailures⌉ sources (2 with the defaults 3 and
// 2) escalate to the account. The account limit carries no backoff: it
// would make the owner wait for a stranger's failures.
//
// AD locks an account after "lockout threshold" bad passwords within its
// observation window ("reset account lockout counter after") and resets the
// count on a successful logon. With UserFailures below the threshold and
// UserWindow at least the observation window, frontdoor alone can never
// trigger a lockout. Each gateway counts on its own (escalations are
// shared as cluster bans when they happen): with G gateways set
// UserFailures to at most (threshold-1)/G. A larger UserFailures with the
// same UserSourceFailures makes escalation need more sources: with AD's
// threshold at 10 and one gateway, user_failures 9 and
// user_source_failures 3 need failures from three sources.
//
// Checking and recording apart would let N parallel guesses all pass the
// check before the first failure is recorded: one burst of connections
// would reach AD N times and lock the account. So a password attempt first
// Reserves its place: at most MaxInFlightPerUser (1) verification per
// account and MaxInFlightPerSource per source run at once (later ones wait
// their turn), and attempts in flight count as failures when the allowance
// is checked. The reservation then ends as a Fail, a Success or a Release
// (an attempt the directory never judged: it counts nowhere).
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
	// UserFailures is the number of failures of one account, from every
	// source together, allowed within UserWindow; reaching it refuses the
	// account's password logins from every source. Keep it below AD's
	// lockout threshold, divided by the number of gateways.
	UserFailures int `yaml:"user_failures"`
	// UserSourceFailures is the number of failures of one account from one
	// source allowed within UserWindow, at most UserFailures; reaching it
	// refuses that account's password logins from that source only. Below
	// UserFailures, one source alone never escalates to the account, so a
	// stranger cannot lock its owner out.
	UserSourceFailures int `yaml:"user_source_failures"`
	// UserWindow is the window of UserFailures and UserSourceFailures: at
	// least AD's lockout observation window.
	UserWindow time.Duration `yaml:"user_window"`
	// SourceFailures is the number of failures per source address, every
	// account together, allowed within SourceWindow.
	SourceFailures int `yaml:"source_failures"`
	// SourceWindow is the per-source window.
	SourceWindow time.Duration `yaml:"source_window"`
	// BaseDelay is the wait after the second consecutive failure of one
	// (account, source) pair or one source; each further failure doubles
	// it, up to MaxDelay.
	BaseDelay time.Duration `yaml:"base_delay"`
	// MaxDelay caps the backoff; at least BaseDelay.
	MaxDelay time.Duration `yaml:"max_delay"`
	// MaxEntries bounds the number of tracked keys of each kind (accounts,
	// pairs, sources); the oldest are forgotten first.
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
// account in 30 minutes, 2 of them from any one source.
func DefaultConfig() Config {
	return Config{
		UserFailures:         3,
		UserSourceFailures:   2,
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
	}{{"user_failures", c.UserFailures}, {"user_source_failures", c.UserSourceFailures}, {"source_failures", c.SourceFailures},
		{"max_entries", c.MaxEntries}, {"max_in_flight_per_user", c.MaxInFlightPerUser}, {"max_in_flight_per_source", c.MaxInFlightPerSource}} {
		if n.v < 1 {
			errs = append(errs, fmt.Errorf("throttle.%s: must be at least 1", n.key))
		}
	}
	if c.UserSourceFailures > c.UserFailures {
		errs = append(errs, fmt.Errorf("throttle.user_source_failures: must be at most user_failures (%d): the account would escalate first", c.UserFailures))
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

// The three kinds of key a failure counts against.
const (
	account = iota // the account, every source together
	pair           // the account from one source
	source         // the source, every account together
	kinds
)

// limit is what one kind of key may do.
type limit struct {
	failures    int // within window
	window      time.Duration
	maxInFlight int  // 0: bounded by failures only
	backoff     bool // consecutive failures delay the next attempt
}

// Throttle tracks failures. It is safe for concurrent use.
type Throttle struct {
	now func() time.Time // cfg.Now at New: SetLimits keeps it
	cfg Config
	lim [kinds]limit

	// mu protects the following.
	mu     sync.Mutex
	tables [kinds]map[string]*state
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
	t := &Throttle{now: cfg.Now, cfg: cfg, wake: make(chan struct{})}
	t.setLimits()
	for k := range t.tables {
		t.tables[k] = map[string]*state{}
	}
	return t
}

// setLimits derives each kind's limit from cfg.
func (t *Throttle) setLimits() {
	cfg := t.cfg
	t.lim[account] = limit{failures: cfg.UserFailures, window: cfg.UserWindow, maxInFlight: cfg.MaxInFlightPerUser}
	t.lim[pair] = limit{failures: cfg.UserSourceFailures, window: cfg.UserWindow, backoff: true}
	t.lim[source] = limit{failures: cfg.SourceFailures, window: cfg.SourceWindow, maxInFlight: cfg.MaxInFlightPerSource, backoff: true}
}

// keys are the keys of an attempt by user from src, by kind; "" where a
// kind does not apply (no user, no source).
func keys(user, src string) [kinds]string {
	var k [kinds]string
	k[account], k[source] = user, src
	if user != "" && src != "" {
		k[pair] = PairKey(user, src)
	}
	return k
}

// PairKey names the (account, source) pair, e.g. in cluster bans:
// "alice|192.0.2.1". A source key never holds '|'.
func PairKey(user, src string) string { return user + "|" + src }

// Waits says how long an attempt must wait by each kind of key.
type Waits struct {
	// Account is the escalation: every source waits.
	Account time.Duration
	// Pair is this account from this source.
	Pair time.Duration
	// Source is this source, whichever account.
	Source time.Duration
}

// Max is the longest of the waits.
func (w Waits) Max() time.Duration { return max(w.Account, w.Pair, w.Source) }

// Check reports whether an attempt by user from src may proceed now. When
// not, retryAfter says how long until it may. An empty user or src is not
// checked (e.g. before the user name is known).
func (t *Throttle) Check(user, src string) (retryAfter time.Duration, ok bool) {
	wait := t.Waits(user, src).Max()
	return wait, wait == 0
}

// Waits reports how long an attempt by user from src must wait, by kind.
func (t *Throttle) Waits(user, src string) Waits {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waitsLocked(keys(user, src), now)
}

// waitsLocked is how long an attempt must wait by the failures recorded
// for its keys. t.mu held.
func (t *Throttle) waitsLocked(k [kinds]string, now time.Time) Waits {
	var w [kinds]time.Duration
	for kind, key := range k {
		if s := t.tables[kind][key]; key != "" && s != nil {
			w[kind] = s.wait(now, t.lim[kind], t.cfg)
		}
	}
	return Waits{Account: w[account], Pair: w[pair], Source: w[source]}
}

// ErrThrottled is returned by Reserve when the allowance is used up.
var ErrThrottled = errors.New("throttled")

// Reservation is one password attempt's place, from Reserve until it ends
// with exactly one of Fail, Success or Release (later calls are ignored).
type Reservation struct {
	t    *Throttle
	keys [kinds]string
	done bool
}

// Reserve takes a place for one password attempt by user from src. While
// MaxInFlightPerUser attempts for user, or MaxInFlightPerSource from src,
// are being verified, or so many that their failing would use up an
// allowance, it waits for one to end (or for ctx). Then it checks the
// allowances, counting attempts in flight as failures: if one is used up,
// Reserve returns ErrThrottled and how long until an attempt may proceed.
// An empty user or src is not limited.
func (t *Throttle) Reserve(ctx context.Context, user, src string) (*Reservation, time.Duration, error) {
	k := keys(user, src)
	for {
		now := t.now()
		t.mu.Lock()
		busy := false
		for kind, key := range k {
			busy = busy || key != "" && t.busy(t.tables[kind][key], now, t.lim[kind])
		}
		if !busy {
			if wait := t.waitsLocked(k, now).Max(); wait > 0 {
				t.mu.Unlock()
				return nil, wait, ErrThrottled
			}
			for kind, key := range k {
				if !t.room(kind, key, now) {
					t.mu.Unlock()
					return nil, t.cfg.MaxDelay, ErrThrottled
				}
			}
			for kind, key := range k {
				if key != "" {
					t.get(kind, key, now).inflight++
				}
			}
			t.mu.Unlock()
			return &Reservation{t: t, keys: k}, 0, nil
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
func (t *Throttle) room(kind int, key string, now time.Time) bool {
	m := t.tables[kind]
	if key == "" || m[key] != nil || len(m) < t.cfg.MaxEntries {
		return true
	}
	t.pruneIdle(kind, now)
	return len(m) < t.cfg.MaxEntries
}

// pruneIdle drops keys that no longer restrict anything. t.mu held.
func (t *Throttle) pruneIdle(kind int, now time.Time) {
	for k, s := range t.tables[kind] {
		if s.inflight == 0 && now.Sub(s.last) >= max(t.lim[kind].window, t.cfg.MaxDelay) {
			delete(t.tables[kind], k)
		}
	}
}

// busy reports whether a key has as many attempts in flight as it may, or
// so many that, were they all to fail, the allowance would be used up: the
// next attempt must wait for one to end. t.mu held.
func (t *Throttle) busy(s *state, now time.Time, l limit) bool {
	if s == nil || s.inflight == 0 {
		return false
	}
	s.expire(now, l.window)
	return l.maxInFlight > 0 && s.inflight >= l.maxInFlight || len(s.fails)+s.inflight >= l.failures
}

// Fail ends the attempt as a failure: a wrong password, an unknown user,
// or an answer that may have come after the password reached the
// directory.
func (r *Reservation) Fail() {
	r.end(func(now time.Time) { r.t.failureLocked(r.keys, now) })
}

// Success ends the attempt as a successful login (see Throttle.Success).
func (r *Reservation) Success() {
	r.end(func(time.Time) { r.t.successLocked(r.keys) })
}

// Release ends the attempt without an outcome: it never reached the
// directory, or the directory never judged the password (no domain
// controller to ask). It counts against nothing: an answer the directory
// never gave is not a failed password.
func (r *Reservation) Release() { r.end(func(time.Time) {}) }

func (r *Reservation) end(outcome func(now time.Time)) {
	if r == nil || r.done {
		return
	}
	r.done = true
	t := r.t
	now := t.now()
	t.mu.Lock()
	for kind, key := range r.keys {
		if s := t.tables[kind][key]; key != "" && s != nil {
			s.inflight = max(s.inflight-1, 0)
		}
	}
	outcome(now)
	for kind, key := range r.keys { // nothing to remember: forget the key
		if s := t.tables[kind][key]; s != nil && s.inflight == 0 && len(s.fails) == 0 && s.consecutive == 0 {
			delete(t.tables[kind], key)
		}
	}
	close(t.wake)
	t.wake = make(chan struct{})
	t.mu.Unlock()
}

// Failure records a failed attempt (wrong password, unknown user).
func (t *Throttle) Failure(user, src string) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failureLocked(keys(user, src), now)
}

func (t *Throttle) failureLocked(k [kinds]string, now time.Time) {
	for kind, key := range k {
		if key != "" {
			t.get(kind, key, now).fail(now, t.lim[kind])
		}
	}
}

// Success records a successful login: the account's failures are forgotten
// (as AD resets badPwdCount), and so is the pair's; the source's backoff
// restarts but its window count stays, so one valid account cannot launder
// guesses against others.
func (t *Throttle) Success(user, src string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.successLocked(keys(user, src))
}

func (t *Throttle) successLocked(k [kinds]string) {
	for _, kind := range []int{account, pair} {
		m := t.tables[kind]
		if s := m[k[kind]]; s != nil && s.inflight > 0 {
			// Another attempt is still in flight: keep its count.
			s.fails, s.consecutive = nil, 0
		} else {
			delete(m, k[kind])
		}
	}
	if s := t.tables[source][k[source]]; s != nil {
		s.consecutive = 0
	}
}

// Len is the number of tracked keys (accounts + pairs + sources), for
// metrics.
func (t *Throttle) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, m := range t.tables {
		n += len(m)
	}
	return n
}

func (t *Throttle) get(kind int, key string, now time.Time) *state {
	m := t.tables[kind]
	if s := m[key]; s != nil {
		return s
	}
	if len(m) >= t.cfg.MaxEntries {
		t.prune(kind, now)
	}
	s := &state{}
	m[key] = s
	return s
}

// prune drops keys that no longer restrict anything; if all still do, it
// drops an arbitrary one to bound memory. Reserve never gets here with a
// full table (room refuses the newcomer instead: a flood of names must not
// flush a victim's history), only Failure called outside a reservation.
func (t *Throttle) prune(kind int, now time.Time) {
	t.pruneIdle(kind, now)
	m := t.tables[kind]
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

func (s *state) fail(now time.Time, l limit) {
	s.expire(now, l.window)
	s.fails = append(s.fails, now)
	if len(s.fails) > l.failures {
		s.fails = s.fails[len(s.fails)-l.failures:]
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
func (s *state) wait(now time.Time, l limit, cfg Config) time.Duration {
	s.expire(now, l.window)
	var w time.Duration
	if len(s.fails) >= l.failures {
		w = s.fails[0].Add(l.window).Sub(now)
	}
	if l.backoff && s.consecutive >= 2 {
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

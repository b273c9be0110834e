package soak

import (
	"slices"
	"sync"
	"time"
)

// What the load saw, as it happened: every login, every held session that
// ended, every checksummed transfer. Faults and the report read windows of
// it afterwards; nothing is summarised while the load runs.

// Login kinds.
const (
	// KindChurn is a login of the stream of new logins: log in, run one
	// command, log out.
	KindChurn = "churn"
	// KindHold is a held session's login (its first, or a reconnect).
	KindHold = "hold"
	// KindProbe is a login a fault makes to look at something (a banner,
	// a ban).
	KindProbe = "probe"
)

// Login is one login attempt.
type Login struct {
	Start time.Time
	// Took is from the first TCP connect to the command's first output
	// (a churn login) or to the session's shell or command answering
	// (a held session).
	Took    time.Duration
	Kind    string
	Gateway string // the gateway that answered (after a failover, the second)
	User    string
	Method  string // publickey | password
	Session string // held sessions: the session kind (idle, stream, forward)
	Node    string // where it landed
	OK      bool
	// Stage is where a failed login failed: connect, auth, session, output.
	Stage string
	Err   string
	// Banner is what the gateway said before authentication ended (a
	// refusal's reason).
	Banner string
	// FailedOver: the first gateway did not answer the TCP connect and
	// the client went to the next, as ssh does with a name that has
	// several addresses.
	FailedOver bool
	// Reconnect: a held session's login after its previous one ended.
	Reconnect bool
	// PrevNode is where the previous session of a reconnect was.
	PrevNode string
}

// SessionEnd is a held session that ended while the load still wanted it.
type SessionEnd struct {
	At      time.Time
	Kind    string // idle | stream | forward
	Gateway string
	Node    string
	User    string
	Lived   time.Duration
	Err     string
}

// Transfer is one checksummed round trip of a streaming or forwarding
// session.
type Transfer struct {
	At    time.Time
	Kind  string // stream | forward
	Bytes int
	// Corrupt: the bytes came back complete and different. A transfer cut
	// off by its session's end is not corrupt, it is lost (Err).
	Corrupt bool
	Err     string
}

// Recorder keeps the load's events. Safe for concurrent use.
type Recorder struct {
	mu        sync.Mutex // mu protects the following
	logins    []Login
	ends      []SessionEnd
	transfers []Transfer
}

func (r *Recorder) login(l Login) {
	r.mu.Lock()
	r.logins = append(r.logins, l)
	r.mu.Unlock()
}

func (r *Recorder) end(e SessionEnd) {
	r.mu.Lock()
	r.ends = append(r.ends, e)
	r.mu.Unlock()
}

func (r *Recorder) transfer(t Transfer) {
	r.mu.Lock()
	r.transfers = append(r.transfers, t)
	r.mu.Unlock()
}

// Logins returns the logins that started in [from, to) and match keep
// (nil: all).
func (r *Recorder) Logins(from, to time.Time, keep func(Login) bool) []Login {
	r.mu.Lock()
	defer r.mu.Unlock()
	return within(r.logins, from, to, func(l Login) time.Time { return l.Start }, keep)
}

// Ends returns the session ends in [from, to).
func (r *Recorder) Ends(from, to time.Time) []SessionEnd {
	r.mu.Lock()
	defer r.mu.Unlock()
	return within(r.ends, from, to, func(e SessionEnd) time.Time { return e.At }, nil)
}

// Transfers returns the transfers in [from, to).
func (r *Recorder) Transfers(from, to time.Time) []Transfer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return within(r.transfers, from, to, func(t Transfer) time.Time { return t.At }, nil)
}

// within is the items whose time is in [from, to) and that keep accepts
// (nil: all), as a new slice.
func within[T any](items []T, from, to time.Time, at func(T) time.Time, keep func(T) bool) []T {
	var out []T
	for _, it := range items {
		if t := at(it); !t.Before(from) && t.Before(to) && (keep == nil || keep(it)) {
			out = append(out, it)
		}
	}
	return out
}

// isChurn selects the stream of new logins.
func isChurn(l Login) bool { return l.Kind == KindChurn }

// failed counts the logins that failed.
func failed(ls []Login) int {
	n := 0
	for _, l := range ls {
		if !l.OK {
			n++
		}
	}
	return n
}

// latencies are the successful logins' durations in seconds.
func latencies(ls []Login) []float64 {
	var v []float64
	for _, l := range ls {
		if l.OK {
			v = append(v, l.Took.Seconds())
		}
	}
	return v
}

// percentile is the nearest-rank percentile of v (0 for none).
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s)-1)*p/100 + 0.5)
	return s[i]
}

package cluster

import (
	"encoding/json"
	"strings"
	"time"
)

// The gossiped state is a map of keys to versioned entries. Each key has one
// kind, spelled by its prefix:
//
//	h/NODE              node health             owner: the node's agent
//	s/GATEWAY/NODE/USER live session count      owner: the gateway
//	r/GATEWAY/NODE      logins routed recently  owner: the gateway
//	a/USER              user→node affinity      shared
//	d/NODE              admin drain             shared
//	b/KEY               failed-login ban        shared
//	l/USER              account lock            shared (lock.go)
//	m/USER              second-factor unlocks   shared (mfa.go)
//
// Who may write at all is decided before these rules (trust.go): health
// must be signed by the node's host key, and everything else is gateway
// state, sealed among the gateways.
//
// Merge rule: last writer wins per key, comparing (Ver, Origin). Ver is a
// hybrid clock — max(last seen + 1, wall clock in ns) — so a restarted
// member's fresh writes beat its old ones still circulating, and Origin
// breaks exact ties the same way everywhere. Deletions are tombstones kept
// for TombstoneTTL.
//
// The hybrid clock absorbs the versions of gateway state only: health
// versions are on each node's own clock, ordered against nothing but that
// node's earlier health, and a node whose clock is ahead must not carry a
// gateway's writes ahead with it. When this member's wall clock steps back
// (NTP correcting a clock that ran ahead), the hybrid clock would keep its
// writes ahead by the step, and every peer would refuse them as
// version_ahead for as long: rebase then restarts the clock from the wall
// clock and re-stamps the entries beyond MaxClockSkew, which no peer could
// have taken anyway.
//
// Owned keys are written only by their owner. When a member sees a copy of
// one of its own keys that is newer than what it holds (a ghost from before
// it restarted), it does not take it but re-asserts its own value, or a
// tombstone, with a higher version. That is how a restarted gateway clears
// the sessions it lost with its process, while shared keys (affinity,
// drains, bans) come back from peers intact.

const (
	kindHealth   = "h"
	kindSession  = "s"
	kindRouted   = "r"
	kindAffinity = "a"
	kindDrain    = "d"
	kindBan      = "b"
	kindLock     = "l"
	kindMFA      = "m"
)

// entry is one versioned key. Val is the JSON of the kind's value type.
type entry struct {
	Key    string          `json:"k"`
	Ver    uint64          `json:"v"`
	Origin string          `json:"o"`
	Del    bool            `json:"d,omitempty"`
	Val    json.RawMessage `json:"x,omitempty"`
	// PK and Sig sign health entries: the node's SSH host key (wire
	// format) and its signature over signedBytes (see trust.go).
	PK  []byte `json:"pk,omitempty"`
	Sig []byte `json:"sg,omitempty"`

	// recv is when this member took this version, by its own clock: health
	// freshness and tombstone expiry are judged with it.
	recv time.Time
	// dec caches the decoded Val (see decode); entries are replaced, never
	// changed, so the cache cannot go stale.
	dec any
}

// decode returns Val decoded into a new T, cached. The caller holds the
// lock guarding the store.
func decode[T any](e *entry) (T, bool) {
	if v, ok := e.dec.(T); ok {
		return v, true
	}
	var v T
	if e.Del || json.Unmarshal(e.Val, &v) != nil {
		return v, false
	}
	e.dec = v
	return v, true
}

// newer reports whether a wins over b under last-writer-wins.
func (a *entry) newer(b *entry) bool {
	if a.Ver != b.Ver {
		return a.Ver > b.Ver
	}
	return a.Origin > b.Origin
}

// owner returns the member that owns key, or "" for shared keys.
func owner(key string) string {
	kind, rest, _ := strings.Cut(key, "/")
	switch kind {
	case kindHealth:
		return rest
	case kindSession, kindRouted:
		gw, _, _ := strings.Cut(rest, "/")
		return gw
	}
	return ""
}

// isHealth reports whether key is a node's health.
func isHealth(key string) bool {
	return strings.HasPrefix(key, kindHealth+"/")
}

// splitSessionKey splits "s/GATEWAY/NODE/USER".
func splitSessionKey(k string) (gw, node, user string, ok bool) {
	parts := strings.SplitN(k, "/", 4)
	if len(parts) != 4 {
		return "", "", "", false
	}
	return parts[1], parts[2], parts[3], true
}

// Values of each kind.

// sessionVal is the number of live sessions of USER on NODE via GATEWAY.
type sessionVal struct {
	N int `json:"n"`
}

// routedVal lists when a gateway sent logins to a node during the last
// RoutedWindow: Unix ms Base plus each offset in D, oldest first, at most
// maxRouted of them so the entry stays small.
type routedVal struct {
	Base int64   `json:"b"`
	D    []int64 `json:"d"`
}

const maxRouted = 48

// affinityVal records the node of the user's last session start or end.
type affinityVal struct {
	Node string    `json:"n"`
	Seen time.Time `json:"t"`
}

// drainVal is an admin drain, which lapses at Until (zero: never, for
// drains written before drains expired). A maintenance drain also has a
// Deadline, when the node's sessions are closed, and a Message for their
// users (drain.go).
type drainVal struct {
	Draining bool      `json:"d"`
	By       string    `json:"by,omitempty"`
	Until    time.Time `json:"u,omitzero"`
	Deadline time.Time `json:"dl,omitzero"`
	Message  string    `json:"m,omitempty"`
}

// banVal bans a key (a user or a source address, the caller decides)
// until Until.
type banVal struct {
	Until  time.Time `json:"u"`
	Reason string    `json:"r,omitempty"`
}

// lockVal is an account lock or unlock (lock.go).
type lockVal struct {
	Locked bool `json:"l"`
	// Reason is the admins' record (audit, status); Message is what the
	// user is told, if anything besides "locked".
	Reason  string    `json:"r,omitempty"`
	Message string    `json:"m,omitempty"`
	By      string    `json:"by,omitempty"`
	At      time.Time `json:"t"`
	// Until ends a lock (zero: until unlocked).
	Until time.Time `json:"u,omitzero"`
	// End asks every gateway to close the user's sessions.
	End bool `json:"e,omitempty"`
}

// mfaVal is the value of m/USER: second-factor unlocks by key
// fingerprint (mfa.go).
type mfaVal struct {
	Keys map[string]unlockVal `json:"k"`
}

type unlockVal struct {
	At    time.Time `json:"a"`
	Until time.Time `json:"u"`
	Rule  string    `json:"r"`
}

// store holds the entries. It is not safe for concurrent use; Cluster
// guards it with its mutex. Keeping it free of locks and I/O lets the merge
// rules be table-tested directly.
type store struct {
	self    string
	cfg     Config // TTLs
	clock   uint64
	entries map[string]*entry
	// sign, if set, signs this member's own writes before they are stored
	// (agents sign their health).
	sign func(*entry)
	// Indexes over entries so reads on the login path touch only what
	// they need: live (non-tombstone) entries by kind, and session keys by
	// user.
	byKind   map[string]map[string]*entry
	userSess map[string]map[string]*entry
}

func newStore(self string, cfg Config) *store {
	return &store{self: self, cfg: cfg, entries: make(map[string]*entry),
		byKind: make(map[string]map[string]*entry), userSess: make(map[string]map[string]*entry)}
}

// set stores e under its key and keeps the indexes.
func (s *store) set(e *entry) {
	s.unindex(e.Key)
	s.entries[e.Key] = e
	if e.Del {
		return
	}
	kind, _, _ := strings.Cut(e.Key, "/")
	if s.byKind[kind] == nil {
		s.byKind[kind] = make(map[string]*entry)
	}
	s.byKind[kind][e.Key] = e
	if kind == kindSession {
		if _, _, user, ok := splitSessionKey(e.Key); ok {
			if s.userSess[user] == nil {
				s.userSess[user] = make(map[string]*entry)
			}
			s.userSess[user][e.Key] = e
		}
	}
}

// remove forgets key entirely.
func (s *store) remove(key string) {
	s.unindex(key)
	delete(s.entries, key)
}

func (s *store) unindex(key string) {
	kind, _, _ := strings.Cut(key, "/")
	delete(s.byKind[kind], key)
	if kind == kindSession {
		if _, _, user, ok := splitSessionKey(key); ok {
			delete(s.userSess[user], key)
			if len(s.userSess[user]) == 0 {
				delete(s.userSess, user)
			}
		}
	}
}

// live returns the live entry at key, or nil.
func (s *store) live(key string) *entry {
	if e := s.entries[key]; e != nil && !e.Del {
		return e
	}
	return nil
}

// tick returns a version for a local write at now.
func (s *store) tick(now time.Time) uint64 {
	s.clock = max(s.clock+1, uint64(now.UnixNano()))
	return s.clock
}

// put writes a local value (or a tombstone if val is nil) and returns the
// entry to broadcast.
func (s *store) put(key string, val any, now time.Time) (entry, error) {
	e := entry{Key: key, Origin: s.self, recv: now}
	if val == nil {
		e.Del = true
	} else {
		b, err := json.Marshal(val)
		if err != nil {
			return entry{}, err
		}
		e.Val = b
	}
	e.Ver = s.tick(now)
	if s.sign != nil {
		s.sign(&e)
	}
	s.set(&e)
	return e, nil
}

// rebase restarts the hybrid clock from the wall clock when it is more
// than MaxClockSkew ahead of now (this member's wall clock stepped back),
// and re-stamps what it holds beyond that: its own and shared entries are
// written again under a version of now (returned, to broadcast), other
// members' owned entries are dropped (their owners re-assert them).
// Health is left alone: it is on the nodes' clocks (see above). ahead is
// how far the clock was ahead; zero when nothing was done.
func (s *store) rebase(now time.Time) (restamped []entry, ahead time.Duration) {
	limit := uint64(now.Add(s.cfg.MaxClockSkew).UnixNano())
	if s.clock <= limit {
		return nil, 0
	}
	ahead = time.Duration(s.clock - uint64(now.UnixNano()))
	s.clock = uint64(now.UnixNano())
	for k, e := range s.entries {
		if e.Ver <= limit || isHealth(k) {
			continue
		}
		if o := owner(k); o != "" && o != s.self {
			s.remove(k)
			continue
		}
		out := entry{Key: k, Origin: s.self, Del: e.Del, Val: e.Val, recv: now}
		out.Ver = s.tick(now)
		s.set(&out)
		restamped = append(restamped, out)
	}
	return restamped, ahead
}

// merge applies a remote entry. It reports whether local state changed and
// returns entries this member must broadcast in answer (re-asserted owned
// keys).
func (s *store) merge(in entry, now time.Time) (changed bool, answer []entry) {
	in.recv = now
	if in.Key == "" || (!in.Del && expired(&in, now, s.cfg)) {
		return false, nil
	}
	if !isHealth(in.Key) || owner(in.Key) == s.self {
		s.clock = max(s.clock, in.Ver)
	}
	cur := s.entries[in.Key]
	if cur != nil && !in.newer(cur) {
		return false, nil
	}
	if owner(in.Key) == s.self {
		// A newer copy of a key only we write: a ghost of a previous run.
		// Re-assert what we hold now, above its version.
		out := entry{Key: in.Key, Origin: s.self, Del: true, recv: now}
		if cur != nil && !cur.Del {
			out.Val = cur.Val
			out.Del = false
		}
		out.Ver = s.tick(now)
		if s.sign != nil {
			s.sign(&out)
		}
		s.set(&out)
		return false, []entry{out}
	}
	s.set(&in)
	return true, nil
}

// gc drops tombstones older than TombstoneTTL, values that have expired by
// their own meaning, and sessions and routing counts of gateways gone for
// TombstoneTTL (nobody else may delete them). Every member applies the same
// rules, so a dropped entry is dropped everywhere.
func (s *store) gc(now time.Time, alive func(member string) bool) {
	cfg := s.cfg
	for k, e := range s.entries {
		if o := owner(k); o != "" && o != s.self && !alive(o) && now.Sub(e.recv) > cfg.TombstoneTTL {
			s.remove(k)
			continue
		}
		if e.Del {
			if now.Sub(e.recv) > cfg.TombstoneTTL {
				s.remove(k)
			}
			continue
		}
		if expired(e, now, cfg) {
			s.remove(k)
		}
	}
}

// snapshot returns copies of all entries, tombstones included, for push/pull.
func (s *store) snapshot() []entry {
	out := make([]entry, 0, len(s.entries))
	for _, e := range s.entries {
		cp := *e
		cp.dec = nil
		out = append(out, cp)
	}
	return out
}

// expired reports whether a live entry is past its use: an old copy
// arriving later is refused by merge for the same reason.
func expired(e *entry, now time.Time, cfg Config) bool {
	kind, _, _ := strings.Cut(e.Key, "/")
	switch kind {
	case kindAffinity:
		v, ok := decode[affinityVal](e)
		return !ok || now.Sub(v.Seen) > cfg.AffinityTTL
	case kindBan:
		v, ok := decode[banVal](e)
		return !ok || now.After(v.Until)
	case kindMFA:
		return mfaExpired(e, now)
	case kindDrain:
		v, ok := decode[drainVal](e)
		return !ok || (!v.Until.IsZero() && now.After(v.Until))
	case kindHealth:
		return now.Sub(e.recv) > cfg.NodeTTL
	case kindLock:
		return lockExpired(e, now)
	}
	return false
}

// unlockKeep is how long an unlock is remembered: a gateway that comes
// back after longer with a lock in its file brings it back (lock.go).
const unlockKeep = 90 * 24 * time.Hour

// lockExpired reports whether a lock entry is past its use: a lock after
// Until, an unlock after unlockKeep.
func lockExpired(e *entry, now time.Time) bool {
	v, ok := decode[lockVal](e)
	switch {
	case !ok:
		return true
	case v.Locked:
		return !v.Until.IsZero() && !now.Before(v.Until)
	}
	return now.Sub(v.At) > unlockKeep
}

// mfaExpired reports an entry whose every unlock has ended.
func mfaExpired(e *entry, now time.Time) bool {
	v, ok := decode[mfaVal](e)
	if !ok {
		return true
	}
	for _, u := range v.Keys {
		if now.Before(u.Until) {
			return false
		}
	}
	return true
}

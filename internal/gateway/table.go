package gateway

import (
	"sort"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/proxy"
)

// The session table: every relayed session of this gateway, and the logins
// that hold a session slot while they are being set up. Per-user session
// caps are counted here (plus what the other gateways report), so two
// logins racing for the last slot cannot both get it.

// Session is one authenticated, relayed connection.
type Session struct {
	ID      string    `json:"id"`
	User    string    `json:"user"`
	Node    string    `json:"node"`
	Src     string    `json:"src"`
	Method  string    `json:"method"`
	Started time.Time `json:"started"`

	stats *proxy.Stats
	close func()       // ends the connection at once
	relay *proxy.Relay // notices, and a close that says why (drain.go)
}

// SessionInfo is a snapshot of a session for the admin API.
type SessionInfo struct {
	Session
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	Channels  int64 `json:"channels"`
}

// sessionTable holds the live sessions and the slots being set up. Safe
// for concurrent use.
type sessionTable struct {
	// elsewhere counts a user's live sessions through the other gateways
	// (nil: there are none).
	elsewhere func(user string) int

	mu        sync.Mutex // mu protects the following
	sessions  map[string]*Session
	settingUp map[string]int // user → logins holding a slot, not yet relayed
	closed    bool
}

func newSessionTable(elsewhere func(user string) int) *sessionTable {
	return &sessionTable{elsewhere: elsewhere, sessions: map[string]*Session{}, settingUp: map[string]int{}}
}

// reserve takes one of user's session slots under a cap of max (0: no
// cap). Sessions being set up count like live ones. The returned func
// releases the slot (once; later calls are ignored); a session that starts
// hands its slot over to the live count (add).
func (t *sessionTable) reserve(user string, max int) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if max > 0 && t.userSessionsLocked(user) >= max {
		return nil, false
	}
	t.settingUp[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.settingUp[user]--; t.settingUp[user] <= 0 {
				delete(t.settingUp, user)
			}
		})
	}, true
}

// userSessions counts user's sessions: live and being set up through this
// gateway, live through the other gateways.
func (t *sessionTable) userSessions(user string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.userSessionsLocked(user)
}

func (t *sessionTable) userSessionsLocked(user string) int {
	n := t.settingUp[user]
	if t.elsewhere != nil {
		n += t.elsewhere(user)
	}
	for _, s := range t.sessions {
		if s.User == user {
			n++
		}
	}
	return n
}

// add enters a live session; false once the table is closed.
func (t *sessionTable) add(s *Session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.sessions[s.ID] = s
	return true
}

func (t *sessionTable) remove(id string) {
	t.mu.Lock()
	delete(t.sessions, id)
	t.mu.Unlock()
}

// closeAll closes every live session and refuses new ones.
func (t *sessionTable) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for _, s := range t.sessions {
		s.close()
	}
}

// list snapshots the live sessions, oldest first.
func (t *sessionTable) list() []SessionInfo {
	t.mu.Lock()
	out := make([]SessionInfo, 0, len(t.sessions))
	for _, s := range t.sessions {
		out = append(out, SessionInfo{Session: *s, BytesUp: s.stats.BytesUp.Load(),
			BytesDown: s.stats.BytesDown.Load(), Channels: s.stats.Channels.Load()})
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// all snapshots the live sessions themselves.
func (t *sessionTable) all() []*Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Session, 0, len(t.sessions))
	for _, s := range t.sessions {
		out = append(out, s)
	}
	return out
}

// perNode counts the live sessions on each node.
func (t *sessionTable) perNode() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	here := map[string]int{}
	for _, s := range t.sessions {
		here[s.Node]++
	}
	return here
}

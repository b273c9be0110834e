package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// Account locks (`frontdoor lock`, `unlock`, `locks`): POST /v1/lock and
// /v1/unlock change who may log in on every gateway, GET /v1/locks lists
// the locks with the admins' reasons. All three are for full admins only:
// none is in readOnlyRoutes (access.go). The status (GET /v1/status)
// lists the locks without reason and message.

// Lock is an account lock in force (GET /v1/locks, POST /v1/lock).
type Lock struct {
	// User is the canonical account name the lock holds for.
	User string `json:"user"`
	// Reason is the admins' record, never shown to the user; Message is
	// what the user is told.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// By is the admin who locked, as their credential named them.
	By string    `json:"by"`
	At time.Time `json:"at"`
	// Until is when the lock ends; absent: until unlocked.
	Until       time.Time `json:"until,omitzero"`
	EndSessions bool      `json:"end_sessions,omitempty"`
	// Gateway is the gateway that took the admin's request.
	Gateway string `json:"gateway,omitempty"`
}

// LockRequest is the body of POST /v1/lock. The admin recorded is the
// credential's, never a field of the request.
type LockRequest struct {
	// User is the name as the admin typed it (alice, HPC\alice,
	// alice@realm, alice+login2): the gateway resolves it as a login
	// does.
	User    string `json:"user"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// For (a Go duration, "8h") or Until (RFC 3339) ends the lock; both
	// empty: until unlocked.
	For   string    `json:"for,omitempty"`
	Until time.Time `json:"until,omitzero"`
	// EndSessions closes the user's live sessions on every gateway.
	EndSessions bool `json:"end_sessions,omitempty"`
	// Force locks a name the directory does not know.
	Force bool `json:"force,omitempty"`
}

// UnlockRequest is the body of POST /v1/unlock.
type UnlockRequest struct {
	User string `json:"user"`
}

// Unlocked answers POST /v1/unlock.
type Unlocked struct {
	User string `json:"user"`
	// WasLocked says whether this gateway held a lock in force; the
	// unlock is written either way.
	WasLocked bool   `json:"was_locked"`
	By        string `json:"by"`
}

// LockSource is a Source that keeps account locks: with it the server
// serves the lock routes.
type LockSource interface {
	// Lock locks the account req names; by is the acting admin.
	Lock(ctx context.Context, req LockRequest, by string) (Lock, error)
	// Unlock lifts the lock of the account user names.
	Unlock(ctx context.Context, user, by string) (Unlocked, error)
	// Locks lists the locks in force.
	Locks() []Lock
}

// ErrLockRequest marks a lock request the source refused as invalid (a
// 400, not a 500).
var ErrLockRequest = errors.New("invalid lock request")

func (s *Server) lockRoutes(ls LockSource) {
	s.mux.HandleFunc("GET /v1/locks", func(w http.ResponseWriter, _ *http.Request) {
		out := ls.Locks()
		if out == nil {
			out = []Lock{}
		}
		writeJSON(w, out)
	})
	s.mux.HandleFunc("POST /v1/lock", func(w http.ResponseWriter, r *http.Request) {
		var req LockRequest
		if !decodeBody(w, r, &req, `{"user": NAME, "reason": TEXT, "message": TEXT, "for": DURATION, "end_sessions": BOOL}`) {
			return
		}
		id, _ := IdentityFrom(r.Context())
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		l, err := ls.Lock(ctx, req, id.String())
		what := "lock " + sanitize(req.User)
		if err == nil {
			what = "lock " + l.User + lockSummary(l)
		}
		s.auditLock(r, id, what, err)
		if err != nil {
			lockError(w, err)
			return
		}
		writeJSON(w, l)
	})
	s.mux.HandleFunc("POST /v1/unlock", func(w http.ResponseWriter, r *http.Request) {
		var req UnlockRequest
		if !decodeBody(w, r, &req, `{"user": NAME}`) {
			return
		}
		id, _ := IdentityFrom(r.Context())
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		u, err := ls.Unlock(ctx, req.User, id.String())
		what := "unlock " + sanitize(req.User)
		if err == nil {
			what = "unlock " + u.User
			if !u.WasLocked {
				what += " (no lock in force here)"
			}
		}
		s.auditLock(r, id, what, err)
		if err != nil {
			lockError(w, err)
			return
		}
		writeJSON(w, u)
	})
}

// lockSummary is the audit's words for a lock's terms.
func lockSummary(l Lock) string {
	var parts []string
	if l.Reason != "" {
		parts = append(parts, "reason: "+l.Reason)
	}
	if l.Message != "" {
		parts = append(parts, "message: "+l.Message)
	}
	if !l.Until.IsZero() {
		parts = append(parts, "until "+l.Until.UTC().Format(time.RFC3339))
	}
	if l.EndSessions {
		parts = append(parts, "ending sessions")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// auditLock records a lock or unlock (TypeAdmin: User is the admin).
func (s *Server) auditLock(r *http.Request, id Identity, what string, err error) {
	ev := audit.Event{Type: audit.TypeAdmin, Gateway: s.o.Gateway, User: id.String(), Method: id.Method,
		Src: connSrc(r), Result: audit.ResultOK, Reason: what}
	if err != nil {
		ev.Result, ev.Reason = audit.ResultFail, what+": "+err.Error()
	}
	if s.o.Audit != nil {
		s.o.Audit.Record(ev)
	}
	s.log.Info("admin "+what, "admin", id.String(), "src", ev.Src, "err", err)
}

// decodeBody decodes a small JSON body into v, answering 400 if it is
// not one.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, shape string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		http.Error(w, "want a JSON body "+shape+": "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// lockError answers a refused lock or unlock.
func lockError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrLockRequest):
		status = http.StatusBadRequest
	case errors.Is(err, ErrNoLocks):
		status = http.StatusConflict
	}
	http.Error(w, err.Error(), status)
}

// ErrNoLocks: the gateway keeps no locks (no gossip cluster).
var ErrNoLocks = errors.New("this gateway has no gossip cluster (no cluster section in its config): account locks need one")

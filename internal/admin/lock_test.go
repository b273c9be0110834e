package admin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockingSource is fakeSource with account locks.
type lockingSource struct {
	*fakeSource
	mu    sync.Mutex // mu protects the following
	calls []string   // "lock alice by" / "unlock alice by"
	err   error      // what Lock answers, if set
}

func (l *lockingSource) Lock(_ context.Context, req LockRequest, by string) (Lock, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf("lock %s %s", req.User, by))
	if l.err != nil {
		return Lock{}, l.err
	}
	return Lock{User: strings.ToLower(req.User), Reason: req.Reason, By: by, At: time.Now(), EndSessions: req.EndSessions}, nil
}

func (l *lockingSource) Unlock(_ context.Context, user, by string) (Unlocked, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf("unlock %s %s", user, by))
	return Unlocked{User: user, WasLocked: true, By: by}, nil
}

func (l *lockingSource) Locks() []Lock {
	return []Lock{{User: "alice", Reason: "incident 7", By: "token:ops", At: time.Now()}}
}

func (l *lockingSource) called() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// Locking is for full admins: a read-only token can neither lock, unlock
// nor read the reasons, and never reaches the source; the admin recorded
// is the credential's, whatever the body says.
func TestLockRoutes(t *testing.T) {
	src := &lockingSource{fakeSource: &fakeSource{}}
	ln := startTCP(t, src.fakeSource, func(o *Options) { o.Source = src })
	const json = "application/json"
	lockBody := `{"user": "Alice", "reason": "incident 7", "end_sessions": true}`
	for _, tt := range []struct {
		name   string
		r      req
		status int
		want   string
	}{
		{"read-only lock", req{method: "POST", path: "/v1/lock", token: roSecret, ctype: json, body: lockBody}, 403, "read-only"},
		{"read-only unlock", req{method: "POST", path: "/v1/unlock", token: roSecret, ctype: json, body: `{"user":"alice"}`}, 403, "read-only"},
		{"read-only list", req{path: "/v1/locks", token: roSecret}, 403, "read-only"},
		{"no credential", req{method: "POST", path: "/v1/lock", ctype: json, body: lockBody}, 401, ""},
		{"form body", req{method: "POST", path: "/v1/lock", token: opsSecret, ctype: "application/x-www-form-urlencoded", body: "user=alice"}, 415, ""},
		{"a by field is no field", req{method: "POST", path: "/v1/lock", token: opsSecret, ctype: json, body: `{"user":"alice","by":"mallory"}`}, 400, "unknown field"},
		{"admin locks", req{method: "POST", path: "/v1/lock", token: opsSecret, ctype: json, body: lockBody}, 200, `"by": "token:ops"`},
		{"admin lists", req{path: "/v1/locks", token: opsSecret}, 200, "incident 7"},
		{"admin unlocks", req{method: "POST", path: "/v1/unlock", token: opsSecret, ctype: json, body: `{"user":"alice"}`}, 200, `"was_locked": true`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(src.called())
			status, body, _ := do(t, nil, ln, tt.r)
			if status != tt.status || !strings.Contains(body, tt.want) {
				t.Fatalf("got %d %q, want %d containing %q", status, body, tt.status, tt.want)
			}
			if status != 200 && len(src.called()) != before {
				t.Fatalf("a refused request reached the source: %v", src.called())
			}
		})
	}
	if got := src.called(); len(got) != 2 || got[0] != "lock Alice token:ops" || got[1] != "unlock alice token:ops" {
		t.Fatalf("calls %v", got)
	}
	var reasons []string
	for _, e := range src.audited() {
		if e.Type == "admin" {
			reasons = append(reasons, e.User+" "+e.Result+" "+e.Reason)
		}
	}
	want := []string{"token:ops ok lock alice (reason: incident 7; ending sessions)", "token:ops ok unlock alice"}
	if strings.Join(reasons, "|") != strings.Join(want, "|") {
		t.Fatalf("audited %q, want %q", reasons, want)
	}

	// Refusals by the source: invalid is the admin's mistake, no cluster
	// a conflict; both audited as failures.
	for _, tc := range []struct {
		err    error
		status int
	}{{fmt.Errorf("%w: bad name", ErrLockRequest), 400}, {ErrNoLocks, 409}} {
		src.mu.Lock()
		src.err = tc.err
		src.mu.Unlock()
		status, body, _ := do(t, nil, ln, req{method: "POST", path: "/v1/lock", token: opsSecret, ctype: json, body: lockBody})
		if status != tc.status {
			t.Fatalf("%v: got %d %q, want %d", tc.err, status, body, tc.status)
		}
		evs := src.audited()
		if last := evs[len(evs)-1]; last.Result != "fail" || !strings.Contains(last.Reason, "lock Alice") {
			t.Fatalf("refused lock audited as %+v", last)
		}
	}
}

func (l *lockingSource) Status(ctx context.Context) Status {
	st := l.fakeSource.Status(ctx)
	st.Locks = []Lock{{User: "alice", By: "token:ops", At: time.Now().Add(-time.Minute), Until: time.Now().Add(time.Hour), EndSessions: true}}
	return st
}

// The status page lists the locked accounts, to read-only credentials
// too (the source leaves the reasons out).
func TestStatusPageLocks(t *testing.T) {
	src := &lockingSource{fakeSource: &fakeSource{}}
	base := startTCP(t, src.fakeSource, func(o *Options) { o.Source = src })
	status, body, _ := do(t, nil, base, req{path: "/status", token: roSecret})
	if status != 200 || !strings.Contains(body, "Locked accounts") || !strings.Contains(body, "<td>alice</td><td>token:ops</td>") ||
		!strings.Contains(body, "<td>ended</td>") {
		t.Fatalf("status page: %d %s", status, body)
	}
	status, body, _ = do(t, nil, base, req{path: "/v1/status", token: roSecret})
	if status != 200 || !strings.Contains(body, `"locks": [`) {
		t.Fatalf("status: %d %s", status, body)
	}
}

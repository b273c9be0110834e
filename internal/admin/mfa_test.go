package admin

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// revokeSource is a fakeSource that can revoke second-factor unlocks.
type revokeSource struct {
	*fakeSource
	mu      sync.Mutex // mu protects the following
	revoked []string
}

func (r *revokeSource) MFARevoke(user string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.revoked = append(r.revoked, user)
	return nil
}

// POST /v1/mfa/revoke: a full admin revokes and is audited; a read-only
// token, a GET and a body without a user are refused.
func TestMFARevoke(t *testing.T) {
	src := &fakeSource{}
	rs := &revokeSource{fakeSource: src}
	base := startTCP(t, src, func(o *Options) { o.Source = rs })
	const body = `{"user": "alice", "comment": "lost phone"}`
	for _, tc := range []struct {
		name string
		r    req
		want int
	}{
		{"read-only token", req{method: http.MethodPost, path: "/v1/mfa/revoke", token: roSecret, ctype: "application/json", body: body}, http.StatusForbidden},
		{"GET", req{path: "/v1/mfa/revoke", token: opsSecret}, http.StatusMethodNotAllowed},
		{"no user", req{method: http.MethodPost, path: "/v1/mfa/revoke", token: opsSecret, ctype: "application/json", body: `{}`}, http.StatusBadRequest},
		{"full admin", req{method: http.MethodPost, path: "/v1/mfa/revoke", token: opsSecret, ctype: "application/json", body: body}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, out, _ := do(t, nil, base, tc.r); code != tc.want {
				t.Errorf("status %d (%s), want %d", code, out, tc.want)
			}
		})
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.revoked) != 1 || rs.revoked[0] != "alice" {
		t.Errorf("revoked %v, want [alice] once", rs.revoked)
	}
	found := false
	for _, e := range src.audited() {
		found = found || (e.Type == audit.TypeAdmin && e.User == "token:ops" && strings.Contains(e.Reason, "mfa revoke alice (lost phone)"))
	}
	if !found {
		t.Errorf("revoke not audited: %+v", src.audited())
	}
}

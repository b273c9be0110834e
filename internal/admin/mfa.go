package admin

import (
	"encoding/json"
	"net/http"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// MFARevoker is a Source that can end a user's second-factor unlocks:
// with it the server serves POST /v1/mfa/revoke (`frontdoor mfa revoke
// USER`), for full admins only (not a read-only route).
type MFARevoker interface {
	MFARevoke(user string) error
}

// mfaRevokeRequest is the body of POST /v1/mfa/revoke.
type mfaRevokeRequest struct {
	User    string `json:"user"`
	Comment string `json:"comment"`
}

func (s *Server) mfaRoutes() {
	m, ok := s.o.Source.(MFARevoker)
	if !ok {
		return
	}
	s.mux.HandleFunc("POST /v1/mfa/revoke", func(w http.ResponseWriter, r *http.Request) {
		id, _ := IdentityFrom(r.Context())
		var req mfaRevokeRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.User == "" {
			http.Error(w, "want a JSON body {\"user\": NAME, \"comment\": TEXT}", http.StatusBadRequest)
			return
		}
		if len(req.Comment) > maxComment {
			http.Error(w, "comment too long", http.StatusBadRequest)
			return
		}
		user, comment := sanitize(req.User), sanitize(req.Comment)
		err := m.MFARevoke(req.User)
		ev := audit.Event{Type: audit.TypeAdmin, Gateway: s.o.Gateway, User: id.String(), Method: id.Method,
			Src: connSrc(r), Result: audit.ResultOK, Reason: "mfa revoke " + user}
		if comment != "" {
			ev.Reason += " (" + comment + ")"
		}
		if err != nil {
			ev.Result, ev.Reason = audit.ResultFail, ev.Reason+": "+err.Error()
		}
		if s.o.Audit != nil {
			s.o.Audit.Record(ev)
		}
		s.log.Info("admin mfa revoke", "admin", id.String(), "user", user, "comment", comment, "src", ev.Src, "err", err)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]any{"user": req.User, "revoked": true, "by": id.String()})
	})
}

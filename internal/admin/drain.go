package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// Maintenance drains: POST /v1/drain with a deadline drains the node and
// has every gateway tell the users of its sessions, then close them at the
// deadline (internal/maintenance). Without a deadline it is the plain
// drain of admin.go, as before.

// DrainSource is a Source that can drain with a deadline. The gateway is
// one; a source that is not refuses drains with a deadline.
type DrainSource interface {
	// DrainUntil drains node cluster-wide and closes its sessions at
	// deadline, telling their users message. It refuses a message that
	// could not be shown as it is on a terminal, and a deadline not in
	// the future or too far ahead.
	DrainUntil(node string, deadline time.Time, message, by string) error
}

// maintenanceRequest is the body of POST /v1/drain: drainRequest plus the
// deadline — an absolute time, or DeadlineIn from now by the gateway's
// clock (what `frontdoor drain --deadline 30m` sends, so the admin's
// clock does not matter) — and the message users see (Comment, which
// may carry more, goes to the log and the audit trail).
type maintenanceRequest struct {
	drainRequest
	Message    string    `json:"message"`
	Deadline   time.Time `json:"deadline,omitzero"`
	DeadlineIn string    `json:"deadline_in,omitempty"`
}

// maxDrainBody bounds a drain request.
const maxDrainBody = 4096

// maxDeadlineIn bounds what DeadlineIn may say before the source checks
// the deadline itself (a duration that overflows is refused here).
const maxDeadlineIn = 366 * 24 * time.Hour

func (s *Server) drainMaintenance(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDrainBody))
	if err != nil {
		http.Error(w, "drain request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var req maintenanceRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		http.Error(w, "want a JSON body {\"node\": NAME, \"deadline_in\": DURATION, \"message\": TEXT}: "+err.Error(), http.StatusBadRequest)
		return
	}
	deadline := req.Deadline
	if req.DeadlineIn != "" {
		d, err := time.ParseDuration(req.DeadlineIn)
		if err != nil || d <= 0 || d > maxDeadlineIn || !deadline.IsZero() {
			http.Error(w, fmt.Sprintf("deadline_in %q: want one positive duration such as 30m, and no deadline with it", sanitize(req.DeadlineIn)), http.StatusBadRequest)
			return
		}
		deadline = time.Now().Add(d)
	}
	if deadline.IsZero() {
		// Today's drain: no deadline, nobody told, the message a comment.
		if req.Comment == "" {
			req.Comment = req.Message
		}
		b, _ := json.Marshal(req.drainRequest)
		r.Body = io.NopCloser(bytes.NewReader(b))
		s.drain(w, r, true)
		return
	}
	ds, ok := s.o.Source.(DrainSource)
	if !ok {
		http.Error(w, "this gateway cannot drain with a deadline", http.StatusNotImplemented)
		return
	}
	id, _ := IdentityFrom(r.Context())
	err = ds.DrainUntil(req.Node, deadline, req.Message, id.String())
	reason := "drain until " + deadline.UTC().Format(time.RFC3339) + ": " + strconv.QuoteToASCII(req.Message)
	if c := sanitize(req.Comment); c != "" {
		reason += " (" + c + ")"
	}
	ev := audit.Event{Type: audit.TypeAdmin, Gateway: s.o.Gateway, User: id.String(), Method: id.Method,
		Node: sanitize(req.Node), Src: connSrc(r), Result: "ok", Reason: reason}
	if err != nil {
		ev.Result, ev.Reason = "fail", "drain: "+err.Error()
	}
	if s.o.Audit != nil {
		s.o.Audit.Record(ev)
	}
	s.log.Info("admin drain", "admin", id.String(), "node", sanitize(req.Node), "deadline", deadline,
		"message", strconv.QuoteToASCII(req.Message), "comment", sanitize(req.Comment), "src", ev.Src, "err", err)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, map[string]any{"node": req.Node, "draining": true, "by": id.String(),
		"deadline": deadline.UTC().Round(time.Millisecond), "message": req.Message})
}

package admin

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"time"
)

// The status page: GET /status, server-rendered from the same Status as
// GET /v1/status, for a person on call. No script, no framework, nothing
// loaded from anywhere else: it works offline, through an SSH tunnel, and
// under a Content-Security-Policy that allows only its own inline style
// (by hash). It refreshes itself every statusRefresh.

//go:embed status.html
var statusHTML string

//go:embed status.css
var statusCSS string

const statusRefresh = 15 // seconds

var (
	statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
		"ago":   ago,
		"until": until,
		"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"state": nodeState,
		"pct":   func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
		"mins":  func(s int) int { return s / 60 },
	}).Parse(statusHTML))
	// statusCSP allows the page's own style and nothing else.
	statusCSP = func() string {
		sum := sha256.Sum256([]byte(statusCSS))
		return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
			"'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	}()
)

// statusView is what the page template gets.
type statusView struct {
	Status
	CSS         template.CSS
	Refresh     int
	Up, Total   int // nodes taking logins, all nodes
	Sessions    int // through this gateway (all its processes)
	MaxRefusals int
}

func (s *Server) statusRoutes(ss StatusSource) {
	get := func(r *http.Request) Status {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		st := ss.Status(ctx)
		normalize(&st)
		return st
	}
	s.mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, get(r)) })
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/status", http.StatusSeeOther)
	})
	s.mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		v := statusView{Status: get(r), CSS: template.CSS(statusCSS), Refresh: statusRefresh}
		for _, n := range v.Nodes {
			v.Total++
			if nodeState(n) == "up" {
				v.Up++
			}
		}
		for _, p := range v.Processes {
			v.Sessions += p.Sessions
		}
		for _, rc := range v.Refusals.ByReason {
			v.MaxRefusals = max(v.MaxRefusals, rc.Count)
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", statusCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		noStore(w)
		if err := statusPage.Execute(w, v); err != nil {
			s.log.Error("status page", "err", err)
		}
	})
}

// normalize makes every list non-nil, so JSON readers see [] and not null.
func normalize(st *Status) {
	if st.Processes == nil {
		st.Processes = []Process{}
	}
	if st.Gateways == nil {
		st.Gateways = []GatewayInfo{}
	}
	if st.Nodes == nil {
		st.Nodes = []NodeInfo{}
	}
	if st.Drains == nil {
		st.Drains = []Drain{}
	}
	if st.Refusals.ByReason == nil {
		st.Refusals.ByReason = []ReasonCount{}
	}
}

// nodeState is a node's state in one word, as `frontdoor nodes` says it.
func nodeState(n NodeInfo) string {
	switch {
	case n.NotTaking != "":
		return "not-taking"
	case !n.Alive:
		return "dead"
	case !n.SSHDUp:
		return "sshd-down"
	case n.Draining:
		return "draining"
	}
	return "up"
}

// ago is how long before now t was, rounded for a person ("3m10s").
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return roundFor(now.Sub(t)).String() + " ago"
}

// until is how long after now t is ("in 12m0s", or "passed").
func until(t, now time.Time) string {
	if t.IsZero() {
		return "none"
	}
	if d := t.Sub(now); d > 0 {
		return "in " + roundFor(d).String()
	}
	return "passed"
}

func roundFor(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d < time.Minute:
		return d.Round(time.Second)
	case d < time.Hour:
		return d.Round(10 * time.Second)
	}
	return d.Round(time.Minute)
}

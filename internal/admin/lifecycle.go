package admin

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

// The gateway process and its changes: GET /v1/status, POST /v1/reload
// (re-read the configuration, apply it to new logins) and POST
// /v1/upgrade (start a new binary that takes the sockets over). These
// shapes are what `frontdoor reload`, `frontdoor upgrade` and the status
// page read: fields may be added, never renamed.

// Status is GET /v1/status.
type Status struct {
	// Gateway is gateway.name.
	Gateway string `json:"gateway"`
	// PID is this process's.
	PID int `json:"pid"`
	// Version is the binary's (module version or VCS revision).
	Version string `json:"version,omitempty"`
	// Started is when this process started.
	Started time.Time `json:"started"`
	// Config is the configuration file the process reads.
	Config string `json:"config"`
	// State is "serving", "upgrading" (a new process is starting and will
	// take the sockets over) or "draining" (no new logins; sessions go on
	// until they end or Drain.Deadline).
	State string `json:"state"`
	// Sessions are the sessions this process relays now.
	Sessions int `json:"sessions"`
	// Reloads counts configuration reloads since start by result (ok,
	// failed, refused).
	Reloads map[string]int `json:"reloads"`
	// LastReload and LastUpgrade are the latest attempts, if any.
	LastReload  *Change `json:"last_reload,omitempty"`
	LastUpgrade *Change `json:"last_upgrade,omitempty"`
	// Drain is set while this process drains.
	Drain *Drain `json:"drain,omitempty"`
	// Previous is the process this one took over from, while it still
	// relays sessions: they count toward caps and node load here.
	Previous *Previous `json:"previous,omitempty"`
}

// Change is one reload or upgrade attempt.
type Change struct {
	Time time.Time `json:"time"`
	// Result is "ok"; "failed" (the configuration is invalid, or the new
	// process did not start or become ready); "refused" (it changes keys
	// a reload cannot take, or the process is not in a state to do it);
	// or, for an upgrade, "started" while it is under way.
	Result string `json:"result"`
	// Errors are the problems, one per entry; for an invalid
	// configuration each is "file:line: key: problem".
	Errors []string `json:"errors,omitempty"`
	// By is who asked: "signal" (SIGHUP, SIGUSR2) or the admin identity
	// ("unix:root", "token:ops").
	By string `json:"by"`
	// PID is, for an upgrade that succeeded, the new process's.
	PID int `json:"pid,omitempty"`
}

// Drain is a process's drain.
type Drain struct {
	// Reason is "upgrade" or "shutdown".
	Reason   string    `json:"reason"`
	Started  time.Time `json:"started"`
	Deadline time.Time `json:"deadline"`
}

// Previous is the process this one took over from.
type Previous struct {
	PID      int       `json:"pid"`
	Sessions int       `json:"sessions"`
	Deadline time.Time `json:"deadline,omitzero"`
}

// Lifecycle is the gateway process as the admin API changes it.
type Lifecycle interface {
	Status() Status
	// Reload re-reads the configuration; by is the admin identity.
	Reload(ctx context.Context, by string) Change
	// Upgrade starts an upgrade and returns at once: "started", or
	// "refused" with the reason. Its outcome shows in Status.
	Upgrade(by string) Change
}

// lifecycleRoutes registers the endpoints when the server has a Lifecycle.
func (s *Server) lifecycleRoutes() {
	l := s.o.Lifecycle
	if l == nil {
		return
	}
	s.mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, l.Status()) })
	s.mux.HandleFunc("POST /v1/reload", func(w http.ResponseWriter, r *http.Request) {
		id, _ := IdentityFrom(r.Context())
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		writeChange(w, l.Reload(ctx, id.String()))
	})
	s.mux.HandleFunc("POST /v1/upgrade", func(w http.ResponseWriter, r *http.Request) {
		id, _ := IdentityFrom(r.Context())
		writeChange(w, l.Upgrade(id.String()))
	})
}

// writeChange answers 200 for a change made or started, 409 for one
// refused, 422 for an invalid configuration; the body is the Change.
func writeChange(w http.ResponseWriter, c Change) {
	status := http.StatusOK
	switch c.Result {
	case "refused":
		status = http.StatusConflict
	case "failed":
		status = http.StatusUnprocessableEntity
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(c)
}

// SetTokens replaces the bearer tokens accepted over TCP (a reload of the
// token file); nil accepts none.
func (s *Server) SetTokens(t *Tokens) { s.tokens.Store(t) }

// ListenFunc opens a listener for network and addr with create, or hands
// back one this process inherited for them (an upgrade passes the
// listening sockets to the new process).
type ListenFunc func(network, addr string, create func() (net.Listener, error)) (net.Listener, error)

// Release closes the listeners without removing the Unix socket, which
// the process that took the sockets over serves now; requests in flight
// finish.
func (s *Server) Release() error {
	s.srv.SetKeepAlivesEnabled(false) // idle clients reconnect, to the new process
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ln := range s.lns {
		if ul, ok := ln.(*unixListener); ok {
			ul.once.Do(func() {}) // keep the socket file
			ul.Listener.Close()
			continue
		}
		ln.Close()
	}
	return nil
}

// SyscallConn exposes the socket, so that it can be handed to another
// process.
func (l *unixListener) SyscallConn() (syscall.RawConn, error) {
	return l.Listener.(syscall.Conn).SyscallConn()
}

// InheritUnix wraps a Unix listener this process inherited for path, so
// that closing it (a shutdown, not a handover) removes the socket, as
// closing one ListenUnix made does.
func InheritUnix(ln net.Listener, path string) (net.Listener, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &unixListener{Listener: ln, path: path, created: fi}, nil
}

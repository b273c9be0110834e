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

// Changing the gateway process: POST /v1/reload (re-read the
// configuration, apply it to new logins) and POST /v1/upgrade (start a
// new binary that takes the sockets over). What they answer is a Reload
// or an Upgrade; GET /v1/status shows the last of each (Status.LastReload,
// Status.LastUpgrade) and the processes of the gateway. These shapes are
// what `frontdoor reload`, `frontdoor upgrade` and the status page read:
// fields may be added, never renamed.

// Results of a reload or an upgrade.
const (
	ResultOK      = "ok"
	ResultFailed  = "failed"
	ResultRefused = "refused"
	ResultStarted = "started" // an upgrade under way
)

// Upgrade is one upgrade attempt.
type Upgrade struct {
	At time.Time `json:"at"`
	// Result is "started" while the new process starts; "ok" once it
	// serves the gateway (PID); "failed" if it did not start or become
	// ready (this process serves on); "refused" if the process could not
	// upgrade then (another upgrade under way, a previous process still
	// draining, a drain).
	Result string `json:"result"`
	// By is who asked: "SIGUSR2", or an admin identity ("unix:root").
	By string `json:"by,omitempty"`
	// PID is the new process's, once it serves.
	PID int `json:"pid,omitempty"`
	// Error says why it failed or was refused.
	Error string `json:"error,omitempty"`
}

// Lifecycle is the gateway process as the admin API changes it.
type Lifecycle interface {
	// Reload re-reads the configuration; by is the admin identity.
	Reload(ctx context.Context, by string) Reload
	// Upgrade starts an upgrade and returns at once: "started", or
	// "refused" with the reason. Its outcome shows in the status.
	Upgrade(by string) Upgrade
}

// lifecycleRoutes registers the endpoints when the server has a Lifecycle.
func (s *Server) lifecycleRoutes() {
	l := s.o.Lifecycle
	if l == nil {
		return
	}
	s.mux.HandleFunc("POST /v1/reload", func(w http.ResponseWriter, r *http.Request) {
		id, _ := IdentityFrom(r.Context())
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		rl := l.Reload(ctx, id.String())
		writeResult(w, rl.Result, rl)
	})
	s.mux.HandleFunc("POST /v1/upgrade", func(w http.ResponseWriter, r *http.Request) {
		id, _ := IdentityFrom(r.Context())
		u := l.Upgrade(id.String())
		writeResult(w, u.Result, u)
	})
}

// writeResult answers 200 for a change made or started, 409 for one
// refused, 422 for one that failed; the body is v.
func writeResult(w http.ResponseWriter, result string, v any) {
	status := http.StatusOK
	switch result {
	case ResultRefused:
		status = http.StatusConflict
	case ResultFailed:
		status = http.StatusUnprocessableEntity
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
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

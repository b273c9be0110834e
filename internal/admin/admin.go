// Package admin serves the gateway's admin HTTP API and Prometheus metrics.
// It listens on a separate, normally loopback-only address.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Source is what the admin API reads from the gateway: only the methods
// this package uses.
type Source interface {
	Sessions() any
	Nodes() any
	Explain(ctx context.Context, user string) (string, error)
	Drain(node string, drain bool, by string) error
}

// Server is the admin HTTP server.
type Server struct {
	srv *http.Server
	log *slog.Logger
}

// New builds the admin API: /healthz, /metrics, /v1/sessions, /v1/nodes.
func New(src Source, reg *prometheus.Registry, log *slog.Logger) *Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /v1/sessions", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, src.Sessions()) })
	// Profiling, for measuring the relay under real load; the admin
	// address should be loopback or otherwise private.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, src.Nodes()) })
	mux.HandleFunc("GET /v1/explain", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		out, err := src.Explain(ctx, r.URL.Query().Get("user"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(out))
	})
	// Drains change routing cluster-wide: POST only, so a stray GET (a
	// browser, a crawler) cannot drain a node.
	mux.HandleFunc("POST /v1/drain", func(w http.ResponseWriter, r *http.Request) { drain(w, r, src, true) })
	mux.HandleFunc("POST /v1/undrain", func(w http.ResponseWriter, r *http.Request) { drain(w, r, src, false) })
	return &Server{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second},
		log: log,
	}
}

func drain(w http.ResponseWriter, r *http.Request, src Source, on bool) {
	node := r.URL.Query().Get("node")
	by := r.URL.Query().Get("by")
	if by == "" {
		by = "admin-api"
	}
	if err := src.Drain(node, on, by); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, map[string]any{"node": node, "draining": on})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// Serve serves on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.srv.Shutdown(sctx)
	})
	defer stop()
	if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Package admin serves the gateway's admin HTTP API and Prometheus metrics.
//
// The API drains nodes cluster-wide and shows sessions, group memberships
// and profiles, so every request is authenticated and the acting admin is
// taken from the credential, never from the request:
//
//   - the default is a Unix socket (mode 0600, listen.go): the kernel says
//     which uid connected (SO_PEERCRED), and that user is the admin;
//   - TCP only with a bearer token (tokens.go; the token's name is the
//     admin) and/or mutual TLS (a client certificate whose name is on
//     admin_client_names);
//   - read-only tokens and certificates (admin_readonly_client_names) may
//     only GET what a dashboard needs (access.go); a browser holding a
//     read-only token gets it as a cookie once (login.go) and reads only;
//   - requests must name an allowed Host (on the socket too: an SSH tunnel
//     puts it in a browser's reach), and state-changing ones must not come
//     from another site and must be JSON (guard.go), so neither DNS
//     rebinding nor a form on some web page reaches the API;
//   - /healthz is always open; /metrics is open only with
//     admin_metrics_public; pprof exists only with admin_pprof.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// Source is what the admin API reads from the gateway: only the methods
// this package uses.
type Source interface {
	Sessions() []Session
	Nodes() []NodeInfo
	Explain(ctx context.Context, user string) (string, error)
	Drain(node string, drain bool, by string) error
}

// StatusSource is a Source that can also tell the whole status: with
// it the server serves GET /v1/status and the status page.
type StatusSource interface {
	Status(ctx context.Context) Status
}

// Auditor records audit events (the gateway's audit trail).
type Auditor interface {
	Record(audit.Event)
}

// Options configure the admin API.
type Options struct {
	Source   Source
	Registry *prometheus.Registry
	Log      *slog.Logger // default slog.Default()
	// Audit receives one event per drain or undrain (optional).
	Audit Auditor
	// Gateway names this gateway in audit events.
	Gateway string
	// Tokens are the bearer tokens accepted over TCP (nil: none).
	Tokens *Tokens
	// ClientNames and ReadOnlyClientNames are the client certificates
	// admitted as full and read-only admins (gateway.admin_client_names,
	// admin_readonly_client_names); a certificate on neither is refused
	// even though it chains to the client CA.
	ClientNames, ReadOnlyClientNames []string
	// AllowedHosts are the Host names TCP requests may carry
	// (DefaultAllowedHosts); empty means the loopback names only.
	AllowedHosts []string
	// MetricsPublic serves /metrics without credentials.
	MetricsPublic bool
	// Pprof serves /debug/pprof/ (authenticated like the rest).
	Pprof bool
	// PeerAllowed decides which uids may use the Unix socket; default:
	// root and this process's own user.
	PeerAllowed func(uid uint32) bool
	// Lifecycle, if set, serves /v1/status, /v1/reload and /v1/upgrade
	// (lifecycle.go).
	Lifecycle Lifecycle
	// Listen opens the listeners (default: create them); see ListenFunc.
	Listen ListenFunc
}

// Server is the admin HTTP server. One server may serve several
// listeners (the socket and a TCP address).
type Server struct {
	o           Options
	srv         *http.Server
	mux         *http.ServeMux
	log         *slog.Logger
	hosts       hostSet
	peerAllowed func(uint32) bool
	certs       certNames
	tokens      atomic.Pointer[Tokens] // bearer tokens; replaced by a reload

	mu  sync.Mutex // mu protects the following
	lns []net.Listener
}

// New builds the admin API: /healthz, /metrics, /v1/sessions, /v1/nodes,
// /v1/explain, POST /v1/drain and /v1/undrain, /v1/status and the status
// page (/status) if the source is a StatusSource, /login and /logout for
// browsers with a read-only token, and /debug/pprof/ if enabled.
func New(o Options) *Server {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	s := &Server{o: o, mux: http.NewServeMux(), log: o.Log.With("component", "admin"),
		hosts: newHostSet(append(DefaultAllowedHosts(""), o.AllowedHosts...)), peerAllowed: o.PeerAllowed,
		certs: newCertNames(o.ClientNames, o.ReadOnlyClientNames)}
	if s.peerAllowed == nil {
		s.peerAllowed = defaultPeerAllowed
	}
	s.tokens.Store(o.Tokens)
	mux := s.mux
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	if o.Registry != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{Registry: o.Registry}))
	}
	mux.HandleFunc("GET /v1/sessions", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, o.Source.Sessions()) })
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, o.Source.Nodes()) })
	mux.HandleFunc("GET /v1/explain", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		out, err := o.Source.Explain(ctx, r.URL.Query().Get("user"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(out))
	})
	// Drains change routing cluster-wide: POST with a JSON body only.
	mux.HandleFunc("POST /v1/drain", s.drainMaintenance)
	mux.HandleFunc("POST /v1/undrain", func(w http.ResponseWriter, r *http.Request) { s.drain(w, r, false) })
	if ss, ok := o.Source.(StatusSource); ok {
		s.statusRoutes(ss)
	}
	if ls, ok := o.Source.(LockSource); ok {
		s.lockRoutes(ls)
	}
	s.lifecycleRoutes()
	s.mfaRoutes()
	if o.Pprof {
		// Profiling, for measuring the relay under real load.
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	s.srv = &http.Server{Handler: s, ConnContext: connContext, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 60 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug), MaxHeaderBytes: 16 << 10}
	return s
}

// public reports whether a request may go without credentials.
func (s *Server) public(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return r.URL.Path == "/healthz" || (s.o.MetricsPublic && r.URL.Path == "/metrics")
}

// ServeHTTP guards, authenticates, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	refuse := func(status int, reason string) {
		s.log.Warn("admin request refused", "src", r.RemoteAddr, "method", r.Method, "path", sanitize(r.URL.Path),
			"host", sanitize(r.Host), "status", status, "reason", reason)
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="frontdoor-admin"`)
		}
		http.Error(w, reason, status)
	}
	if !s.hosts.allows(r.Host) {
		refuse(http.StatusMisdirectedRequest, "host not allowed (add it to gateway.admin_allowed_hosts)")
		return
	}
	if !safeMethod(r.Method) {
		if err := checkCrossSite(r, s.hosts); err != nil {
			refuse(http.StatusForbidden, err.Error())
			return
		}
		if err := checkContentType(r); err != nil {
			refuse(http.StatusUnsupportedMediaType, err.Error())
			return
		}
	}
	if s.public(r) {
		s.mux.ServeHTTP(w, r)
		return
	}
	if s.browserSession(w, r) {
		return
	}
	id, err := s.authenticate(r)
	if err == nil {
		err = authorize(id, r)
	}
	if err != nil {
		var ae *authError
		if errors.As(err, &ae) {
			refuse(ae.status, ae.reason)
		} else {
			refuse(http.StatusForbidden, err.Error())
		}
		return
	}
	s.log.Debug("admin request", "admin", id.String(), "method", r.Method, "path", sanitize(r.URL.Path))
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
}

// drainRequest is the body of POST /v1/drain and /v1/undrain. Whoever
// sends it is recorded as the credential says: a "by" field, if a client
// sends one, is ignored. Comment is free text for the log and audit.
type drainRequest struct {
	Node    string `json:"node"`
	Comment string `json:"comment"`
}

const maxComment = 200

func (s *Server) drain(w http.ResponseWriter, r *http.Request, on bool) {
	id, _ := IdentityFrom(r.Context())
	// One JSON object and nothing after it (a Decoder would take the
	// first of several and ignore the rest).
	var req drainRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, "want a JSON body {\"node\": NAME, \"comment\": TEXT}: "+err.Error(), http.StatusBadRequest)
		return
	}
	comment := sanitize(req.Comment)
	if len(req.Comment) > maxComment {
		http.Error(w, fmt.Sprintf("comment longer than %d bytes", maxComment), http.StatusBadRequest)
		return
	}
	verb := "undrain"
	if on {
		verb = "drain"
	}
	err = s.o.Source.Drain(req.Node, on, id.String())
	ev := audit.Event{Type: audit.TypeAdmin, Gateway: s.o.Gateway, User: id.String(), Method: id.Method,
		Node: sanitize(req.Node), Src: connSrc(r), Result: "ok", Reason: verb}
	if comment != "" {
		ev.Reason += " (" + comment + ")"
	}
	if err != nil {
		ev.Result, ev.Reason = "fail", verb+": "+err.Error()
	}
	if s.o.Audit != nil {
		s.o.Audit.Record(ev)
	}
	s.log.Info("admin "+verb, "admin", id.String(), "node", sanitize(req.Node), "comment", comment, "src", ev.Src, "err", err)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, map[string]any{"node": req.Node, "draining": on, "by": id.String()})
}

// connSrc is where a request came from: the TCP peer, or the Unix peer's
// pid and uid.
func connSrc(r *http.Request) string {
	if ci := connOf(r.Context()); ci.unix {
		return fmt.Sprintf("unix:pid=%d,uid=%d", ci.pid, ci.uid)
	}
	return r.RemoteAddr
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// Serve serves on ln until ctx ends. It may be called for several
// listeners at once; the first to return after ctx ends shuts all down.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.srv.Shutdown(sctx)
	})
	defer stop()
	if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// Addrs are the addresses of the listeners Listen opened.
func (s *Server) Addrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ln := range s.lns {
		out = append(out, ln.Addr().String())
	}
	return out
}

// Run serves every listener Listen opened until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	lns := s.lns
	s.mu.Unlock()
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- s.Serve(ctx, ln) }()
	}
	var errs []error
	for range lns {
		errs = append(errs, <-errc)
	}
	return errors.Join(errs...)
}

// Close closes the listeners Listen opened (Run returns).
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, ln := range s.lns {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// describe is for logs: what a listener is.
func describe(ln net.Listener) string {
	if _, ok := ln.Addr().(*net.UnixAddr); ok {
		return "unix " + ln.Addr().String()
	}
	return "tcp " + ln.Addr().String()
}

package admin

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os/user"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// fakeSource is the gateway as the admin API sees it, recording drains.
type fakeSource struct {
	mu     sync.Mutex // mu protects the following
	drains []string   // "node on by"
	events []audit.Event
}

func (f *fakeSource) Sessions() []Session { return []Session{{ID: "s1"}} }
func (f *fakeSource) Nodes() []NodeInfo   { return []NodeInfo{{Name: "login1"}} }
func (f *fakeSource) Explain(_ context.Context, u string) (string, error) {
	return "explain " + u + "\n", nil
}
func (f *fakeSource) Status(context.Context) Status {
	return Status{Gateway: "gw1", Now: time.Now(), Nodes: f.Nodes(),
		// What others wrote (a drain message, a node name) is shown, never run.
		Drains:   []Drain{{Node: "login1", By: "unix:root", Message: "<script>alert(1)</script>", Deadline: time.Now().Add(time.Hour)}},
		Refusals: Refusals{WindowSeconds: 900, Total: 3, ByReason: []ReasonCount{{Reason: "auth:password:fail", Count: 3}}}}
}
func (f *fakeSource) Drain(node string, on bool, by string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drains = append(f.drains, node+" "+map[bool]string{true: "on", false: "off"}[on]+" "+by)
	return nil
}
func (f *fakeSource) Record(e audit.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

func (f *fakeSource) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.drains)
}

func (f *fakeSource) audited() []audit.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]audit.Event(nil), f.events...)
}

func (f *fakeSource) lastDrain() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.drains) == 0 {
		return ""
	}
	return f.drains[len(f.drains)-1]
}

const (
	opsSecret = "ops-secret-0123456789abcdef"
	roSecret  = "grafana-secret-0123456789abcdef"
)

func testTokens(t *testing.T) *Tokens {
	t.Helper()
	tok, err := ParseTokens("tokens", []byte("ops "+opsSecret+"\nprometheus prom-secret-0123456789abcdef\n"+
		"grafana "+roSecret+" read-only\n"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// serve runs s on ln until the test ends.
func serve(t *testing.T, s *Server, ln net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
}

// startTCP serves an admin API on 127.0.0.1 with the ops and prometheus
// tokens and returns its base URL.
func startTCP(t *testing.T, src *fakeSource, mod func(*Options)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Source: src, Registry: prometheus.NewRegistry(), Audit: src, Tokens: testTokens(t),
		AllowedHosts: DefaultAllowedHosts(ln.Addr().String(), "admin.example.edu")}
	if mod != nil {
		mod(&o)
	}
	serve(t, New(o), ln)
	return "http://" + ln.Addr().String()
}

type req struct {
	method, path, host, token, ctype, body string
	hdr                                    map[string]string
}

func do(t *testing.T, hc *http.Client, base string, r req) (int, string, http.Header) {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, r.method, base+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.host != "" {
		hr.Host = r.host
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.ctype != "" {
		hr.Header.Set("Content-Type", r.ctype)
	}
	for k, v := range r.hdr {
		hr.Header.Set(k, v)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

const drainBody = `{"node": "login1", "comment": "kernel update", "by": "mallory"}`

// Every refusal over TCP, and the requests that pass.
func TestTCPRefusalsAndSuccess(t *testing.T) {
	src := &fakeSource{}
	base := startTCP(t, src, nil)
	const json = "application/json"
	for _, tt := range []struct {
		name   string
		r      req
		status int
		want   string
	}{
		{"healthz needs nothing", req{path: "/healthz"}, 200, "ok"},
		{"no token", req{path: "/v1/sessions"}, 401, "no credentials"},
		{"wrong token", req{path: "/v1/sessions", token: "ops-secret-0123456789abcdeX"}, 401, "unknown bearer token"},
		{"basic auth", req{path: "/v1/sessions", hdr: map[string]string{"Authorization": "Basic b3BzOnB3"}}, 401, "not a bearer token"},
		{"token in the query is no credential", req{path: "/v1/sessions?access_token=" + opsSecret}, 401, ""},
		{"right token", req{path: "/v1/sessions", token: opsSecret}, 200, "s1"},
		{"explain", req{path: "/v1/explain?user=alice", token: opsSecret}, 200, "explain alice"},
		{"metrics need a token", req{path: "/metrics"}, 401, ""},
		{"metrics with the scraper's token", req{path: "/metrics", token: "prom-secret-0123456789abcdef"}, 200, ""},
		{"pprof is off", req{path: "/debug/pprof/", token: opsSecret}, 404, ""},
		{"rebinding: foreign Host", req{path: "/v1/sessions", token: opsSecret, host: "evil.example"}, 421, "host not allowed"},
		{"rebinding: foreign Host on healthz too", req{path: "/healthz", host: "evil.example:9101"}, 421, ""},
		{"configured host", req{path: "/v1/nodes", token: opsSecret, host: "Admin.Example.EDU:9101"}, 200, "login1"},
		{"localhost", req{path: "/v1/nodes", token: opsSecret, host: "localhost"}, 200, "login1"},
		{"::1", req{path: "/v1/nodes", token: opsSecret, host: "[::1]:9101"}, 200, "login1"},
		{"POST cross-site", req{method: "POST", path: "/v1/drain", token: opsSecret, ctype: json, body: drainBody,
			hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "cross-site"},
		{"POST same-site", req{method: "POST", path: "/v1/drain", token: opsSecret, ctype: json, body: drainBody,
			hdr: map[string]string{"Sec-Fetch-Site": "same-site"}}, 403, "cross-site"},
		{"POST foreign Origin", req{method: "POST", path: "/v1/drain", token: opsSecret, ctype: json, body: drainBody,
			hdr: map[string]string{"Origin": "http://evil.example"}}, 403, "cross-site"},
		{"POST null Origin", req{method: "POST", path: "/v1/drain", token: opsSecret, ctype: json, body: drainBody,
			hdr: map[string]string{"Origin": "null"}}, 403, "cross-site"},
		{"POST as an HTML form", req{method: "POST", path: "/v1/drain", token: opsSecret,
			ctype: "application/x-www-form-urlencoded", body: "node=login1"}, 415, "application/json"},
		{"POST as text/plain", req{method: "POST", path: "/v1/drain", token: opsSecret, ctype: "text/plain", body: drainBody}, 415, ""},
		{"POST without a content type", req{method: "POST", path: "/v1/drain", token: opsSecret, body: drainBody}, 415, ""},
		{"POST without a token", req{method: "POST", path: "/v1/drain", ctype: json, body: drainBody}, 401, ""},
		{"POST with a wrong token", req{method: "POST", path: "/v1/drain", token: "nope-nope-nope-nope-nope", ctype: json, body: drainBody}, 401, ""},
		{"GET drain", req{path: "/v1/drain?node=login1", token: opsSecret}, 405, ""},
		{"POST same-origin", req{method: "POST", path: "/v1/drain", token: opsSecret, ctype: "application/json; charset=utf-8", body: drainBody,
			hdr: map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": base}}, 200, `"by": "token:ops"`},
		{"POST with a bad body", req{method: "POST", path: "/v1/undrain", token: opsSecret, ctype: json, body: "node=x"}, 400, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := src.count()
			status, body, hdr := do(t, nil, base, tt.r)
			if status != tt.status || !strings.Contains(body, tt.want) {
				t.Fatalf("got %d %q, want %d containing %q", status, body, tt.status, tt.want)
			}
			if status == 401 && hdr.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if status != 200 && src.count() != before {
				t.Errorf("a refused request drained: %v", src.drains)
			}
		})
	}
	// The one drain that passed is recorded as the token's name, whatever
	// the body's "by" said; the audit trail says the same.
	if got := src.lastDrain(); got != "login1 on token:ops" {
		t.Fatalf("drain recorded as %q, want by token:ops", got)
	}
	if ev := src.audited(); len(ev) != 1 || ev[0].User != "token:ops" || ev[0].Type != audit.TypeAdmin ||
		!strings.Contains(ev[0].Reason, "kernel update") {
		t.Fatalf("audit events: %+v", ev)
	}
}

func TestMetricsPublicAndPprofOn(t *testing.T) {
	base := startTCP(t, &fakeSource{}, func(o *Options) { o.MetricsPublic, o.Pprof = true, true })
	for _, tt := range []struct {
		r      req
		status int
	}{
		{req{path: "/metrics"}, 200},
		{req{path: "/metrics", host: "evil.example"}, 421}, // public is not unguarded
		{req{path: "/v1/sessions"}, 401},
		{req{path: "/debug/pprof/"}, 401}, // pprof on is still authenticated
		{req{path: "/debug/pprof/", token: opsSecret}, 200},
		{req{path: "/debug/pprof/heap", token: opsSecret}, 200},
	} {
		if status, body, _ := do(t, nil, base, tt.r); status != tt.status {
			t.Errorf("%s (host %q, token %v): %d %q, want %d", tt.r.path, tt.r.host, tt.r.token != "", status, body, tt.status)
		}
	}
}

// unixClient talks HTTP over the socket at path.
func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

// Over the socket the kernel names the admin: this test's own user.
func TestUnixPeerIdentity(t *testing.T) {
	path := t.TempDir() + "/run/admin.sock"
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	serve(t, New(Options{Source: src, Registry: prometheus.NewRegistry(), Audit: src}), ln)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	hc := unixClient(path)
	if status, body, _ := do(t, hc, "http://localhost", req{path: "/v1/sessions"}); status != 200 {
		t.Fatalf("GET over the socket: %d %s", status, body)
	}
	// A browser cannot reach a socket, but the guard holds there too.
	if status, _, _ := do(t, hc, "http://localhost", req{method: "POST", path: "/v1/drain", ctype: "text/plain", body: drainBody}); status != 415 {
		t.Fatalf("form POST over the socket: %d", status)
	}
	status, body, _ := do(t, hc, "http://localhost", req{method: "POST", path: "/v1/drain?by=mallory",
		ctype: "application/json", body: drainBody, token: "whatever"})
	if status != 200 {
		t.Fatalf("drain over the socket: %d %s", status, body)
	}
	want := "login1 on unix:" + me.Username
	if got := src.lastDrain(); got != want {
		t.Fatalf("drain recorded as %q, want %q (from SO_PEERCRED, not the request)", got, want)
	}
	if e := src.audited()[0]; e.Method != "unix" || !strings.HasPrefix(e.Src, "unix:pid=") {
		t.Fatalf("audit event %+v", e)
	}
}

func TestUnixPeerNotAllowed(t *testing.T) {
	path := t.TempDir() + "/admin.sock"
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	serve(t, New(Options{Source: src, PeerAllowed: func(uint32) bool { return false }}), ln)
	status, body, _ := do(t, unixClient(path), "http://localhost", req{path: "/v1/sessions"})
	if status != 403 || !strings.Contains(body, "may not use the admin socket") {
		t.Fatalf("got %d %q, want 403", status, body)
	}
}

func TestCrossSiteAndHosts(t *testing.T) {
	hosts := newHostSet(DefaultAllowedHosts("0.0.0.0:9101", "gw1.example.edu"))
	for h, want := range map[string]bool{"gw1.example.edu": true, "GW1.example.edu.:9101": true, "0.0.0.0": false,
		"127.0.0.1:80": true, "[::1]": true, "evil.example": false, "": false, "127.0.0.2": false} {
		if got := hosts.allows(h); got != want {
			t.Errorf("allows(%q) = %v, want %v", h, got, want)
		}
	}
	if !newHostSet(DefaultAllowedHosts("10.1.2.3:9101")).allows("10.1.2.3:9101") {
		t.Error("the listen address's own host is not allowed")
	}
	for _, tt := range []struct {
		site, origin string
		ok           bool
	}{{"", "", true}, {"none", "", true}, {"same-origin", "https://gw1.example.edu:9101", true},
		{"cross-site", "", false}, {"same-site", "", false}, {"", "http://evil.example", false},
		{"", "null", false}, {"", "file://", false}, {"", "http://127.0.0.1:9101", true}} {
		r, _ := http.NewRequest("POST", "http://gw1.example.edu/v1/drain", bytes.NewReader(nil))
		if tt.site != "" {
			r.Header.Set("Sec-Fetch-Site", tt.site)
		}
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if err := checkCrossSite(r, hosts); (err == nil) != tt.ok {
			t.Errorf("Sec-Fetch-Site %q Origin %q: %v, want ok=%v", tt.site, tt.origin, err, tt.ok)
		}
	}
}

package admin

import (
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// A read-only token reads what a dashboard needs and changes nothing,
// whatever it tries; the guard (Host, cross-site, JSON) still comes first.
func TestReadOnlyToken(t *testing.T) {
	src := &fakeSource{}
	base := startTCP(t, src, func(o *Options) { o.Pprof = true })
	const json = "application/json"
	for _, tt := range []struct {
		name   string
		r      req
		status int
		want   string
	}{
		{"status", req{path: "/v1/status", token: roSecret}, 200, `"gateway": "gw1"`},
		{"status page", req{path: "/status", token: roSecret}, 200, "<title>frontdoor gw1</title>"},
		{"nodes", req{path: "/v1/nodes", token: roSecret}, 200, "login1"},
		{"sessions", req{path: "/v1/sessions", token: roSecret}, 200, "s1"},
		{"explain", req{path: "/v1/explain?user=alice", token: roSecret}, 200, "explain alice"},
		{"metrics", req{path: "/metrics", token: roSecret}, 200, ""},
		{"HEAD status", req{method: "HEAD", path: "/v1/status", token: roSecret}, 200, ""},
		{"drain", req{method: "POST", path: "/v1/drain", token: roSecret, ctype: json, body: drainBody}, 403, "token:grafana is read-only"},
		{"undrain", req{method: "POST", path: "/v1/undrain", token: roSecret, ctype: json, body: drainBody}, 403, "read-only"},
		// Routes that others add later are closed to it until listed.
		{"reload", req{method: "POST", path: "/v1/reload", token: roSecret, ctype: json, body: "{}"}, 403, "read-only"},
		{"upgrade", req{method: "POST", path: "/v1/upgrade", token: roSecret, ctype: json, body: "{}"}, 403, "read-only"},
		{"lock", req{method: "POST", path: "/v1/lock", token: roSecret, ctype: json, body: `{"user":"alice"}`}, 403, "read-only"},
		{"GET drain", req{path: "/v1/drain?node=login1", token: roSecret}, 403, "read-only"},
		{"pprof", req{path: "/debug/pprof/", token: roSecret}, 403, "read-only"},
		{"path tricks", req{path: "/v1/status/../drain", token: roSecret}, 403, ""},
		{"DELETE", req{method: "DELETE", path: "/v1/status", token: roSecret, ctype: json}, 403, "read-only"},
		// The guard answers before the credential is even looked at.
		{"foreign Host", req{path: "/v1/status", token: roSecret, host: "evil.example"}, 421, "host not allowed"},
		{"cross-site POST", req{method: "POST", path: "/v1/drain", token: roSecret, ctype: json, body: drainBody,
			hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "cross-site"},
		{"form POST", req{method: "POST", path: "/v1/drain", token: roSecret, ctype: "application/x-www-form-urlencoded", body: "node=login1"}, 415, ""},
		// The full admin token still does everything.
		{"admin drains", req{method: "POST", path: "/v1/drain", token: opsSecret, ctype: json, body: drainBody}, 200, "token:ops"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := src.count()
			status, body, _ := do(t, nil, base, tt.r)
			if status != tt.status || !strings.Contains(body, tt.want) {
				t.Fatalf("got %d %q, want %d containing %q", status, body, tt.status, tt.want)
			}
			if tt.r.token == roSecret && src.count() != before {
				t.Fatalf("a read-only token drained: %v", src.drains)
			}
		})
	}
}

// A browser logs in once with a read-only token in the address and reads
// with the cookie it gets; the cookie never changes anything.
func TestBrowserLogin(t *testing.T) {
	src := &fakeSource{}
	base := startTCP(t, src, nil)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	if status, body, _ := do(t, noRedirect, base, req{path: "/login?token=" + opsSecret}); status != 403 || !strings.Contains(body, "read-only") {
		t.Fatalf("an admin token in an address: %d %q", status, body)
	}
	if status, _, hdr := do(t, noRedirect, base, req{path: "/login?token=wrong-wrong-wrong-wrong"}); status != 401 || hdr.Get("Set-Cookie") != "" {
		t.Fatalf("a wrong token: %d %v", status, hdr)
	}
	if status, _, _ := do(t, noRedirect, base, req{path: "/login?token=" + roSecret, host: "evil.example"}); status != 421 {
		t.Fatalf("login with a foreign Host: %d", status)
	}
	status, body, hdr := do(t, noRedirect, base, req{path: "/login?token=" + roSecret})
	if status != 200 || !strings.Contains(body, `url=/status`) {
		t.Fatalf("login: %d %q", status, body)
	}
	if hdr.Get("Referrer-Policy") != "no-referrer" || hdr.Get("Cache-Control") != "no-store" {
		t.Errorf("login answer headers: %v", hdr)
	}
	cookies := (&http.Response{Header: hdr}).Cookies()
	if len(cookies) != 1 || cookies[0].Name != cookieName || cookies[0].Value != roSecret || !cookies[0].HttpOnly ||
		cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != "/" {
		t.Fatalf("cookie: %+v", cookies)
	}
	cookie := map[string]string{"Cookie": cookieName + "=" + roSecret}
	if status, body, hdr := do(t, nil, base, req{path: "/status", hdr: cookie}); status != 200 || !strings.Contains(body, "login1") ||
		!strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("status page with the cookie: %d %v", status, hdr)
	}
	// A cookie holding an admin token (forged, or from an old login) reads
	// only.
	adminCookie := map[string]string{"Cookie": cookieName + "=" + opsSecret, "Sec-Fetch-Site": "same-origin", "Origin": base}
	if status, body, _ := do(t, nil, base, req{method: "POST", path: "/v1/drain", ctype: "application/json", body: drainBody, hdr: adminCookie}); status != 403 ||
		!strings.Contains(body, "read-only") || src.count() != 0 {
		t.Fatalf("POST with an admin token's cookie: %d %q, drains %v", status, body, src.drains)
	}
	if status, _, _ := do(t, nil, base, req{path: "/v1/status", hdr: map[string]string{"Cookie": cookieName + "=nope-nope-nope-nope"}}); status != 401 {
		t.Fatalf("unknown cookie: %d", status)
	}
	// / leads a browser to the page.
	if status, _, hdr := do(t, noRedirect, base, req{path: "/", hdr: cookie}); status != 303 || hdr.Get("Location") != "/status" {
		t.Fatalf("/: %d %v", status, hdr)
	}
	status, _, hdr = do(t, nil, base, req{path: "/logout"})
	if c := (&http.Response{Header: hdr}).Cookies(); status != 200 || len(c) != 1 || c[0].MaxAge >= 0 {
		t.Fatalf("logout: %d %+v", status, c)
	}
}

// The page shows what others wrote (a drain message, a node name) as
// text, and loads nothing from anywhere.
func TestStatusPageEscapes(t *testing.T) {
	base := startTCP(t, &fakeSource{}, nil)
	status, body, hdr := do(t, nil, base, req{path: "/status", token: roSecret})
	if status != 200 {
		t.Fatalf("status page: %d", status)
	}
	if strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("the drain message is not escaped:\n%s", body)
	}
	for _, external := range []string{"http://", "https://", "src=", "<link", "@import"} {
		if strings.Contains(body, external) {
			t.Errorf("the page refers to something outside itself (%q)", external)
		}
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'sha256-") || strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q", csp)
	}
	for _, want := range []string{"auth:password:fail", "in 1h0m0s", "unix:root", "no reload since this process started"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// JSON lists are [] not null, even where the source left them nil.
	_, js, _ := do(t, nil, base, req{path: "/v1/status", token: roSecret})
	for _, want := range []string{`"processes": []`, `"gateways": []`, `"window_s": 900`} {
		if !strings.Contains(js, want) {
			t.Errorf("/v1/status lacks %s:\n%s", want, js)
		}
	}
	if strings.Contains(js, "last_reload") {
		t.Errorf("last_reload before any reload:\n%s", js)
	}
}

// Over the socket the Host is checked too: an SSH tunnel to the socket
// (ssh -L 9101:/run/frontdoor/admin.sock) is in a browser's reach, and a
// page whose name was rebound to 127.0.0.1 must not read through it.
func TestUnixSocketHost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.sock")
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, New(Options{Source: &fakeSource{}}), ln)
	hc := unixClient(path)
	for host, want := range map[string]int{"localhost": 200, "localhost:9101": 200, "127.0.0.1:9101": 200, "evil.example": 421, "evil.example:9101": 421} {
		if status, _, _ := do(t, hc, "http://localhost", req{path: "/v1/status", host: host}); status != want {
			t.Errorf("Host %q on the socket: %d, want %d", host, status, want)
		}
	}
	// No browser login on the socket: the peer's uid is the credential.
	if status, _, hdr := do(t, hc, "http://localhost", req{path: "/login?token=" + roSecret}); status == 200 || hdr.Get("Set-Cookie") != "" {
		t.Errorf("/login on the socket: %d %v", status, hdr)
	}
}

// Certificates: chaining to the client CA is not enough, the name must be
// listed; a read-only name reads only.
func TestClientCertificateNames(t *testing.T) {
	p := newPKI(t)
	alice, aliceKey := p.issue(t, "ops-alice", x509.ExtKeyUsageClientAuth)
	// The name that counts may be a SAN: CN "dashboard", DNS name grafana.mgmt.
	graf, grafKey := p.issue(t, "dashboard", x509.ExtKeyUsageClientAuth, "grafana.mgmt.example.edu")
	eve, eveKey := p.issue(t, "eve", x509.ExtKeyUsageClientAuth)
	src := &fakeSource{}
	base := startConfigured(t, config.Gateway{AdminSocket: config.AdminSocketOff, AdminListen: "127.0.0.1:0",
		AdminTLSCert: p.serverCert, AdminTLSKey: p.serverKey, AdminClientCA: p.caFile,
		AdminClientNames: []string{"OPS-Alice"}, AdminReadOnlyClientNames: []string{"grafana.mgmt.example.edu"}}, src)
	drain := req{method: "POST", path: "/v1/drain", ctype: "application/json", body: drainBody}
	for _, tt := range []struct {
		name      string
		cert, key string
		r         req
		status    int
		want      string
	}{
		{"listed admin drains", alice, aliceKey, drain, 200, "cert:ops-alice"},
		{"read-only name reads", graf, grafKey, req{path: "/v1/status"}, 200, "gw1"},
		{"read-only name may not drain", graf, grafKey, drain, 403, "cert:grafana.mgmt.example.edu is read-only"},
		{"from the CA but not listed", eve, eveKey, req{path: "/v1/nodes"}, 403, `"eve" is not on admin_client_names`},
		{"not listed may not drain", eve, eveKey, drain, 403, "not on admin_client_names"},
		{"listed admin, foreign Host", alice, aliceKey, req{path: "/v1/nodes", host: "evil.example"}, 421, ""},
		{"listed admin, cross-site", alice, aliceKey, req{method: "POST", path: "/v1/drain", ctype: "application/json", body: drainBody,
			hdr: map[string]string{"Origin": "https://evil.example"}}, 403, "cross-site"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := src.count()
			status, body, _ := do(t, p.client(t, tt.cert, tt.key), base, tt.r)
			if status != tt.status || !strings.Contains(body, tt.want) {
				t.Fatalf("got %d %q, want %d containing %q", status, body, tt.status, tt.want)
			}
			if status != 200 && src.count() != before {
				t.Fatalf("a refused request drained: %v", src.drains)
			}
		})
	}
	// "*" admits every certificate the CA signed, as before the lists.
	any := startConfigured(t, config.Gateway{AdminSocket: config.AdminSocketOff, AdminListen: "127.0.0.1:0",
		AdminTLSCert: p.serverCert, AdminTLSKey: p.serverKey, AdminClientCA: p.caFile, AdminReadOnlyClientNames: []string{"*"}}, src)
	if status, _, _ := do(t, p.client(t, eve, eveKey), any, req{path: "/v1/nodes"}); status != 200 {
		t.Fatalf("read-only \"*\": %d", status)
	}
	if status, _, _ := do(t, p.client(t, eve, eveKey), any, drain); status != 403 {
		t.Fatalf("read-only \"*\" drained: %d", status)
	}
}

// A TCP listener off loopback without TLS is refused unless allowed.
func TestPlaintextOffLoopback(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("ops "+opsSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Listen(config.Gateway{AdminSocket: config.AdminSocketOff, AdminListen: "0.0.0.0:0", AdminTokenFile: tokens}, Options{Source: &fakeSource{}})
	if err == nil || !strings.Contains(err.Error(), "not loopback and no TLS") {
		t.Fatalf("plaintext on every address: %v", err)
	}
}

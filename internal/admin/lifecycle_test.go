package admin

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
)

// fakeLifecycle answers reloads with what next says and records who asked.
type fakeLifecycle struct {
	mu   sync.Mutex // mu protects the following
	next Reload
	by   []string
}

func (f *fakeLifecycle) Reload(_ context.Context, by string) Reload {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.by = append(f.by, "reload "+by)
	r := f.next
	r.By = by
	return r
}

func (f *fakeLifecycle) Upgrade(by string) Upgrade {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.by = append(f.by, "upgrade "+by)
	return Upgrade{Result: ResultStarted, By: by}
}

// The lifecycle endpoints are authenticated and guarded like drains, and
// closed to read-only credentials; a reload's outcome is its status code
// and the Reload, one problem per line.
func TestLifecycleEndpoints(t *testing.T) {
	lc := &fakeLifecycle{}
	base := startTCP(t, &fakeSource{}, func(o *Options) { o.Lifecycle = lc })
	const js = "application/json"

	if code, _, _ := do(t, nil, base, req{method: "POST", path: "/v1/reload", ctype: js, body: "{}"}); code != 401 {
		t.Fatalf("reload without a token: %d", code)
	}
	if code, _, _ := do(t, nil, base, req{method: "POST", path: "/v1/reload", token: opsSecret, body: "{}",
		ctype: "application/x-www-form-urlencoded"}); code != 415 {
		t.Fatalf("reload from a form: %d", code)
	}
	for _, tt := range []struct {
		next Reload
		code int
	}{
		{Reload{OK: true, Result: ResultOK}, 200},
		{Reload{Result: ResultFailed, Error: "gw.yaml:3: gateway.listen: not host:port\ngw.yaml:9: policy.rules[0].pools: unknown pool"}, 422},
		{Reload{Result: ResultRefused, Error: "gw.yaml:3: gateway.listen: changed"}, 409},
	} {
		lc.mu.Lock()
		lc.next = tt.next
		lc.mu.Unlock()
		code, body, _ := do(t, nil, base, req{method: "POST", path: "/v1/reload", token: opsSecret, ctype: js, body: "{}"})
		var r Reload
		if err := json.Unmarshal([]byte(body), &r); err != nil || code != tt.code || r.Result != tt.next.Result ||
			r.Error != tt.next.Error || r.By != "token:ops" {
			t.Errorf("reload answering %+v: %d %s", tt.next, code, body)
		}
	}
	if code, body, _ := do(t, nil, base, req{method: "POST", path: "/v1/upgrade", token: opsSecret, ctype: js, body: "{}"}); code != 200 ||
		!strings.Contains(body, `"started"`) {
		t.Fatalf("upgrade: %d %s", code, body)
	}
	if got := strings.Join(lc.by, ","); got != "reload token:ops,reload token:ops,reload token:ops,upgrade token:ops" {
		t.Fatalf("asked by %s", got)
	}
}

// SetTokens replaces the accepted tokens at once.
func TestSetTokens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Source: &fakeSource{}, Tokens: testTokens(t), AllowedHosts: DefaultAllowedHosts(ln.Addr().String())})
	serve(t, s, ln)
	base := "http://" + ln.Addr().String()
	if code, _, _ := do(t, nil, base, req{path: "/v1/nodes", token: opsSecret}); code != 200 {
		t.Fatalf("before: %d", code)
	}
	next, err := ParseTokens("tokens", []byte("ci ci-secret-0123456789abcdef\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.SetTokens(next)
	if code, _, _ := do(t, nil, base, req{path: "/v1/nodes", token: opsSecret}); code != 401 {
		t.Fatalf("a token the new file dropped: %d", code)
	}
	if code, _, _ := do(t, nil, base, req{path: "/v1/nodes", token: "ci-secret-0123456789abcdef"}); code != 200 {
		t.Fatalf("a token the new file added: %d", code)
	}
}

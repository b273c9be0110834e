package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// chromiumFlags are the flags headless Chromium needs on these machines
// (a fresh profile each run, no background traffic, no sandbox as root).
var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
	// Let the login page's move to /status (a meta refresh) happen
	// before the page is dumped or photographed.
	"--virtual-time-budget=5000"}

// chromium runs headless Chromium with a new empty profile and returns
// its standard output.
func chromium(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is needed for the status page test (make deps installs Debian's chromium): %v", err)
	}
	profile := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, append(append(append([]string(nil), chromiumFlags...), "--user-data-dir="+profile), args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

// The status page, in a real browser, of a real gateway in front of real
// sshd nodes: a browser with a read-only token logs in once and sees the
// nodes, the live sessions, the refusals and the gateway; without the
// token it sees nothing. The screenshot is docs/img/status.png when
// FRONTDOOR_STATUS_SCREENSHOT names that file.
func TestStatusPageInChromium(t *testing.T) {
	ctx := testCtx(t, 4*time.Minute)
	dir := t.TempDir()
	const roToken, opsToken = "dashboard-read-only-0123456789", "ops-full-admin-0123456789abcd"
	tokens := filepath.Join(dir, "admin-tokens")
	if err := os.WriteFile(tokens, []byte("ops "+opsToken+"\ndashboard "+roToken+" read-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := harness.NewGateway(t, harness.GatewayOptions{Config: harness.GatewayConfig{
		Name: "gw-status", Keys: keys, AdminListen: "127.0.0.1:0", AdminTokenFile: tokens,
		ConnectTimeout: 20 * time.Second,
		Nodes:          []harness.NodeEntry{login1.Entry("general"), login2.Entry("general")},
		UsersFile:      filepath.Join(base, "gw", "users.yaml"),
		Rules: []policy.Rule{
			{Name: "suspended", Groups: []string{"suspended"}, Deny: true, Message: "your access is suspended"},
			{Name: "everyone", Groups: []string{"*"}, Pools: []string{"general"}},
		},
	}})
	var url string
	for _, a := range g.Parts().AdminAddrs() {
		if strings.HasPrefix(a, "127.0.0.1:") {
			url = "http://" + a
		}
	}
	if url == "" {
		t.Fatalf("no TCP admin listener among %v", g.Parts().AdminAddrs())
	}

	// Two sessions that stay open, one login the policy denies, and one
	// for a name nobody has.
	for _, u := range []*harness.User{alice, bob} {
		cmd := g.Client(u).SSH(ctx, u.Name, "sleep 600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	if err := harness.WaitFor(ctx, time.Minute, func() error {
		if n := len(g.Server().Sessions()); n != 2 {
			return fmt.Errorf("%d sessions", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if r := run(g.Client(dave).SSH(ctx, dave.Name, "true"), nil); r.Err == nil {
		t.Fatalf("dave (suspended) logged in: %s", r)
	}
	if r := run(g.Client(alice).SSH(ctx, "nosuchuser", "true"), nil); r.Err == nil {
		t.Fatalf("an unknown user logged in: %s", r)
	}

	// Without a credential the browser gets nothing but the refusal.
	if dom := chromium(ctx, t, "--dump-dom", url+"/status"); strings.Contains(dom, "login1") || !strings.Contains(dom, "no credentials") {
		t.Fatalf("the status page without a credential:\n%s", dom)
	}
	// An admin token is not taken in an address.
	if dom := chromium(ctx, t, "--dump-dom", url+"/login?token="+opsToken); strings.Contains(dom, "login1") || !strings.Contains(dom, "only a read-only token") {
		t.Fatalf("/login with an admin token:\n%s", dom)
	}
	// With the read-only token: the login page moves on to the status
	// page, which the cookie opens.
	dom := chromium(ctx, t, "--dump-dom", url+"/login?token="+roToken)
	for _, want := range []string{"<title>frontdoor gw-status</title>", "Login nodes", ">login1<", ">login2<", "st-up",
		"2</b><span>sessions through this gateway", "auth:publickey:denied", "auth:publickey:fail", "gw-status (this one)",
		"no node is draining", "no reload since this process started"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the status page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("the page as Chromium built it:\n%s", dom)
	}

	shot := os.Getenv("FRONTDOOR_STATUS_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(dir, "status.png")
	}
	chromium(ctx, t, "--screenshot="+shot, "--window-size=1400,640", url+"/login?token="+roToken)
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 20000 {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
}

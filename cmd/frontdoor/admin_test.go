package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// fakeSource is a gateway as the admin API sees it.
type fakeSource struct {
	mu     sync.Mutex // mu protects the following
	drains []string
}

func (f *fakeSource) Sessions() []admin.Session { return []admin.Session{} }
func (f *fakeSource) Nodes() []admin.NodeInfo {
	return []admin.NodeInfo{{Name: "login1", Pool: "general"}}
}
func (f *fakeSource) Explain(_ context.Context, u string) (string, error) {
	if u == "nobody" {
		return "", errors.New("user nobody: no such user\nsecond line")
	}
	return "explain " + u, nil
}
func (f *fakeSource) Status(context.Context) admin.Status {
	return admin.Status{Gateway: "gw1", Nodes: f.Nodes(), Drains: []admin.Drain{{Node: "login1", By: "unix:root", Message: "kernel update"}},
		Refusals:   admin.Refusals{WindowSeconds: 900, Total: 2, ByReason: []admin.ReasonCount{{Reason: "auth:password:fail", Count: 2}}},
		LastReload: &admin.Reload{OK: false, By: "SIGHUP", Error: "gateway.yaml:3: bad"}}
}
func (f *fakeSource) Drain(node string, on bool, by string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drains = append(f.drains, node+" "+by)
	return nil
}

func (f *fakeSource) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.drains) == 0 {
		return ""
	}
	return f.drains[len(f.drains)-1]
}

const roToken = "grafana-read-only-0123456789"

// startAdmin runs an admin API the way `frontdoor gateway` does, on a
// socket and a token-protected TCP address.
func startAdmin(t *testing.T) (sock, url, token string, src *fakeSource) {
	t.Helper()
	dir := t.TempDir()
	sock = filepath.Join(dir, "admin.sock")
	token = "cli-test-secret-0123456789"
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("ops "+token+"\ngrafana "+roToken+" read-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src = &fakeSource{}
	s, err := admin.Listen(config.Gateway{AdminSocket: sock, AdminListen: "127.0.0.1:0", AdminTokenFile: tokens},
		admin.Options{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	for _, a := range s.Addrs() {
		if strings.HasPrefix(a, "127.0.0.1:") {
			url = "http://" + a
		}
	}
	return sock, url, token, src
}

func TestAdminCLI(t *testing.T) {
	sock, url, token, src := startAdmin(t)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Setenv("FRONTDOOR_ADMIN_TOKEN", "")
	t.Setenv("SUDO_USER", "alice")

	// The socket: no credential needed, the kernel names us.
	if err := runDrain(ctx, "drain", []string{"--admin", sock, "--comment", "test", "login1"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, want := src.last(), "login1 unix:"+me.Username; got != want {
		t.Fatalf("drain by %q, want %q", got, want)
	}
	if err := runNodes(ctx, []string{"--admin", sock}, io.Discard); err != nil {
		t.Fatal(err)
	}
	// The default comes from FRONTDOOR_ADMIN.
	t.Setenv("FRONTDOOR_ADMIN", sock)
	if err := runSessions(ctx, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FRONTDOOR_ADMIN", "")

	// TCP: refused without a token, with a clear way out.
	err = runNodes(ctx, []string{"--admin", url}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "--admin-token-file") {
		t.Fatalf("TCP without a token: %v", err)
	}
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := runDrain(ctx, "undrain", []string{"--admin", url, "--admin-token-file", tokFile, "login1"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := src.last(); got != "login1 token:ops" {
		t.Fatalf("undrain by %q, want token:ops", got)
	}
	t.Setenv("FRONTDOOR_ADMIN_TOKEN", token)
	// host:port, as earlier versions took it.
	if err := runExplain(ctx, []string{"--admin", strings.TrimPrefix(url, "http://"), "alice"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	// The gateway's own NAME SECRET file is not a client token file.
	bad := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(bad, []byte("ops "+token+"\n"), 0o600)
	if err := runNodes(ctx, []string{"--admin", url, "--admin-token-file", bad}, io.Discard); err == nil || !strings.Contains(err.Error(), "token alone") {
		t.Fatalf("NAME SECRET as a client token file: %v", err)
	}
}

func TestAdminCLISocketErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.sock")
	if err := runNodes(ctx, []string{"--admin", missing}, io.Discard); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing socket: %v", err)
	}
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if err := runNodes(ctx, []string{"--admin", stale}, io.Discard); err == nil || !strings.Contains(err.Error(), "stale socket") {
		t.Fatalf("stale socket: %v", err)
	}
	if err := runNodes(ctx, []string{"--admin", "ftp://x"}, io.Discard); err == nil || !strings.Contains(err.Error(), "want a socket path") {
		t.Fatalf("bad URL: %v", err)
	}
}

func TestAdminTargetKinds(t *testing.T) {
	for addr, sock := range map[string]bool{"/run/frontdoor/admin.sock": true, "admin.sock": true, "./gw1/admin.sock": true,
		"127.0.0.1:9101": false, "http://127.0.0.1:9101": false, "https://gw1:9101": false, "[::1]:9101": false} {
		if got := (&adminTarget{addr: addr}).socket(); got != sock {
			t.Errorf("socket(%q) = %v, want %v", addr, got, sock)
		}
	}
}

// As root the socket's mode never refuses us, so the wording for EACCES
// is checked on the error the dialer returns.
func TestAdminCLIPermissionWording(t *testing.T) {
	a := &adminTarget{addr: "/run/frontdoor/admin.sock"}
	err := a.explainDialError(&net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)})
	if !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), "sudo") {
		t.Fatalf("EACCES: %v", err)
	}
}

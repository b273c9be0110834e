package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/alexedwards/argon2id"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/static"
	"github.com/frontdoor-hpc/frontdoor/internal/inventory"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// testGateway is a gateway with a static directory and no reachable nodes:
// enough to test everything that happens before a backend is dialed.
type testGateway struct {
	addr    string
	hostKey ssh.PublicKey
	userKey ssh.Signer // alice's key
	bobKey  ssh.Signer // bob's own key (lab, like alice)
	audit   string
	gw      *Gateway
}

func startTestGateway(t *testing.T, nodes string, gatewayExtra ...string) *testGateway {
	t.Helper()
	return startTestGatewayIn(t, nil, "", nodes, gatewayExtra...)
}

// alicePassword is alice's password in the test users file.
const alicePassword = "correct horse battery"

// startTestGatewayIn starts a test gateway that is a member of cl (may be
// nil), with extra top-level YAML (e.g. a throttle section).
func startTestGatewayIn(t *testing.T, cl *cluster.Cluster, extraYAML, nodes string, gatewayExtra ...string) *testGateway {
	t.Helper()
	dir := t.TempDir()
	hostPub, err := ca.GenerateKeyFile(filepath.Join(dir, "host"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.GenerateKeyFile(filepath.Join(dir, "ca"), ""); err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	userKey, _ := ssh.NewSignerFromKey(priv)
	pwHash, err := argon2id.CreateHash(alicePassword, &argon2id.Params{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	_, bpriv, _ := ed25519.GenerateKey(rand.Reader)
	bobKey, _ := ssh.NewSignerFromKey(bpriv)
	users := fmt.Sprintf("users:\n  - {name: alice, groups: [lab], keys: ['%s'], password_hash: '%s'}\n  - {name: mallory, groups: [outsiders], keys: ['%s']}\n  - {name: bob, groups: [lab], keys: ['%s']}\n",
		strings.TrimSpace(string(ssh.MarshalAuthorizedKey(userKey.PublicKey()))), pwHash,
		strings.TrimSpace(string(ssh.MarshalAuthorizedKey(userKey.PublicKey()))),
		strings.TrimSpace(string(ssh.MarshalAuthorizedKey(bobKey.PublicKey()))))
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(users), 0o600)
	os.WriteFile(filepath.Join(dir, "known_hosts"), nil, 0o600)
	yml := `
gateway: {name: gwtest, listen: "127.0.0.1:0", host_keys: [host], user_ca_key: ca, login_grace_time: 20s` + strings.Join(append([]string{""}, gatewayExtra...), ", ") + `}
backend: {known_hosts: [known_hosts], connect_timeout: 2s}
directory: {kind: static, static: {file: users.yaml}}
nodes: ` + nodes + `
policy:
  rules:
    - {name: lab, groups: [lab], pools: [general]}
audit: {file: audit.jsonl}
` + extraYAML
	gw, addr := serveTestConfig(t, dir, yml, cl)
	return &testGateway{addr: addr, hostKey: hostPub, userKey: userKey, bobKey: bobKey, audit: filepath.Join(dir, "audit.jsonl"), gw: gw}
}

// serveTestConfig parses yml as DIR/gateway.yaml and serves the SSH server
// it describes (newTestServer) on 127.0.0.1 until the test ends.
func serveTestConfig(t *testing.T, dir, yml string, cl *cluster.Cluster) (*Gateway, string) {
	t.Helper()
	cfg, err := config.Parse(filepath.Join(dir, "gateway.yaml"), []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	gw := newTestServer(t, cfg, cl)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); gw.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); gw.Close(); wg.Wait() })
	return gw, ln.Addr().String()
}

// newTestServer is the SSH server alone, built from cfg with the real
// parts it is given in production (static directory, node inventory and
// its live view, audit file), as a member of cl if that is not nil. Whole
// gateway processes are built by internal/assembly (test/harness).
func newTestServer(t *testing.T, cfg *config.Config, cl *cluster.Cluster) *Gateway {
	t.Helper()
	d, err := static.New(cfg.Directory.Static.File)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := node.LoadHostKeys(cfg.Backend.KnownHosts, cfg.Backend.InsecureIgnoreHostKeys)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	inv := inventory.New(cfg.Nodes, keys, log)
	a, err := audit.Open(cfg.Audit.File, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	deps := Deps{Logger: log, Directory: d, Router: inventory.NewRouter(inv, cl, cfg.Route.StaleAfter), NodeKeys: keys, Audit: a}
	if cl != nil {
		deps.Peers = cl
	}
	gw, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

// dial logs in with x/crypto and returns the error and any banners seen.
func (tg *testGateway) dial(user string, auth ...ssh.AuthMethod) (string, error) {
	var banners strings.Builder
	cfg := &ssh.ClientConfig{
		User:            user,
		Auth:            auth,
		HostKeyCallback: ssh.FixedHostKey(tg.hostKey),
		BannerCallback:  func(m string) error { banners.WriteString(m); return nil },
		Timeout:         10 * time.Second,
	}
	c, err := ssh.Dial("tcp", tg.addr, cfg)
	if err == nil {
		c.Close()
	}
	return banners.String(), err
}

func TestNoneAuthNeverSucceeds(t *testing.T) {
	tg := startTestGateway(t, `[{name: login1, addr: "127.0.0.1:1", pool: general}]`)
	// No auth methods: x/crypto only sends "none", which the gateway hooks.
	for _, u := range []string{"alice", "mallory", "nobody", "alice+login1"} {
		if _, err := tg.dial(u); err == nil {
			t.Fatalf("user %q logged in with auth method none", u)
		}
	}
}

func TestRefusalsTellProvenUsersWhy(t *testing.T) {
	tg := startTestGateway(t, `[{name: login1, addr: "127.0.0.1:1", pool: general}, {name: other, addr: "127.0.0.1:1", pool: secret}]`)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	wrongKey, _ := ssh.NewSignerFromKey(priv)
	tests := []struct {
		name, user string
		key        ssh.Signer
		banner     string // "" = must see no banner
	}{
		{"wrong key", "alice", wrongKey, ""},
		{"unknown user", "nobody", tg.userKey, ""},
		{"no policy rule", "mallory", tg.userKey, "no access to this cluster"},
		{"unknown node", "alice+login9", tg.userKey, `no login node named "login9"`},
		{"node outside pools", "alice+other", tg.userKey, "pool secret"},
		{"node down", "alice", tg.userKey, "no login node is available"},
		{"named node down", "alice+login1", tg.userKey, "login node login1 is not available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			banner, err := tg.dial(tt.user, ssh.PublicKeys(tt.key))
			if err == nil {
				t.Fatal("logged in")
			}
			if tt.banner == "" && banner != "" {
				t.Fatalf("unproven user was told %q", banner)
			}
			if !strings.Contains(banner, tt.banner) || tt.banner != "" && !strings.HasPrefix(banner, "frontdoor: ") {
				t.Fatalf("banner %q does not contain %q", banner, tt.banner)
			}
		})
	}
	audit, err := os.ReadFile(tg.audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, reason := range []string{`"reason":"key not authorized"`, `"reason":"unknown user"`, `denied by policy`, `connection refused`} {
		if !strings.Contains(string(audit), reason) {
			t.Errorf("audit has no %s:\n%s", reason, audit)
		}
	}
}

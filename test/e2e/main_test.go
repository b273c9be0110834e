// Package e2e_test drives a real frontdoor gateway with the real OpenSSH
// client programs, against real OpenSSH sshd login nodes on loopback.
//
// One TestMain starts the shared world: three sshd nodes (login1 and login2
// in pool "general"; badnode, whose known_hosts entry is deliberately wrong,
// in pool "broken"), Unix users, and one in-process gateway. Tests run the
// ssh/scp/sftp/rsync binaries against it and check what arrived on the
// nodes (which share this machine's file system) and what the gateway
// audited.
//
// Missing prerequisites (programs, root) fail the run loudly: a test that
// skips silently proves nothing.
package e2e_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// The shared world, set up by TestMain.
var (
	base    string // world-readable scratch root
	keys    *harness.ClusterKeys
	gw      *harness.Gateway
	login1  *harness.Node
	login2  *harness.Node
	badnode *harness.Node

	alice *harness.User // group nlp-lab: pool general, default forwarding
	bob   *harness.User // group vision-lab: pool general, no forwarding at all
	carol *harness.User // may use pools general and broken (badnode)
	dave  *harness.User // group suspended: denied by policy
	erin  *harness.User // group gpu-lab: a Slurm grant, job defaults, idle timeout

	directKnownHosts string // known_hosts for logging in to the nodes directly
	// frontdoorBin is the binary the nodes' sshd runs to check principals.
	frontdoorBin string
)

// Unix user names are prefixed so that they cannot collide with the
// directory users of other test suites (see docs/ARCHITECTURE.md, the
// winbind pitfall).
// idleTimeout is erin's rule's idle timeout: short, so that a test can
// watch a session be closed.
const idleTimeout = 4 * time.Second

const (
	aliceName = "e2e-alice"
	bobName   = "e2e-bob"
	carolName = "e2e-carol"
	daveName  = "e2e-dave"
	erinName  = "e2e-erin"
)

// requiredPrograms must be installed for this suite (make deps).
var requiredPrograms = []string{
	harness.SSHDPath, "ssh", "scp", "sftp", "rsync", "socat", "ssh-agent", "ssh-add",
	"ssh-keygen", "useradd", "usermod", "sha256sum", "bash", "pgrep",
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := harness.Prerequisites(requiredPrograms...); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: e2e: %v\n", err)
		return 1
	}
	var err error
	base, err = os.MkdirTemp("", "frontdoor-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	// Node-side users must reach their per-test directories below base.
	os.Chmod(base, 0o755)
	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		if os.Getenv("FRONTDOOR_E2E_KEEP") == "" {
			os.RemoveAll(base)
		} else {
			fmt.Fprintln(os.Stderr, "e2e state kept in", base)
		}
	}()
	if err := setup(ctx, &stops); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: e2e setup:", err)
		fmt.Fprintln(os.Stderr, "state kept in", base)
		os.Setenv("FRONTDOOR_E2E_KEEP", "1")
		return 1
	}
	code := m.Run()
	if code != 0 {
		os.Setenv("FRONTDOOR_E2E_KEEP", "1")
	}
	return code
}

func setup(ctx context.Context, stops *[]func()) error {
	var err error
	if keys, err = harness.Keys(filepath.Join(base, "keys")); err != nil {
		return err
	}
	var rmBin func()
	if frontdoorBin, rmBin, err = harness.BuildFrontdoor(ctx, filepath.Join("..", "..")); err != nil {
		return err
	}
	*stops = append(*stops, rmBin)
	udir := filepath.Join(base, "users")
	for _, u := range []struct {
		p              **harness.User
		name, password string
		groups         []string
	}{
		{&alice, aliceName, "alice-correct-horse", []string{"nlp-lab"}},
		{&bob, bobName, "", []string{"vision-lab"}},
		{&carol, carolName, "", []string{"ops"}},
		{&dave, daveName, "", []string{"suspended"}},
		{&erin, erinName, "", []string{"gpu-lab"}},
	} {
		if *u.p, err = harness.NewUser(udir, u.name, u.password, u.groups...); err != nil {
			return err
		}
		if err := harness.EnsureUnixUser(u.name); err != nil {
			return err
		}
	}

	nodes := []struct {
		p    **harness.Node
		name string
		addr string
	}{
		{&login1, "login1", "127.0.1.21"},
		{&login2, "login2", "127.0.1.22"},
		{&badnode, "badnode", "127.0.1.23"},
	}
	var direct []string
	for _, n := range nodes {
		node, err := harness.StartNode(ctx, harness.NodeOptions{
			Name: n.name, Addr: n.addr, Dir: filepath.Join(base, "nodes", n.name), UserCAPub: keys.UserCAPub,
			Frontdoor: frontdoorBin, // the deploy/ drop-in's principal check, for real
		})
		if err != nil {
			return err
		}
		*stops = append(*stops, func() { node.Stop() })
		*n.p = node
		direct = append(direct, node.KnownHostsLine())
		for _, u := range []*harness.User{alice, bob} {
			if err := node.Authorize(u.Name, u.AuthorizedKey()); err != nil {
				return err
			}
		}
	}
	directKnownHosts = filepath.Join(base, "direct_known_hosts")
	if err := os.WriteFile(directKnownHosts, []byte(strings.Join(direct, "\n")+"\n"), 0o644); err != nil {
		return err
	}

	usersFile := filepath.Join(base, "gw", "users.yaml")
	os.MkdirAll(filepath.Dir(usersFile), 0o755)
	if err := harness.WriteUsersFile(usersFile, alice, bob, carol, dave, erin); err != nil {
		return err
	}
	// badnode's known_hosts entry names a key the node does not have.
	_, wrong, _ := ed25519.GenerateKey(rand.Reader)
	wrongSigner, _ := ssh.NewSignerFromKey(wrong)
	bad := badnode.Entry("broken")
	bad.KnownHosts = harness.NodeKnownHostsLine(badnode.Name(), wrongSigner.PublicKey())
	// "impostor" is listed at login2's address with login1's key: host keys
	// are bound to names, so login2 cannot pass as impostor even though
	// its own key (under its own name) is trusted.
	impostor := harness.NodeEntry{Name: "impostor", Addr: login2.Addr(), Pool: "broken",
		KnownHosts: harness.NodeKnownHostsLine("impostor", login1.HostKey())}

	// The gateway lives until the deferred Close, not for the setup's ctx.
	gw, err = harness.StartGateway(context.Background(), harness.GatewayOptions{
		Dir: filepath.Join(base, "gw"),
		Config: harness.GatewayConfig{
			Name: "gw-e2e",
			// Generous: on 2 cores, 32 logins at once plus other test
			// packages can slow sshd's handshake past the 5 s default.
			ConnectTimeout: 20 * time.Second,
			Keys:           keys,
			// The load test is 200 users arriving at once from one
			// address, like a campus behind one NAT: exempt it from
			// the per-source limits (test/adversarial checks those).
			Edit: func(c *config.Config) {
				c.Gateway.AdmissionExempt, c.Gateway.MaxStartups = []string{"127.0.0.0/8"}, 1000
			},
			Nodes:     []harness.NodeEntry{login1.Entry("general"), login2.Entry("general"), bad, impostor},
			UsersFile: usersFile,
			Rules: []policy.Rule{
				{Name: "suspended", Groups: []string{"suspended"}, Deny: true, Message: "your access is suspended; mail hpc-help@example.edu"},
				{Name: "gpu-lab", Groups: []string{"gpu-lab"}, Pools: []string{"general"}, IdleTimeout: idleTimeout, IdleWarning: idleTimeout / 2,
					ForwardTo: []string{"node", "127.0.0.0/8"},
					Slurm: &policy.Slurm{Account: "gpulab", Partitions: []string{"general", "h100"}, DefaultPartition: "h100",
						GPUsPerUser: 2, GPUsPerAccount: 8, SetJobDefaults: true}},
				{Name: "ops", Users: []string{carolName}, Pools: []string{"general", "broken"}},
				{Name: "vision-no-forwarding", Groups: []string{"vision-lab"}, Pools: []string{"general"}, Forwarding: []string{}},
				{Name: "everyone", Groups: []string{"*"}, Pools: []string{"general"}},
			},
		},
	})
	if err != nil {
		return err
	}
	*stops = append(*stops, func() { gw.Close() })
	return nil
}

// client returns an OpenSSH client for u pointed at the gateway.
func client(u *harness.User) *harness.Client { return gw.Client(u) }

// directClient returns an OpenSSH client for u pointed straight at node n.
func directClient(u *harness.User, n *harness.Node) *harness.Client {
	return &harness.Client{Host: n.Host(), Port: n.Port(), KnownHosts: directKnownHosts, Identity: u.KeyPath}
}

// testCtx is a context bounded by d and by the test's own deadline.
func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	if dl, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-5*time.Second))
	}
	t.Cleanup(cancel)
	return ctx
}

// run runs an ssh/scp/... command with stdin and returns what it did.
func run(cmd *exec.Cmd, stdin io.Reader) harness.Result { return harness.Run(cmd, stdin) }

// userDir returns a fresh directory owned by u's Unix account, for files
// the node-side session writes.
func userDir(t *testing.T, u *harness.User) string {
	t.Helper()
	dir, err := os.MkdirTemp(base, strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, err := harness.UnixIDs(u.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mustExit fails the test unless r exited with code.
func mustExit(t *testing.T, r harness.Result, code int) {
	t.Helper()
	if r.ExitCode != code {
		t.Fatalf("want exit %d, got %s", code, r)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

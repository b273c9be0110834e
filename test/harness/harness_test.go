package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/static"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
)

// TestWriteGatewayConfigLoads: what the harness writes is a configuration
// the gateway accepts, with the users file and the forwarding lists meant.
func TestWriteGatewayConfigLoads(t *testing.T) {
	dir := t.TempDir()
	keys, err := Keys(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := NewUser(filepath.Join(dir, "users"), "alice", "", "lab")
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "users.yaml")
	if err := WriteUsersFile(users, u); err != nil {
		t.Fatal(err)
	}
	if _, err := static.New(users); err != nil {
		t.Fatalf("users file rejected: %v", err)
	}
	path, err := WriteGatewayConfig(filepath.Join(dir, "gw"), GatewayConfig{
		Keys:      keys,
		UsersFile: users,
		Nodes:     []NodeEntry{{Name: "n1", Addr: "127.0.1.9:2222", Pool: "p", KnownHosts: KnownHostsLine("127.0.1.9:2222", keys.HostPublicKey)}},
		Rules: []policy.Rule{
			{Name: "none", Users: []string{"bob"}, Pools: []string{"p"}, Forwarding: []string{}},
			{Name: "default", Groups: []string{"*"}, Pools: []string{"p"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config rejected: %v", err)
	}
	if got := cfg.Policy.Rules[0].Forwarding; got == nil || len(got) != 0 {
		t.Errorf("explicit empty forwarding became %#v", got)
	}
	if got := cfg.Policy.Rules[1].Forwarding; got != nil {
		t.Errorf("omitted forwarding became %#v", got)
	}
	if !reflect.DeepEqual(cfg.Nodes, []node.Node{{Name: "n1", Addr: "127.0.1.9:2222", Pool: "p"}}) {
		t.Errorf("nodes = %+v", cfg.Nodes)
	}
	if want := filepath.Join(dir, "gw", "admin.sock"); cfg.Gateway.AdminSocket != want {
		t.Errorf("admin socket %q, want %q", cfg.Gateway.AdminSocket, want)
	}
	// A directory too deep for a socket path still gives a valid config.
	deep := filepath.Join(dir, strings.Repeat("d", 60), strings.Repeat("e", 60))
	path, err = WriteGatewayConfig(deep, GatewayConfig{Keys: keys, UsersFile: users,
		Nodes: []NodeEntry{{Name: "n1", Addr: "127.0.1.9:2222"}}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = config.Load(path); err != nil || len(cfg.Gateway.AdminSocket) > config.MaxSocketPath {
		t.Fatalf("deep directory: %v %q", err, cfg.Gateway.AdminSocket)
	}
}

// What the harness writes from the real types, config.Load reads back as
// the same configuration (a second write of it is the same file).
func TestGatewayConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	keys, err := Keys(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	path, err := WriteGatewayConfig(filepath.Join(dir, "gw"), GatewayConfig{Keys: keys, UsersFile: filepath.Join(dir, "users.yaml"),
		Nodes: []NodeEntry{{Name: "n1", Addr: "127.0.1.9:2222"}},
		Edit: func(c *config.Config) {
			c.Gateway.MaxStartups, c.Gateway.AuthTimeout = 7, 9*time.Second
			c.Backend.DenyPrincipals = []string{}
			sl := slurm.DefaultConfig()
			sl.Partitions = []string{"general"}
			c.Slurm = &sl
		}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.MaxStartups != 7 || cfg.Gateway.AuthTimeout != 9*time.Second || cfg.Slurm == nil || cfg.Cluster != nil ||
		cfg.Backend.DenyPrincipals == nil || len(cfg.Backend.DenyPrincipals) != 0 {
		t.Fatalf("loaded %+v %+v %+v", cfg.Gateway, cfg.Backend, cfg.Slurm)
	}
	// Loading fills in derived defaults (handshake_timeout from
	// auth_timeout, ...); from then on, writing and loading change nothing.
	var files []string
	for i := range 2 {
		p, err := WriteConfig(filepath.Join(dir, fmt.Sprintf("again%d.yaml", i)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		files = append(files, string(b))
		if cfg, err = config.Load(p); err != nil {
			t.Fatal(err)
		}
	}
	if files[0] != files[1] {
		t.Fatalf("a loaded configuration writes another file:\n%s\n---\n%s", files[0], files[1])
	}
}

func TestKnownHostsLine(t *testing.T) {
	keys, err := Keys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for addr, prefix := range map[string]string{
		"127.0.1.1:22":   "127.0.1.1 ssh-ed25519 ",
		"127.0.0.1:2222": "[127.0.0.1]:2222 ssh-ed25519 ",
	} {
		if got := KnownHostsLine(addr, keys.HostPublicKey); !strings.HasPrefix(got, prefix) {
			t.Errorf("%s: %q", addr, got)
		}
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"ssh", "-o", "UserKnownHostsFile=/a b/k", "it's"})
	want := `ssh -o 'UserKnownHostsFile=/a b/k' 'it'\''s'`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}

func TestSSHArgsSplitsOptionsFromCommand(t *testing.T) {
	c := &Client{Host: "127.0.0.1", Port: 2222, KnownHosts: "/kh", Identity: "/id"}
	a := c.SSHArgs("alice", "-N", "-L", "1:h:2", "echo", "-n", "x")
	i := indexOf(a, "127.0.0.1")
	if i < 0 || !reflect.DeepEqual(a[i+1:], []string{"echo", "-n", "x"}) || indexOf(a, "-N") > i || indexOf(a, "1:h:2") > i {
		t.Errorf("args = %q", a)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

package harness

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/assembly"
	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/throttle"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf"
)

// NodeEntry is one login node in a gateway configuration, with the
// known_hosts line the gateway verifies it with (by node name).
type NodeEntry struct {
	Name string
	Addr string // host:port
	Pool string // default "default"
	// KnownHosts is the node's known_hosts line; a test can put a wrong
	// one here to see the node refused.
	KnownHosts string
}

// Entry describes n for a gateway configuration, with its real host key.
func (n *Node) Entry(pool string) NodeEntry {
	return NodeEntry{Name: n.name, Addr: n.Addr(), Pool: pool, KnownHosts: NodeKnownHostsLine(n.name, n.hostKey)}
}

// GatewayConfig is what the harness needs to write a gateway configuration.
// The harness starts from config.DefaultConfig, fills in what a test
// gateway needs (the fields below), lets Edit change anything else on the
// real types, and writes the file with yamlconf.Encode; the gateway then
// loads it with config.Load, as the binary does.
type GatewayConfig struct {
	// Name is gateway.name (default "gw1").
	Name string
	// Listen is gateway.listen (default "127.0.0.1:0": the assembly binds
	// a free port, Addr says which).
	Listen string
	// AdminSocket is gateway.admin_socket: default DIR/admin.sock (never
	// the system's /run/frontdoor, which gateways of one test would share;
	// a short path under the temporary directory if DIR is too long for a
	// socket); "off" for none. Tests reach it with AdminGet.
	AdminSocket string
	// AdminListen is gateway.admin_listen (default: none). TCP needs
	// authentication: AdminTokenFile (see WriteAdminTokens), or TLS files
	// set in Edit.
	AdminListen    string
	AdminTokenFile string
	// Keys are the cluster's keys: the gateway presents Keys.HostKey and
	// signs with a user CA of its own, Keys.GatewayCA(Name), which the
	// nodes trust (Edit may point gateway.user_ca_key elsewhere, or set
	// user_ca_kms).
	Keys  *ClusterKeys
	Nodes []NodeEntry
	// UsersFile is the static directory's users file (see WriteUsersFile);
	// Edit may set another directory instead.
	UsersFile string
	// Rules are the policy rules; default one rule "everyone" granting
	// every pool of Nodes to everyone, default forwarding.
	Rules []policy.Rule
	// AuditFile defaults to DIR/audit.jsonl.
	AuditFile string
	Banner    string
	// LogLevel is log.level (default "debug").
	LogLevel string
	// ConnectTimeout is backend.connect_timeout (default: the config's).
	ConnectTimeout time.Duration
	// MaxAttempts is backend.max_attempts (default: the config's).
	MaxAttempts int
	// RefusalMessage is policy.refusal_message.
	RefusalMessage string
	// ExtraKnownHosts are further lines of the backend known_hosts (nodes
	// that discovery, not Nodes, brings).
	ExtraKnownHosts []string
	// Edit, if set, changes the configuration after the harness filled it
	// in (admission limits, a directory or slurm section, ...).
	Edit func(*config.Config)
}

// GatewayConfigFor is the configuration WriteGatewayConfig writes for c in
// dir (it writes the backend known_hosts file DIR/nodes_known_hosts).
func GatewayConfigFor(dir string, c GatewayConfig) (*config.Config, error) {
	if c.Keys == nil {
		return nil, errors.New("harness: GatewayConfig needs Keys")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	cfg := config.DefaultConfig()
	g := &cfg.Gateway
	g.Name, g.Listen = cmp.Or(c.Name, "gw1"), cmp.Or(c.Listen, "127.0.0.1:0")
	g.HostKeys = []string{c.Keys.HostKey}
	// Each gateway its own user CA, which the nodes trust with the others.
	var err error
	if g.UserCAKey, err = c.Keys.GatewayCA(g.Name); err != nil {
		return nil, err
	}
	g.AdminSocket = cmp.Or(c.AdminSocket, defaultAdminSocket(dir))
	g.AdminListen, g.AdminTokenFile, g.Banner = c.AdminListen, c.AdminTokenFile, c.Banner
	var kh strings.Builder
	var pools []string
	for _, n := range c.Nodes {
		n.Pool = cmp.Or(n.Pool, node.DefaultPool)
		cfg.Nodes = append(cfg.Nodes, node.Node{Name: n.Name, Addr: n.Addr, Pool: n.Pool})
		if n.KnownHosts != "" {
			kh.WriteString(strings.TrimSpace(n.KnownHosts) + "\n")
		}
		if !slices.Contains(pools, n.Pool) {
			pools = append(pools, n.Pool)
		}
	}
	for _, l := range c.ExtraKnownHosts {
		kh.WriteString(strings.TrimSpace(l) + "\n")
	}
	knownHosts := filepath.Join(dir, "nodes_known_hosts")
	if err := os.WriteFile(knownHosts, []byte(kh.String()), 0o644); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	cfg.Backend.KnownHosts = []string{knownHosts}
	if c.ConnectTimeout > 0 {
		cfg.Backend.ConnectTimeout = c.ConnectTimeout
	}
	if c.MaxAttempts > 0 {
		cfg.Backend.MaxAttempts = c.MaxAttempts
	}
	cfg.Directory.Kind, cfg.Directory.Static.File = source.KindStatic, c.UsersFile
	cfg.Policy.Rules = c.Rules
	if cfg.Policy.Rules == nil {
		cfg.Policy.Rules = []policy.Rule{{Name: "everyone", Groups: []string{"*"}, Pools: pools}}
	}
	if c.RefusalMessage != "" {
		cfg.Policy.RefusalMessage = c.RefusalMessage
	}
	cfg.Audit.File = cmp.Or(c.AuditFile, filepath.Join(dir, "audit.jsonl"))
	cfg.Log.Level, cfg.Log.Format = cmp.Or(c.LogLevel, "debug"), "json"
	if c.Edit != nil {
		c.Edit(&cfg)
	}
	return &cfg, nil
}

// WriteGatewayConfig writes DIR/gateway.yaml (and the backend known_hosts
// file DIR/nodes_known_hosts) for c, and returns the configuration's path.
func WriteGatewayConfig(dir string, c GatewayConfig) (string, error) {
	cfg, err := GatewayConfigFor(dir, c)
	if err != nil {
		return "", err
	}
	return WriteConfig(filepath.Join(dir, "gateway.yaml"), cfg)
}

// WriteConfig writes cfg (a gateway configuration built with the real
// types) to path, as a file config.Load reads back into the same value.
func WriteConfig(path string, cfg *config.Config) (string, error) {
	b, err := yamlconf.Encode(cfg)
	if err != nil {
		return "", fmt.Errorf("harness: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("harness: %w", err)
	}
	return path, nil
}

// defaultAdminSocket is DIR/admin.sock, or, when that is longer than a
// Unix socket path may be (a test's directory named after a long subtest),
// a short path of its own under the temporary directory.
func defaultAdminSocket(dir string) string {
	p := filepath.Join(dir, "admin.sock")
	if len(p) <= config.MaxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(os.TempDir(), fmt.Sprintf("frontdoor-admin-%x", sum[:6]), "admin.sock")
}

// GatewayOptions describe an in-process gateway.
type GatewayOptions struct {
	// Dir receives gateway.yaml, the known_hosts files, the audit file and
	// gateway.log.
	Dir    string
	Config GatewayConfig
	// Logger defaults to JSON lines in DIR/gateway.log.
	Logger *slog.Logger
}

// Gateway is a frontdoor gateway running in this process on 127.0.0.1,
// built and run by internal/assembly exactly as `frontdoor gateway` runs:
// directory, inventory, gossip, audit, the SSH server, the admin API, the
// listeners and GC tuning.
type Gateway struct {
	srv        *assembly.Gateway
	hostKey    ssh.PublicKey
	knownHosts string
	logFile    *os.File
	stop       context.CancelFunc
	ran        chan error
	closeOnce  sync.Once
	closeErr   error
}

// StartGateway writes the configuration, loads it with config.Load and
// builds, listens and runs the gateway through internal/assembly, as the
// binary does. ctx bounds the gateway's life as well; Close stops it and
// waits. Tests that own their gateway use NewGateway, which closes it when
// the test ends.
func StartGateway(ctx context.Context, o GatewayOptions) (*Gateway, error) {
	path, err := WriteGatewayConfig(o.Dir, o.Config)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("harness: gateway config: %w", err)
	}
	g := &Gateway{hostKey: o.Config.Keys.HostPublicKey, ran: make(chan error, 1)}
	log := o.Logger
	if log == nil {
		if g.logFile, err = os.OpenFile(filepath.Join(o.Dir, "gateway.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		log = slog.New(slog.NewJSONHandler(g.logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	fail := func(err error) (*Gateway, error) {
		if g.srv != nil {
			g.srv.Close()
		}
		if g.logFile != nil {
			g.logFile.Close()
		}
		return nil, err
	}
	if g.srv, err = assembly.Build(ctx, cfg, log); err != nil {
		return fail(fmt.Errorf("harness: gateway: %w", err))
	}
	if err := g.srv.Listen(); err != nil {
		return fail(fmt.Errorf("harness: gateway: %w", err))
	}
	g.knownHosts = filepath.Join(o.Dir, "client_known_hosts")
	if err := os.WriteFile(g.knownHosts, []byte(KnownHostsLine(g.Addr(), g.hostKey)+"\n"), 0o644); err != nil {
		return fail(fmt.Errorf("harness: %w", err))
	}
	var runCtx context.Context
	runCtx, g.stop = context.WithCancel(ctx)
	go func() { g.ran <- g.srv.Run(runCtx) }()
	return g, nil
}

// NewGateway is StartGateway for one test: the gateway lives in
// t.TempDir() (unless o.Dir is set) and is closed when the test ends.
func NewGateway(t testing.TB, o GatewayOptions) *Gateway {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	g, err := StartGateway(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("closing gateway: %v", err)
		}
	})
	return g
}

// Parts is the gateway's assembly: the SSH server, its directory, cluster
// and inventory, as the process runs them.
func (g *Gateway) Parts() *assembly.Gateway { return g.srv }

// Server is the SSH server under test (sessions, ...).
func (g *Gateway) Server() *gateway.Gateway { return g.srv.SSH }

// Config is the loaded configuration.
func (g *Gateway) Config() *config.Config { return g.srv.Config }

// Addr is the gateway's SSH address, 127.0.0.1:PORT.
func (g *Gateway) Addr() string { return g.srv.Addr().String() }

// Host is the gateway's IP address.
func (g *Gateway) Host() string { return g.srv.Addr().(*net.TCPAddr).IP.String() }

// Port is the gateway's SSH port.
func (g *Gateway) Port() int { return g.srv.Addr().(*net.TCPAddr).Port }

// HostKey is the key clients see.
func (g *Gateway) HostKey() ssh.PublicKey { return g.hostKey }

// KnownHostsFile is a client known_hosts file trusting this gateway.
func (g *Gateway) KnownHostsFile() string { return g.knownHosts }

// AuditFile is the gateway's audit file (JSON lines).
func (g *Gateway) AuditFile() string { return g.srv.Config.Audit.File }

// Close stops the gateway, ends its sessions and waits for them. Later
// calls return the first call's result.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.stop()
		g.closeErr = <-g.ran
		if g.logFile != nil {
			g.logFile.Close()
		}
	})
	return g.closeErr
}

// Client is an OpenSSH client configuration pointed at this gateway.
func (g *Gateway) Client(u *User) *Client {
	return &Client{Host: g.Host(), Port: g.Port(), KnownHosts: g.knownHosts, Identity: u.KeyPath}
}

// DialGo logs in with Go's SSH client as login ("alice" or "alice+login2")
// with u's key.
func (g *Gateway) DialGo(ctx context.Context, login string, u *User) (*ssh.Client, error) {
	return DialSSH(ctx, g.Addr(), login, g.hostKey, ssh.PublicKeys(u.Signer))
}

// DialSSH is an x/crypto/ssh login to addr that trusts exactly hostKey,
// bounded by ctx and 30 s.
func DialSSH(ctx context.Context, addr, user string, hostKey ssh.PublicKey, auth ...ssh.AuthMethod) (*ssh.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	cc, chans, reqs, err := ssh.NewClientConn(nc, addr, &ssh.ClientConfig{
		User:            user,
		Auth:            auth,
		HostKeyCallback: ssh.FixedHostKey(hostKey),
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return ssh.NewClient(cc, chans, reqs), nil
}

// AuditEvents reads every event from the gateway's audit file.
func (g *Gateway) AuditEvents() ([]audit.Event, error) {
	return ReadAudit(g.AuditFile())
}

// WaitAudit waits until an audit event satisfies match and returns it.
func (g *Gateway) WaitAudit(ctx context.Context, timeout time.Duration, match func(audit.Event) bool) (audit.Event, error) {
	var found audit.Event
	err := WaitFor(ctx, timeout, func() error {
		evs, err := g.AuditEvents()
		if err != nil {
			return err
		}
		for _, e := range evs {
			if match(e) {
				found = e
				return nil
			}
		}
		return fmt.Errorf("no matching audit event among %d", len(evs))
	})
	return found, err
}

// ReadAudit parses an audit file (one JSON event per line).
func ReadAudit(path string) ([]audit.Event, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var evs []audit.Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e audit.Event
		if err := json.Unmarshal(line, &e); err != nil {
			continue // a line being written right now
		}
		evs = append(evs, e)
	}
	return evs, nil
}

// GenerousThrottle keeps the password throttle out of the way of tests
// whose clients all connect from 127.0.0.1 and take wrong passwords on
// purpose: a hundred failures per account, no per-source backoff.
func GenerousThrottle(t *throttle.Config) {
	t.UserFailures, t.SourceFailures = 100, 100000
	t.BaseDelay, t.MaxDelay = time.Nanosecond, time.Nanosecond
}

// Package stack starts frontdoor's local stack: a Samba AD DC, Slurm with
// accounting, real OpenSSH login nodes on 127.0.1.x with an agent each,
// local Unix users, and gateways as separate processes of the frontdoor
// binary, all gossiping. `make run` (test/cmd/stack) runs it in the
// foreground and writes its Info as stack.json; the soak (test/soak) runs
// it under load and breaks its parts one at a time, which is why every
// process of it can be killed and started again from here.
//
// Start returns once every part answers and every gateway routes over
// every node's health; Close stops every process it started and removes
// nothing outside the state directory (the Unix users stay, as the next
// run reuses them).
package stack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-ldap/ldap/v3"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/harness/samba"
	slurmh "github.com/frontdoor-hpc/frontdoor/test/harness/slurm"
)

// Options configure a stack. The zero value of a field is its default.
type Options struct {
	// StateDir holds everything the stack writes (default ".stack").
	StateDir string
	// Bin is the frontdoor binary (default bin/frontdoor).
	Bin string
	// Nodes and Gateways are how many of each (default 3 and 2).
	Nodes, Gateways int
	// SSHPort and AdminPort are the first gateway's SSH and admin ports,
	// the next gateways' +1, ...; a port in use is replaced by a free
	// one. 0: free ports.
	SSHPort, AdminPort int
	// Directory is the identity source: "ad" (a Samba AD DC, the default)
	// or "static" (a users file).
	Directory string
	// ADAddr is the DC's loopback address (default 127.0.2.1).
	ADAddr string
	// NodeAddr is login node i's loopback address, i from 1 (default
	// 127.0.1.i). sshd listens on port 22 there when it is free.
	NodeAddr func(i int) string
	// NoSlurm runs without Slurm (no accounting, no GPU use in banners).
	NoSlurm bool
	// SlurmSync runs `frontdoor slurm sync` next to the gateways, as the
	// service on a Slurm controller does.
	SlurmSync bool
	// GatewayPatch returns configuration sections for gateway name, merged
	// one level deep into what the stack writes (an audit section, the
	// slurm section's intervals, admission limits).
	GatewayPatch func(name string) map[string]any
	// GatewayCommand changes gateway name's command before each start
	// (another binary, environment variables, a cgroup).
	GatewayCommand func(name string, cmd *exec.Cmd)
	// Log receives progress (default: discarded).
	Log *slog.Logger
}

// Stack is a running local stack.
type Stack struct {
	// Info is what stack.json says (PIDs as at start).
	Info Info
	// Dir is the state directory.
	Dir string
	// DC is the Samba AD DC (nil with the static directory).
	DC *samba.DC
	// Slurm is the Slurm cluster (nil with NoSlurm).
	Slurm *slurmh.Slurm
	// Keys are the cluster keys (host key, user CA).
	Keys     *harness.ClusterKeys
	Gateways []*Gateway
	Nodes    []*Node
	// SlurmSync is `frontdoor slurm sync` (nil unless Options.SlurmSync).
	SlurmSync *Process

	log     *slog.Logger
	cleanup []func()
	once    sync.Once
}

// Gateway is one gateway process.
type Gateway struct {
	*Process
	Name        string
	SSH         string // host:port
	AdminSocket string
	Config      string
	Audit       string
	// GossipPort is where agents send health; PoolPort the gateways'
	// own pool (both on 127.0.0.1, UDP and TCP).
	GossipPort, PoolPort int
}

// Start starts the gateway again (after Kill or Stop) with the same
// configuration and addresses, and waits until it accepts SSH connections.
func (g *Gateway) Start(ctx context.Context) error { return g.startListening(ctx, g.SSH) }

// Node is one login node: a real sshd and the agent that watches it.
type Node struct {
	Name, Pool string
	// Host is its loopback address (it shows in SSH_CONNECTION).
	Host  string
	Agent *Process

	mu   sync.Mutex // mu protects sshd
	sshd *harness.Node
	opts harness.NodeOptions
}

// SSHD is the node's sshd as it runs now.
func (n *Node) SSHD() *harness.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sshd
}

// Addr is sshd's host:port.
func (n *Node) Addr() string { return n.SSHD().Addr() }

// Kill ends the node as a crash does: sshd and its agent get SIGKILL. The
// node's open sessions are separate processes: they end with their
// connections (the gateway's, which notices the node is gone).
func (n *Node) Kill() {
	n.SSHD().Kill()
	n.Agent.Kill()
}

// Revive starts sshd (same address, port, host key) and the agent again
// after Kill, as a rebooted node does.
func (n *Node) Revive(ctx context.Context) error {
	n.mu.Lock()
	o := n.opts
	o.Port = n.sshd.Port()
	n.mu.Unlock()
	sshd, err := harness.StartNode(ctx, o)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.sshd = sshd
	n.mu.Unlock()
	return n.Agent.Start()
}

func (s *Stack) onClose(f func()) { s.cleanup = append(s.cleanup, f) }

// Close stops every process the stack started, in the reverse order.
func (s *Stack) Close() {
	s.once.Do(func() {
		for i := len(s.cleanup) - 1; i >= 0; i-- {
			s.cleanup[i]()
		}
	})
}

// Start starts a stack; ctx bounds the start (5 minutes at most). Close
// stops it.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	if o.StateDir == "" {
		o.StateDir = ".stack"
	}
	if o.Bin == "" {
		o.Bin = "bin/frontdoor"
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Gateways == 0 {
		o.Gateways = 2
	}
	if o.Directory == "" {
		o.Directory = "ad"
	}
	if o.ADAddr == "" {
		o.ADAddr = "127.0.2.1"
	}
	if o.NodeAddr == nil {
		o.NodeAddr = func(i int) string { return fmt.Sprintf("127.0.1.%d", i) }
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Directory != "ad" && o.Directory != "static" {
		return nil, fmt.Errorf("unknown -directory %q (want ad or static)", o.Directory)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the local stack needs root (it creates Unix users and starts sshd)")
	}
	dir, err := filepath.Abs(o.StateDir)
	if err != nil {
		return nil, err
	}
	bin, err := filepath.Abs(o.Bin)
	if err != nil {
		return nil, err
	}
	// sshd reads authorized keys and the CA as the user: keep it readable.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	// One stack per state directory, and one Samba DC per address: said
	// before anything starts (lock.go).
	unlock, err := lockStateDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Stack{Dir: dir, log: log}
	s.onClose(unlock) // last: the lock outlives every child
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if o.Directory == "ad" {
		if err := checkADAddr(o.ADAddr); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	keys, err := harness.Keys(filepath.Join(dir, "keys"))
	if err != nil {
		return nil, err
	}
	s.Keys = keys
	out := &s.Info

	// Users: Unix accounts on the "login nodes" (this machine), keys and
	// passwords kept in the state directory so a restart reuses them.
	var users []*harness.User
	for _, su := range stackUsers {
		if err := harness.EnsureUnixUser(su.name); err != nil {
			return nil, err
		}
		udir := filepath.Join(dir, "users", su.name)
		pw, err := persistentPassword(filepath.Join(udir, "password"))
		if err != nil {
			return nil, err
		}
		u, err := harness.NewUser(udir, su.name, pw, su.groups...)
		if err != nil {
			return nil, err
		}
		users = append(users, u)
		out.Users = append(out.Users, UserInfo{Name: su.name, Password: pw, PrivateKey: u.KeyPath, Groups: su.groups})
	}
	mfaSection, mfaInfo, err := startMFA(ctx, s, dir, out.Users)
	if err != nil {
		return nil, err
	}
	out.MFA = mfaInfo
	usersFile := filepath.Join(dir, "users.yaml")
	if err := harness.WriteUsersFile(usersFile, users...); err != nil {
		return nil, err
	}
	out.Directory = DirectoryInfo{Kind: "static", File: usersFile}
	var adSection map[string]any
	if o.Directory == "ad" {
		dc, err := startAD(ctx, filepath.Join(dir, "ad"), o.ADAddr, users)
		if err != nil {
			return nil, fmt.Errorf("samba AD: %w", err)
		}
		s.DC = dc
		s.onClose(func() { dc.Close() })
		pwFile := filepath.Join(dir, "ad", "svc-password")
		if err := os.WriteFile(pwFile, []byte(svcPassword), 0o600); err != nil {
			return nil, err
		}
		adSection = map[string]any{
			"urls":               []string{dc.URL()},
			"ca_file":            dc.CAFile(),
			"base_dn":            dc.BaseDN(),
			"bind_dn":            svcUser + "@" + dc.UPNSuffix(),
			"bind_password_file": pwFile,
			"domain":             dc.Domain(),
			"key_attribute":      "sshPublicKey",
			// Users are added to the stack's AD while it runs (the soak
			// adds 250): look the policy's users up every minute, not
			// every 6 hours, so both gateways know them.
			"prefetch_interval": "1m",
		}
		out.Directory = DirectoryInfo{Kind: "ad", URL: dc.URL(), Realm: dc.Realm(), BaseDN: dc.BaseDN(),
			CAFile: dc.CAFile(), AdminUser: dc.AdminUser(), AdminPassword: dc.AdminPassword(),
			AdminPrincipal: dc.AdminPrincipal(), AdminURL: dc.AdminURL()}
		log.Info("Samba AD DC up", "url", dc.URL(), "realm", dc.Realm())
	}

	// Slurm with accounting and four (fake) H100s, started afresh each
	// time; the policy is applied to it once the gateways are up.
	var slurmSection map[string]any
	if !o.NoSlurm {
		sdir := filepath.Join(dir, "slurm")
		os.RemoveAll(sdir)
		cl, err := slurmh.Start(ctx, slurmh.Options{Dir: sdir})
		if err != nil {
			return nil, fmt.Errorf("slurm (run with --no-slurm to go without): %w", err)
		}
		s.Slurm = cl
		s.onClose(func() { cl.Close() })
		parts := []string{slurmh.PartitionGeneral, slurmh.PartitionH100}
		slurmSection = map[string]any{"conf": cl.Conf(), "partitions": parts, "usage_cache": "10s"}
		info := &SlurmInfo{Conf: cl.Conf(), ConfOld: cl.Conf(), Env: "SLURM_CONF=" + cl.Conf(), Partitions: parts, Dir: sdir}
		for _, r := range Rules {
			if r.Slurm != nil {
				info.Accounts = append(info.Accounts, r.Slurm.Account)
			}
		}
		out.Slurm = info
		log.Info("Slurm up", "conf", cl.Conf())
	}

	// Cost Explorer and AWS Budgets, faked in this process (usage.go).
	costFake, awsInfo := startCostFake()
	s.onClose(costFake.Close)
	out.AWS = &awsInfo

	// Login nodes: sshd on 127.0.1.N, port 22 when free.
	var entries []harness.NodeEntry
	for i := 1; i <= o.Nodes; i++ {
		name, addr := fmt.Sprintf("login%d", i), o.NodeAddr(i)
		pool := "general"
		if i == o.Nodes && o.Nodes > 2 {
			pool = "gpu"
		}
		port := 22
		if !portFree(addr, port) {
			port = 0
		}
		opts := harness.NodeOptions{Name: name, Addr: addr, Port: port, Dir: filepath.Join(dir, "nodes", name), UserCAPub: keys.UserCAPub,
			RevokedKeys: keys.RevokedKeys}
		sshd, err := harness.StartNode(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		n := &Node{Name: name, Pool: pool, Host: addr, sshd: sshd, opts: opts}
		s.Nodes = append(s.Nodes, n)
		s.onClose(func() { n.SSHD().Stop() })
		for _, u := range users {
			sshd.Authorize(u.Name, u.AuthorizedKey()) // direct logins, for comparisons
		}
		entries = append(entries, sshd.Entry(pool))
		out.Nodes = append(out.Nodes, NodeInfo{Name: name, Pool: pool, SSH: sshd.Addr(), SSHDPID: sshd.PID()})
		log.Info("login node up", "node", name, "ssh", sshd.Addr(), "pool", pool)
	}

	// Gossip: every gateway and agent is a member, encrypted with a key kept
	// in the state directory.
	gossipKey, err := persistentKey(filepath.Join(dir, "gossip.key"))
	if err != nil {
		return nil, err
	}
	// The gateways alone hold the key that seals their shared state.
	gatewayKey, err := persistentKey(filepath.Join(dir, "gateway.key"))
	if err != nil {
		return nil, err
	}
	// Each gateway has two gossip ports: one the agents send health to,
	// one for the gateways' own pool.
	var gossipPorts, poolPorts []int
	var gossipAddrs, poolAddrs []string
	for i := 0; i < o.Gateways; i++ {
		p, pp := freePort("127.0.0.1"), freePort("127.0.0.1")
		gossipPorts, poolPorts = append(gossipPorts, p), append(poolPorts, pp)
		gossipAddrs = append(gossipAddrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		poolAddrs = append(poolAddrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(pp)))
	}

	// Gateways, as separate processes of the real binary. Each has an
	// admin socket in its directory, and a TCP admin address that takes
	// the stack's bearer token.
	tokens := filepath.Join(dir, "admin-tokens")
	token, err := harness.WriteAdminTokens(tokens, "stack")
	if err != nil {
		return nil, err
	}
	var khLines string
	for i := 1; i <= o.Gateways; i++ {
		name := fmt.Sprintf("gw%d", i)
		sshAddr := freeOr("127.0.0.1", o.SSHPort, i-1)
		admin := freeOr("127.0.0.1", o.AdminPort, i-1)
		gdir := filepath.Join(dir, "gateways", name)
		sock := filepath.Join(gdir, "admin.sock")
		cfg, err := harness.WriteGatewayConfig(gdir, harness.GatewayConfig{Name: name, Listen: sshAddr, AdminListen: admin,
			AdminSocket: sock, AdminTokenFile: tokens, Keys: keys, Nodes: entries, UsersFile: usersFile, Rules: Rules, LogLevel: "info"})
		if err != nil {
			return nil, err
		}
		patch := map[string]any{"cluster": map[string]any{
			"name": name, "bind_addr": "127.0.0.1", "bind_port": gossipPorts[i-1],
			"join": others(gossipAddrs, i-1), "secret_keys": []string{gossipKey}, "label": "frontdoor-stack",
			"gateway_port": poolPorts[i-1], "gateway_join": others(poolAddrs, i-1),
			"gateway_keys": []string{gatewayKey},
		}}
		if adSection != nil {
			patch["directory"] = map[string]any{"kind": "ad", "ad": adSection}
		}
		if slurmSection != nil {
			patch["slurm"] = maps.Clone(slurmSection)
		}
		patch["usage"] = usageSection(awsInfo, gdir)
		patch["mfa"] = mfaSection(sshAddr)
		auditFile := filepath.Join(gdir, "audit.jsonl")
		if o.GatewayPatch != nil {
			extra := o.GatewayPatch(name)
			if a, ok := extra["audit"].(map[string]any); ok {
				if f, ok := a["file"].(string); ok {
					auditFile = f
				}
			}
			mergePatch(patch, extra)
		}
		if err := harness.PatchConfig(cfg, patch); err != nil {
			return nil, err
		}
		logPath := filepath.Join(gdir, "gateway.log")
		var prepare func(*exec.Cmd)
		if o.GatewayCommand != nil {
			prepare = func(cmd *exec.Cmd) { o.GatewayCommand(name, cmd) }
		}
		g := &Gateway{Process: newProcess(logPath, prepare, bin, "gateway", "--config", cfg), Name: name, SSH: sshAddr,
			AdminSocket: sock, Config: cfg, Audit: auditFile, GossipPort: gossipPorts[i-1], PoolPort: poolPorts[i-1]}
		s.Gateways = append(s.Gateways, g)
		s.onClose(g.Stop)
		if err := g.Start(ctx); err != nil {
			return nil, fmt.Errorf("gateway %s: %w", name, err)
		}
		caKey, err := keys.GatewayCA(name) // made with the config; the nodes trust it
		if err != nil {
			return nil, err
		}
		caPub, err := keys.GatewayCAPublicKey(name)
		if err != nil {
			return nil, err
		}
		out.Gateways = append(out.Gateways, GatewayInfo{Name: name, SSH: sshAddr, Admin: admin, AdminURL: "http://" + admin,
			AdminSocket: sock, AdminToken: token, AdminTokenFile: tokens + ".client", PID: g.PID(), Config: cfg,
			Log: logPath, Audit: auditFile,
			UserCAKey: caKey, UserCAPub: caKey + ".pub", UserCAFingerprint: ssh.FingerprintSHA256(caPub)})
		khLines += harness.KnownHostsLine(sshAddr, keys.HostPublicKey) + "\n"
		log.Info("gateway up", "gateway", name, "ssh", sshAddr, "admin", admin)
	}
	// Agents, one per node, with a metrics file each so that the nodes,
	// which share this machine, can be given different loads.
	for i, n := range s.Nodes {
		ndir := filepath.Join(dir, "nodes", n.Name)
		metrics := filepath.Join(ndir, "metrics.yaml")
		if _, err := os.Stat(metrics); err != nil {
			m := fmt.Sprintf("# Simulated health of %s; edit to move load around (read every probe).\nload1: %.2f\ncpus: 8\nmem_avail_frac: 0.8\n", n.Name, 0.5+float64(i)*0.25)
			if err := os.WriteFile(metrics, []byte(m), 0o644); err != nil {
				return nil, err
			}
		}
		acfg := map[string]any{
			"node": n.Name, "pool": n.Pool, "ssh_addr": n.Addr(), "metrics_file": metrics,
			"drain_file": filepath.Join(ndir, "drain"), "interval": "2s", "probe_interval": "500ms",
			"host_key": filepath.Join(ndir, "ssh_host_ed25519_key"),
			"cluster": map[string]any{"bind_addr": "127.0.0.1", "bind_port": freePort("127.0.0.1"),
				"join": gossipAddrs, "secret_keys": []string{gossipKey}, "label": "frontdoor-stack"},
		}
		b, err := yaml.Marshal(acfg)
		if err != nil {
			return nil, err
		}
		apath := filepath.Join(ndir, "agent.yaml")
		if err := os.WriteFile(apath, b, 0o600); err != nil {
			return nil, err
		}
		n.Agent = newProcess(filepath.Join(ndir, "agent.log"), nil, bin, "agent", "--config", apath)
		s.onClose(n.Agent.Stop)
		if err := n.Agent.Start(); err != nil {
			return nil, fmt.Errorf("agent %s: %w", n.Name, err)
		}
		out.Nodes[i].AgentPID = n.Agent.PID()
	}
	// Ready when every gateway routes over every node's health.
	for _, g := range s.Gateways {
		if err := s.WaitNodesHealthy(ctx, g, 30*time.Second); err != nil {
			return nil, err
		}
	}
	log.Info("agents up, every gateway sees every node")
	if out.Slurm != nil {
		// The same code path an admin runs: frontdoor slurm apply.
		cmd := exec.CommandContext(ctx, bin, "slurm", "apply", "--config", s.Gateways[0].Config,
			"--lock", filepath.Join(dir, "slurm-sync.lock"))
		b, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("frontdoor slurm apply: %w\n%s", err, b)
		}
		log.Info("Slurm accounting matches the policy", "changes", strings.Count(string(b), "applied: "))
		if o.SlurmSync {
			s.SlurmSync = newProcess(filepath.Join(dir, "slurm-sync.log"), nil, bin, "slurm", "sync", "--config",
				s.Gateways[0].Config, "--lock", filepath.Join(dir, "slurm-sync.lock"))
			s.onClose(s.SlurmSync.Stop)
			if err := s.SlurmSync.Start(); err != nil {
				return nil, fmt.Errorf("frontdoor slurm sync: %w", err)
			}
		}
	}

	out.TrustedUserCAKeys, out.RevokedKeys = keys.UserCAPub, keys.RevokedKeys
	out.KnownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(out.KnownHosts, []byte(khLines), 0o644); err != nil {
		return nil, err
	}
	return s, nil
}

// NodeView is one row of a gateway's GET /v1/nodes, the fields the stack
// and its users read.
type NodeView struct {
	Name     string    `json:"name"`
	Alive    bool      `json:"alive"`
	SSHDUp   bool      `json:"sshd_up"`
	Draining bool      `json:"draining"`
	HealthAt time.Time `json:"health_at"`
	Sessions int       `json:"sessions"`
}

// Nodes is g's /v1/nodes.
func (g *Gateway) Nodes(ctx context.Context) ([]NodeView, error) {
	var nodes []NodeView
	err := harness.AdminGetJSON(ctx, g.AdminSocket, "/v1/nodes", &nodes)
	return nodes, err
}

// WaitNodesHealthy waits until g sees every node of the stack alive with
// sshd up.
func (s *Stack) WaitNodesHealthy(ctx context.Context, g *Gateway, timeout time.Duration) error {
	return harness.WaitFor(ctx, timeout, func() error {
		nodes, err := g.Nodes(ctx)
		if err != nil {
			return err
		}
		up := 0
		for _, n := range nodes {
			if n.Alive && n.SSHDUp {
				up++
			}
		}
		if up < len(s.Nodes) {
			return fmt.Errorf("gateway %s sees %d of %d nodes healthy", g.Name, up, len(s.Nodes))
		}
		return nil
	})
}

// mergePatch merges extra into patch: a section both have as mappings is
// merged key by key, anything else replaced.
func mergePatch(patch, extra map[string]any) {
	for k, v := range extra {
		have, ok1 := patch[k].(map[string]any)
		add, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			maps.Copy(have, add)
			continue
		}
		patch[k] = v
	}
}

// The AD service account the gateways search with.
const (
	svcUser     = "svc-frontdoor"
	svcPassword = "Svc-Fr0ntd00r-Search1"
)

// startAD starts (or restarts, reusing dir) a Samba AD DC and makes sure the
// stack's groups and users exist with the current passwords and keys. The
// lab groups are nested in "researchers" to show nested membership.
func startAD(ctx context.Context, dir, addr string, users []*harness.User) (*samba.DC, error) {
	dc, err := samba.Start(ctx, samba.Options{Dir: dir, Addr: addr})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*samba.DC, error) { dc.Close(); return nil, err }
	if err := IgnoreExists(dc.CreateGroup(ctx, "researchers")); err != nil {
		return fail(err)
	}
	for _, g := range []string{"nlp-lab", "vision-lab"} {
		if err := IgnoreExists(dc.CreateGroup(ctx, g, "researchers")); err != nil {
			return fail(err)
		}
	}
	for _, g := range []string{"students", "hpc-admins", mfaRule} {
		if err := IgnoreExists(dc.CreateGroup(ctx, g)); err != nil {
			return fail(err)
		}
	}
	if _, err := dc.CreateUser(ctx, svcUser, svcPassword); IgnoreExists(err) != nil {
		return fail(err)
	}
	for _, u := range users {
		_, err := dc.CreateUser(ctx, u.Name, u.Password, u.Groups...)
		if IsExists(err) {
			err = dc.SetPassword(ctx, u.Name, u.Password)
		}
		if err != nil {
			return fail(err)
		}
		if err := dc.SetSSHKey(ctx, u.Name, u.AuthorizedKey()); err != nil {
			return fail(err)
		}
	}
	return dc, nil
}

// IsExists reports whether err is AD's "entry already exists".
func IsExists(err error) bool {
	var le *ldap.Error
	return errors.As(err, &le) && le.ResultCode == ldap.LDAPResultEntryAlreadyExists
}

// IgnoreExists is err, or nil if it says the entry exists already.
func IgnoreExists(err error) error {
	if IsExists(err) {
		return nil
	}
	return err
}

// persistentKey returns the base64 gossip key stored at path, creating it.
func persistentKey(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return "", err
	}
	s := base64.StdEncoding.EncodeToString(k)
	return s, os.WriteFile(path, []byte(s+"\n"), 0o600)
}

// others is addrs without addrs[i]: every gateway seeds with all the
// others, so any of them can restart alone and find the cluster again.
func others(addrs []string, i int) []string {
	out := append([]string(nil), addrs[:i]...)
	return append(out, addrs[i+1:]...)
}

// freePort returns a port free on host now (for gossip, which needs its
// address before it starts).
func freePort(host string) int {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// persistentPassword returns the password stored at path, creating a random
// one the first time.
func persistentPassword(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		return string(b), nil
	}
	pw, err := RandomPassword()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return pw, os.WriteFile(path, []byte(pw), 0o600)
}

// RandomPassword is a fresh password meeting AD's complexity rules.
func RandomPassword() (string, error) {
	const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	pw := make([]byte, 16)
	for i := range pw {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", err
		}
		pw[i] = alphabet[n.Int64()]
	}
	// AD complexity: upper, lower, digit.
	return "Fd1" + string(pw), nil
}

func portFree(host string, port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// freeOr returns host:(first+i) if first is set and that port is free,
// else host:(a free port).
func freeOr(host string, first, i int) string {
	if first > 0 && portFree(host, first+i) {
		return net.JoinHostPort(host, strconv.Itoa(first+i))
	}
	return net.JoinHostPort(host, strconv.Itoa(freePort(host)))
}

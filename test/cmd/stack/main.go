// Command stack runs frontdoor's local stack in the foreground: real OpenSSH
// login nodes on 127.0.1.x, local Unix users, and gateways as separate
// processes (bin/frontdoor). Once every part answers it writes
// STATE_DIR/stack.json (its format: the Stack type below; docs/ARCHITECTURE.md)
// and prints how to connect. While it runs it holds STATE_DIR/stack.pid
// (lock.go): a second stack is refused at once, naming this one.
// SIGINT/SIGTERM stops every process it started; nothing outside the state
// directory is removed (the Unix users stay, as the next run reuses them).
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-ldap/ldap/v3"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/harness/samba"
	slurmh "github.com/frontdoor-hpc/frontdoor/test/harness/slurm"
)

// Stack is stack.json. Fields may be added, never renamed.
type Stack struct {
	Gateways   []GatewayInfo `json:"gateways"`
	Nodes      []NodeInfo    `json:"nodes"`
	Users      []UserInfo    `json:"users"`
	Directory  DirectoryInfo `json:"directory"`
	KnownHosts string        `json:"known_hosts"`
	// Slurm is how to reach the stack's Slurm (absent with --no-slurm).
	Slurm *SlurmInfo `json:"slurm,omitempty"`
	// TrustedUserCAKeys is the nodes' TrustedUserCAKeys file (every
	// gateway's user CA key, one per line) and RevokedKeys their KRL; sshd
	// reads both at every login. Dropping a gateway: delete its line, or
	// `ssh-keygen -k -u -f REVOKED_KEYS GATEWAY.user_ca_pub`.
	TrustedUserCAKeys string `json:"trusted_user_ca_keys"`
	RevokedKeys       string `json:"revoked_keys"`
	// MFA is the stack's second factor (mfa.go).
	MFA *MFAInfo `json:"mfa,omitempty"`
}

type GatewayInfo struct {
	Name string `json:"name"`
	SSH  string `json:"ssh"`
	// Admin is the admin API's TCP address (host:port), which needs
	// AdminToken; AdminSocket is its Unix socket, which needs nothing but
	// being this machine's root.
	Admin          string `json:"admin"`
	AdminURL       string `json:"admin_url"`
	AdminSocket    string `json:"admin_socket"`
	AdminToken     string `json:"admin_token"`
	AdminTokenFile string `json:"admin_token_file"` // the token alone, for --admin-token-file
	PID            int    `json:"pid"`
	Config         string `json:"config"`
	Log            string `json:"log"`
	Audit          string `json:"audit"`
	// UserCAKey is this gateway's own user CA (private), UserCAPub its
	// public key file and UserCAFingerprint its SHA256 fingerprint, which
	// the nodes' sshd logs with every login this gateway signs.
	UserCAKey         string `json:"user_ca_key"`
	UserCAPub         string `json:"user_ca_pub"`
	UserCAFingerprint string `json:"user_ca_fingerprint"`
}

type NodeInfo struct {
	Name     string `json:"name"`
	Pool     string `json:"pool"`
	SSH      string `json:"ssh"`
	SSHDPID  int    `json:"sshd_pid"`
	AgentPID int    `json:"agent_pid"`
}

// SlurmInfo: run Slurm's commands with SLURM_CONF=Conf (Env is that as
// an environment line); Accounts are those the policy grants.
type SlurmInfo struct {
	Conf string `json:"conf"`
	// ConfOld is Conf under its first key, kept because fields are never
	// renamed: "slurm.conf" has a dot, which jq users must quote.
	ConfOld    string   `json:"slurm.conf"`
	Env        string   `json:"env"`
	Partitions []string `json:"partitions"`
	Accounts   []string `json:"accounts"`
	Dir        string   `json:"dir"`
}

type UserInfo struct {
	Name       string   `json:"name"`
	Password   string   `json:"password"`
	PrivateKey string   `json:"private_key"`
	Groups     []string `json:"groups"`
	// TOTPSecret is the user's TOTP secret, base32: `oathtool --totp -b
	// SECRET` prints the current code (asked of users of the mfa rule).
	TOTPSecret string `json:"totp_secret,omitempty"`
}

type DirectoryInfo struct {
	Kind string `json:"kind"`
	// static
	File string `json:"file,omitempty"`
	// ad
	URL           string `json:"url,omitempty"`
	Realm         string `json:"realm,omitempty"`
	BaseDN        string `json:"base_dn,omitempty"`
	CAFile        string `json:"ca_file,omitempty"`
	AdminUser     string `json:"admin_user,omitempty"`
	AdminPassword string `json:"admin_password,omitempty"`
	// AdminPrincipal is the domain-qualified admin name and AdminURL a URL
	// samba-tool accepts as they stand:
	//   samba-tool user disable alice -H ADMIN_URL -U ADMIN_PRINCIPAL --password=…
	// (LDAP with SASL signing and sealing: samba-tool's LDAPS wants a CA file
	// under /var/lib/samba, which a machine without a system DC lacks.)
	AdminPrincipal string `json:"admin_principal,omitempty"`
	AdminURL       string `json:"admin_url,omitempty"`
}

// The stack's users: four researchers in different groups.
var stackUsers = []struct {
	name   string
	groups []string
}{
	{"alice", []string{"nlp-lab"}},
	{"bob", []string{"vision-lab"}},
	{"carol", []string{"nlp-lab", "vision-lab"}},
	{"dave", []string{"students"}},
	{"erin", []string{"hpc-admins"}},
	{"frank", []string{mfaRule}},
}

// The stack's policy, one user per rule: admins everywhere without Slurm
// limits; an NLP lab with the GPU pool, 4 GPUs for the account and 2 per
// person; a vision lab on the dedicated H100 partition, jobs over a
// person's one GPU refused; students CPU-only, with job defaults and an
// idle timeout. Slurm gets the same grants (`frontdoor slurm apply`).
var stackRules = []policy.Rule{
	{Name: "admins", Groups: []string{"hpc-admins"}, Pools: []string{"general", "gpu"},
		Forwarding: []string{policy.FwdAgent, policy.FwdX11, policy.FwdLocal, policy.FwdRemote, policy.FwdStreamLocal},
		ForwardTo:  []string{policy.ForwardToAny}},
	{Name: "nlp-lab", Groups: []string{"nlp-lab"}, Pools: []string{"general", "gpu"},
		Slurm: &policy.Slurm{Account: "nlp", Partitions: []string{slurmh.PartitionGeneral, slurmh.PartitionH100},
			GPUsPerAccount: 4, GPUsPerUser: 2}},
	{Name: "vision-lab", Groups: []string{"vision-lab"}, Pools: []string{"general"},
		Slurm: &policy.Slurm{Account: "vision", Partitions: []string{slurmh.PartitionH100}, GPUsPerAccountByType: map[string]int{slurmh.GPUType: 2},
			GPUsPerUser: 1, DenyOnLimit: true}},
	{Name: "students", Groups: []string{"students"}, Pools: []string{"general"},
		Forwarding: []string{policy.FwdLocal, policy.FwdStreamLocal}, MaxSessions: 10, IdleTimeout: 2 * time.Hour,
		Slurm: &policy.Slurm{Account: "students", Partitions: []string{slurmh.PartitionGeneral}, SetJobDefaults: true}},
	{Name: mfaRule, Groups: []string{mfaRule}, Pools: []string{"general"}, MFA: policy.MFARequired, MFAWindow: 12 * time.Hour, MFASKCounts: true},
}

func main() {
	def := os.Getenv("STATE_DIR")
	if def == "" {
		def = ".stack"
	}
	stateDir := flag.String("state-dir", def, "state directory (env STATE_DIR)")
	nodes := flag.Int("nodes", 3, "login nodes")
	gateways := flag.Int("gateways", 2, "gateways")
	sshPort := flag.Int("ssh-port", 2222, "first gateway SSH port (next gateways: +1, ...)")
	adminPort := flag.Int("admin-port", 9101, "first gateway admin port")
	bin := flag.String("bin", "bin/frontdoor", "frontdoor binary")
	dirKind := flag.String("directory", "ad", "identity source: ad (a Samba AD DC) or static (a users file)")
	adAddr := flag.String("ad-addr", "127.0.2.1", "loopback address for the Samba AD DC")
	noSlurm := flag.Bool("no-slurm", false, "run without Slurm (no accounting, no GPU use in banners)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = withParent(ctx)
	o := options{stateDir: *stateDir, bin: *bin, nodes: *nodes, gateways: *gateways, sshPort: *sshPort,
		adminPort: *adminPort, directory: *dirKind, adAddr: *adAddr, slurm: !*noSlurm}
	if err := run(ctx, log, o); err != nil {
		log.Error("stack failed", "err", err)
		os.Exit(1)
	}
}

type stack struct {
	log     *slog.Logger
	dir     string
	cleanup []func()
}

func (s *stack) stop() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
}

type options struct {
	stateDir, bin      string
	nodes, gateways    int
	sshPort, adminPort int
	directory, adAddr  string
	slurm              bool
}

func run(ctx context.Context, log *slog.Logger, o options) error {
	stateDir, bin, nNodes, nGateways, sshPort, adminPort := o.stateDir, o.bin, o.nodes, o.gateways, o.sshPort, o.adminPort
	if o.directory != "ad" && o.directory != "static" {
		return fmt.Errorf("unknown -directory %q (want ad or static)", o.directory)
	}
	if os.Geteuid() != 0 {
		return errors.New("the local stack needs root (it creates Unix users and starts sshd)")
	}
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	// sshd reads authorized keys and the CA as the user: keep it readable.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	os.Chmod(dir, 0o755)
	// One stack per state directory, and one Samba DC per address: said
	// before anything starts (lock.go).
	unlock, err := lockStateDir(dir)
	if err != nil {
		return err
	}
	defer unlock() // after s.stop: the lock outlives every child
	if o.directory == "ad" {
		if err := checkADAddr(o.adAddr); err != nil {
			return err
		}
	}
	s := &stack{log: log, dir: dir}
	defer s.stop()
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	keys, err := harness.Keys(filepath.Join(dir, "keys"))
	if err != nil {
		return err
	}
	var out Stack

	// Users: Unix accounts on the "login nodes" (this machine), keys and
	// passwords kept in the state directory so a restart reuses them.
	var users []*harness.User
	for _, su := range stackUsers {
		if err := harness.EnsureUnixUser(su.name); err != nil {
			return err
		}
		udir := filepath.Join(dir, "users", su.name)
		pw, err := persistentPassword(filepath.Join(udir, "password"))
		if err != nil {
			return err
		}
		u, err := harness.NewUser(udir, su.name, pw, su.groups...)
		if err != nil {
			return err
		}
		users = append(users, u)
		out.Users = append(out.Users, UserInfo{Name: su.name, Password: pw, PrivateKey: u.KeyPath, Groups: su.groups})
	}
	mfaSection, mfaInfo, err := startMFA(startCtx, s, dir, out.Users)
	if err != nil {
		return err
	}
	out.MFA = mfaInfo
	usersFile := filepath.Join(dir, "users.yaml")
	if err := harness.WriteUsersFile(usersFile, users...); err != nil {
		return err
	}
	out.Directory = DirectoryInfo{Kind: "static", File: usersFile}
	var adSection map[string]any
	if o.directory == "ad" {
		dc, err := startAD(startCtx, filepath.Join(dir, "ad"), o.adAddr, users)
		if err != nil {
			return fmt.Errorf("samba AD: %w", err)
		}
		s.cleanup = append(s.cleanup, func() { dc.Close() })
		pwFile := filepath.Join(dir, "ad", "svc-password")
		if err := os.WriteFile(pwFile, []byte(svcPassword), 0o600); err != nil {
			return err
		}
		adSection = map[string]any{
			"urls":               []string{dc.URL()},
			"ca_file":            dc.CAFile(),
			"base_dn":            dc.BaseDN(),
			"bind_dn":            svcUser + "@" + dc.UPNSuffix(),
			"bind_password_file": pwFile,
			"domain":             dc.Domain(),
			"key_attribute":      "sshPublicKey",
		}
		out.Directory = DirectoryInfo{Kind: "ad", URL: dc.URL(), Realm: dc.Realm(), BaseDN: dc.BaseDN(),
			CAFile: dc.CAFile(), AdminUser: dc.AdminUser(), AdminPassword: dc.AdminPassword(),
			AdminPrincipal: dc.AdminPrincipal(), AdminURL: dc.AdminURL()}
		log.Info("Samba AD DC up", "url", dc.URL(), "realm", dc.Realm())
	}

	// Slurm with accounting and four (fake) H100s, started afresh each
	// time; the policy is applied to it once the gateways are up.
	var slurmSection map[string]any
	if o.slurm {
		sdir := filepath.Join(dir, "slurm")
		os.RemoveAll(sdir)
		cl, err := slurmh.Start(startCtx, slurmh.Options{Dir: sdir})
		if err != nil {
			return fmt.Errorf("slurm (run with --no-slurm to go without): %w", err)
		}
		s.cleanup = append(s.cleanup, func() { cl.Close() })
		parts := []string{slurmh.PartitionGeneral, slurmh.PartitionH100}
		slurmSection = map[string]any{"conf": cl.Conf(), "partitions": parts, "usage_cache": "10s"}
		info := &SlurmInfo{Conf: cl.Conf(), ConfOld: cl.Conf(), Env: "SLURM_CONF=" + cl.Conf(), Partitions: parts, Dir: sdir}
		for _, r := range stackRules {
			if r.Slurm != nil {
				info.Accounts = append(info.Accounts, r.Slurm.Account)
			}
		}
		out.Slurm = info
		log.Info("Slurm up", "conf", cl.Conf())
	}

	// Login nodes: sshd on 127.0.1.N, port 22 when free.
	var entries []harness.NodeEntry
	for i := 1; i <= nNodes; i++ {
		name, addr := fmt.Sprintf("login%d", i), fmt.Sprintf("127.0.1.%d", i)
		pool := "general"
		if i == nNodes && nNodes > 2 {
			pool = "gpu"
		}
		port := 22
		if !portFree(addr, port) {
			port = 0
		}
		n, err := harness.StartNode(startCtx, harness.NodeOptions{Name: name, Addr: addr, Port: port,
			Dir: filepath.Join(dir, "nodes", name), UserCAPub: keys.UserCAPub, RevokedKeys: keys.RevokedKeys})
		if err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		s.cleanup = append(s.cleanup, func() { n.Stop() })
		for _, u := range users {
			n.Authorize(u.Name, u.AuthorizedKey()) // direct logins, for comparisons
		}
		entries = append(entries, n.Entry(pool))
		out.Nodes = append(out.Nodes, NodeInfo{Name: name, Pool: pool, SSH: n.Addr(), SSHDPID: n.PID()})
		log.Info("login node up", "node", name, "ssh", n.Addr(), "pool", pool)
	}

	// Gossip: every gateway and agent is a member, encrypted with a key kept
	// in the state directory.
	gossipKey, err := persistentKey(filepath.Join(dir, "gossip.key"))
	if err != nil {
		return err
	}
	// The gateways alone hold the key that seals their shared state.
	gatewayKey, err := persistentKey(filepath.Join(dir, "gateway.key"))
	if err != nil {
		return err
	}
	// Each gateway has two gossip ports: one the agents send health to,
	// one for the gateways' own pool.
	var gossipPorts, poolPorts []int
	var gossipAddrs, poolAddrs []string
	for i := 0; i < nGateways; i++ {
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
		return err
	}
	var khLines string
	for i := 1; i <= nGateways; i++ {
		name := fmt.Sprintf("gw%d", i)
		sshAddr := freeOr("127.0.0.1", sshPort+i-1)
		admin := freeOr("127.0.0.1", adminPort+i-1)
		gdir := filepath.Join(dir, "gateways", name)
		sock := filepath.Join(gdir, "admin.sock")
		cfg, err := harness.WriteGatewayConfig(gdir, harness.GatewayConfig{Name: name, Listen: sshAddr, AdminListen: admin,
			AdminSocket: sock, AdminTokenFile: tokens, Keys: keys, Nodes: entries, UsersFile: usersFile, Rules: stackRules, LogLevel: "info"})
		if err != nil {
			return err
		}
		patch := map[string]any{"cluster": map[string]any{
			"name": name, "bind_addr": "127.0.0.1", "bind_port": gossipPorts[i-1],
			"join": others(gossipAddrs, i-1), "secret_keys": []string{gossipKey}, "label": "frontdoor-stack",
			"gateway_port": poolPorts[i-1], "gateway_join": others(poolAddrs, i-1),
			"gateway_keys": []string{gatewayKey},
		}}
		patch["mfa"] = mfaSection(sshAddr)
		if adSection != nil {
			patch["directory"] = map[string]any{"kind": "ad", "ad": adSection}
		}
		if slurmSection != nil {
			patch["slurm"] = slurmSection
		}
		if err := harness.PatchConfig(cfg, patch); err != nil {
			return err
		}
		logPath := filepath.Join(gdir, "gateway.log")
		pid, err := s.startProcess(startCtx, logPath, sshAddr, bin, "gateway", "--config", cfg)
		if err != nil {
			return fmt.Errorf("gateway %s: %w", name, err)
		}
		caKey, err := keys.GatewayCA(name) // made with the config; the nodes trust it
		if err != nil {
			return err
		}
		caPub, err := keys.GatewayCAPublicKey(name)
		if err != nil {
			return err
		}
		out.Gateways = append(out.Gateways, GatewayInfo{Name: name, SSH: sshAddr, Admin: admin, AdminURL: "http://" + admin,
			AdminSocket: sock, AdminToken: token, AdminTokenFile: tokens + ".client", PID: pid, Config: cfg,
			Log: logPath, Audit: filepath.Join(gdir, "audit.jsonl"),
			UserCAKey: caKey, UserCAPub: caKey + ".pub", UserCAFingerprint: ssh.FingerprintSHA256(caPub)})
		khLines += harness.KnownHostsLine(sshAddr, keys.HostPublicKey) + "\n"
		log.Info("gateway up", "gateway", name, "ssh", sshAddr, "admin", admin)
	}
	// Agents, one per node, with a metrics file each so that the nodes,
	// which share this machine, can be given different loads.
	for i, n := range out.Nodes {
		ndir := filepath.Join(dir, "nodes", n.Name)
		metrics := filepath.Join(ndir, "metrics.yaml")
		if _, err := os.Stat(metrics); err != nil {
			m := fmt.Sprintf("# Simulated health of %s; edit to move load around (read every probe).\nload1: %.2f\ncpus: 8\nmem_avail_frac: 0.8\n", n.Name, 0.5+float64(i)*0.25)
			if err := os.WriteFile(metrics, []byte(m), 0o644); err != nil {
				return err
			}
		}
		acfg := map[string]any{
			"node": n.Name, "pool": n.Pool, "ssh_addr": n.SSH, "metrics_file": metrics,
			"drain_file": filepath.Join(ndir, "drain"), "interval": "2s", "probe_interval": "500ms",
			"host_key": filepath.Join(ndir, "ssh_host_ed25519_key"),
			"cluster": map[string]any{"bind_addr": "127.0.0.1", "bind_port": freePort("127.0.0.1"),
				"join": gossipAddrs, "secret_keys": []string{gossipKey}, "label": "frontdoor-stack"},
		}
		b, err := yaml.Marshal(acfg)
		if err != nil {
			return err
		}
		apath := filepath.Join(ndir, "agent.yaml")
		if err := os.WriteFile(apath, b, 0o600); err != nil {
			return err
		}
		pid, err := s.startDaemon(filepath.Join(ndir, "agent.log"), bin, "agent", "--config", apath)
		if err != nil {
			return fmt.Errorf("agent %s: %w", n.Name, err)
		}
		out.Nodes[i].AgentPID = pid
	}
	// Ready when every gateway routes over every node's health.
	for _, g := range out.Gateways {
		err := harness.WaitFor(startCtx, 30*time.Second, func() error {
			var nodes []struct {
				Name   string `json:"name"`
				Alive  bool   `json:"alive"`
				SSHDUp bool   `json:"sshd_up"`
			}
			if err := harness.AdminGetJSON(startCtx, g.AdminSocket, "/v1/nodes", &nodes); err != nil {
				return err
			}
			up := 0
			for _, n := range nodes {
				if n.Alive && n.SSHDUp {
					up++
				}
			}
			if up < len(out.Nodes) {
				return fmt.Errorf("gateway %s sees %d of %d nodes healthy", g.Name, up, len(out.Nodes))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	log.Info("agents up, every gateway sees every node")
	if out.Slurm != nil {
		// The same code path an admin runs: frontdoor slurm apply.
		cmd := exec.CommandContext(startCtx, bin, "slurm", "apply", "--config", out.Gateways[0].Config,
			"--lock", filepath.Join(dir, "slurm-sync.lock"))
		b, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("frontdoor slurm apply: %w\n%s", err, b)
		}
		log.Info("Slurm accounting matches the policy", "changes", strings.Count(string(b), "applied: "))
	}

	out.TrustedUserCAKeys, out.RevokedKeys = keys.UserCAPub, keys.RevokedKeys
	out.KnownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(out.KnownHosts, []byte(khLines), 0o644); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "stack.json"), out); err != nil {
		return err
	}
	printHowTo(out)
	<-ctx.Done()
	log.Info("stopping the stack")
	return nil
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
	if err := ignoreExists(dc.CreateGroup(ctx, "researchers")); err != nil {
		return fail(err)
	}
	for _, g := range []string{"nlp-lab", "vision-lab"} {
		if err := ignoreExists(dc.CreateGroup(ctx, g, "researchers")); err != nil {
			return fail(err)
		}
	}
	for _, g := range []string{"students", "hpc-admins"} {
		if err := ignoreExists(dc.CreateGroup(ctx, g)); err != nil {
			return fail(err)
		}
	}
	if _, err := dc.CreateUser(ctx, svcUser, svcPassword); ignoreExists(err) != nil {
		return fail(err)
	}
	for _, u := range users {
		_, err := dc.CreateUser(ctx, u.Name, u.Password, u.Groups...)
		if isExists(err) {
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

func isExists(err error) bool {
	var le *ldap.Error
	return errors.As(err, &le) && le.ResultCode == ldap.LDAPResultEntryAlreadyExists
}

func ignoreExists(err error) error {
	if isExists(err) {
		return nil
	}
	return err
}

// startDaemon starts a child logging to logPath; it is stopped with
// SIGTERM (SIGKILL after 10 s) at cleanup.
func (s *stack) startDaemon(logPath string, name string, args ...string) (int, error) {
	_, pid, err := s.start(logPath, name, args...)
	return pid, err
}

func (s *stack) start(logPath string, name string, args ...string) (<-chan struct{}, int, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	defer logf.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cleanup = append(s.cleanup, func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return done, cmd.Process.Pid, nil
}

// startProcess starts a daemon and waits until it listens on addr.
func (s *stack) startProcess(ctx context.Context, logPath, addr string, name string, args ...string) (int, error) {
	done, pid, err := s.start(logPath, name, args...)
	if err != nil {
		return 0, err
	}
	err = harness.WaitFor(ctx, 20*time.Second, func() error {
		select {
		case <-done:
			return fmt.Errorf("exited; see %s", logPath)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return pid, err
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

// withParent ends ctx when this process's parent goes away: a SIGINT or
// SIGTERM sent only to `make run` (or the shell it started) must still stop
// the stack, and make does not pass SIGINT on to its children.
func withParent(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	parent := os.Getppid()
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != parent {
					cancel()
					return
				}
			}
		}
	}()
	return ctx
}

func printHowTo(st Stack) {
	gw := st.Gateways[0]
	host, port, _ := net.SplitHostPort(gw.SSH)
	u := st.Users[0]
	fmt.Printf(`
frontdoor local stack is up (%d gateways, %d login nodes). State: stack.json in the state directory.

  ssh -o UserKnownHostsFile=%s -i %s -p %s %s@%s
  ssh ... -p %s %s+%s@%s            # a named node
  password logins: the passwords are in stack.json

Users: `, len(st.Gateways), len(st.Nodes), st.KnownHosts, u.PrivateKey, port, u.Name, host, port, u.Name, st.Nodes[len(st.Nodes)-1].Name, host)
	for _, u := range st.Users {
		fmt.Printf("%s %v  ", u.Name, u.Groups)
	}
	fmt.Printf(`

Admin API (the socket: you are who the kernel says; TCP: the bearer token):
  bin/frontdoor nodes --admin %s
  bin/frontdoor drain --admin %s %s
  curl --unix-socket %s http://localhost/v1/sessions
  bin/frontdoor sessions --admin %s --admin-token-file %s
  curl -H "Authorization: Bearer $(cat %s)" %s/metrics
`, gw.AdminSocket, gw.AdminSocket, st.Nodes[0].Name, gw.AdminSocket, gw.AdminURL, gw.AdminTokenFile, gw.AdminTokenFile, gw.AdminURL)
	fmt.Printf(`
User CAs (one per gateway; the nodes trust %s and read the KRL %s at every login):
`, st.TrustedUserCAKeys, st.RevokedKeys)
	for _, g := range st.Gateways {
		fmt.Printf("  %s %s\n", g.Name, g.UserCAFingerprint)
	}
	fmt.Printf("  ssh-keygen -k -u -f %s %s    # drop %s: its logins are refused from the next one\n",
		st.RevokedKeys, gw.UserCAPub, gw.Name)
	if sl := st.Slurm; sl != nil {
		fmt.Printf(`
Slurm (accounts %s, partitions %s; every user above is a Unix user here):
  %s sinfo
  %s sacctmgr show assoc format=account,user,partition,qos,grptres
  %s runuser -u alice -- sbatch --chdir=/tmp --gres=gpu:1 --wrap='sleep 60'
  bin/frontdoor slurm plan --config %s
`, strings.Join(sl.Accounts, ","), strings.Join(sl.Partitions, ","), sl.Env, sl.Env, sl.Env, gw.Config)
	}
	if m := st.MFA; m != nil {
		fmt.Printf(`
Second factor (rule %s: %s; FreeRADIUS at %s checks TOTP codes):
  ssh -t ... -p %s %s@%s    # answer with: oathtool --totp -b "$(jq -r '.users[] | select(.name=="%s") | .totp_secret' stack.json)"
`, m.Rule, strings.Join(m.Users, ","), m.RADIUS, port, strings.Join(m.Users[:1], ""), host, strings.Join(m.Users[:1], ""))
	}
	fmt.Println("Ctrl-C stops everything.")
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// persistentPassword returns the password stored at path, creating a random
// one the first time.
func persistentPassword(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		return string(b), nil
	}
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
	s := "Fd1" + string(pw)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return s, os.WriteFile(path, []byte(s), 0o600)
}

func portFree(host string, port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// freeOr returns host:port if free, else host:(a free port).
func freeOr(host string, port int) string {
	if portFree(host, port) {
		return net.JoinHostPort(host, strconv.Itoa(port))
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return net.JoinHostPort(host, strconv.Itoa(port))
	}
	defer ln.Close()
	return ln.Addr().String()
}

package clustere2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery/discoverytest"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// A world is one test's cluster: login nodes (sshd + agent each) and two
// gateways, all gossiping under a label of their own.
type world struct {
	t         *testing.T
	dir       string
	label     string
	gossipKey string
	// gatewayKey seals gateway state; only the gateways get it.
	gatewayKey string
	// fake is the SageMaker API of worlds with discovered nodes.
	fake  *discoverytest.Server
	nodes []*loginNode
	gws   []*gw
	// knownHosts trusts every gateway's SSH address (one host key).
	knownHosts string

	mu       sync.Mutex // mu protects the following
	nextUser int
	procs    []*proc         // gateways and agents, stopped first
	sshds    []*harness.Node // stopped last
}

func (w *world) track(p *proc, n *harness.Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p != nil {
		w.procs = append(w.procs, p)
	}
	if n != nil {
		w.sshds = append(w.sshds, n)
	}
}

// stopAll stops every process of the world, in parallel: gateways and
// agents (a clean leave takes up to a second each), then sshd.
func (w *world) stopAll() {
	w.mu.Lock()
	procs, sshds := w.procs, w.sshds
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(p.stop)
	}
	wg.Wait()
	for _, n := range sshds {
		wg.Go(func() { n.Stop() })
	}
	wg.Wait()
}

// loginNode is a real sshd and the real agent watching it.
type loginNode struct {
	name     string
	host     string // 127.0.1.4x: shows in SSH_CONNECTION
	sshd     *harness.Node
	agent    *proc
	agentCfg string
	metrics  string
	drain    string
	load1    float64 // as last written to metrics
}

// gw is one gateway process. Its addresses stay the same across a restart.
type gw struct {
	name    string
	sshAddr string
	admin   string // the admin API's Unix socket
	// gossipAddr is where agents send health (bind_port); poolAddr the
	// gateways' own pool (gateway_port).
	gossipAddr string
	poolAddr   string
	cfg        string
	log        string
	bin        string   // the binary it runs (an upgrade starts what is there then)
	args       []string // extra flags of `frontdoor gateway`
	env        []string // added to its environment
	proc       *proc
}

// Cluster timings for every member: the defaults for liveness (agents'
// heartbeat 1 s, a node dead after node_dead_after 4 s without one; the
// gateways' pool probes every 1 s), which the dead-node bound is about,
// and faster repair paths so a lost packet costs a test little.
var clusterTimings = map[string]any{
	"push_pull_interval":    "2s",
	"gateway_sync_interval": "500ms",
	"rejoin_interval":       "1s",
}

// Node addresses: 127.0.1.40–49 are this package's, in two blocks of five
// so that two worlds can run at once. More would only slow a 2-core
// machine down (and stretch every timing the tests measure).
const blockSize = 5

var blocks = func() chan int {
	c := make(chan int, 2)
	c <- 0
	c <- 1
	return c
}()

// nodeAddr is the loopback address of node i (0-based) of block b.
func nodeAddr(b, i int) string { return fmt.Sprintf("127.0.1.%d", 40+b*blockSize+i) }

// newWorld starts len(loads) login nodes (load1 per node, 8 CPUs each, all
// in pool "general") and two gateways, and returns once both gateways see
// every node alive with that load.
func newWorld(t *testing.T, loads ...float64) *world {
	t.Helper()
	return newWorldOpts(t, worldOpts{}, loads...)
}

// worldOpts change a world's gateway configuration.
type worldOpts struct {
	// route is the gateways' route section (stale_after, sticky_for, ...).
	route map[string]any
	// cluster adds keys to the gateways' cluster section (liar_penalty, ...).
	cluster map[string]any
	// throttle is the gateways' throttle section.
	throttle map[string]any
	// connectTimeout is backend.connect_timeout (default 10 s: generous
	// for sshd's fork and key exchange on a loaded 2-core machine).
	connectTimeout time.Duration
	// rules replace the default policy (everyone, pool general).
	rules []policy.Rule
	// discovered nodes are not listed in the gateways' nodes: they come
	// from a fake SageMaker API (world.fake), Running, on discoveredPort.
	discovered []string
	// ownBinary runs the gateways from a copy of the binary of the
	// world's own, which a test may replace (an upgrade starts the binary
	// found at the same path).
	ownBinary bool
	// gatewayArgs are extra flags of `frontdoor gateway`.
	gatewayArgs []string
	// edit changes both gateways' configurations.
	edit func(*config.Config)
	// gatewayEnv is added to the environment of the gateway of that name.
	gatewayEnv map[string][]string
}

// discoveredPort is the sshd port of discovered nodes (HyperPod nodes all
// listen on one port; the world's nodes have addresses of their own).
const discoveredPort = 2222

func newWorldOpts(t *testing.T, o worldOpts, loads ...float64) *world {
	t.Helper()
	if len(loads) > blockSize {
		t.Fatalf("at most %d nodes per world, got %d", blockSize, len(loads))
	}
	t.Parallel()
	block := <-blocks
	t.Cleanup(func() { blocks <- block }) // runs last: every process is gone
	dir, err := os.MkdirTemp(base, strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	k := make([]byte, 32)
	rand.Read(k)
	gk := make([]byte, 32)
	rand.Read(gk)
	w := &world{t: t, dir: dir, label: "clustere2e-" + filepath.Base(dir), gossipKey: base64.StdEncoding.EncodeToString(k),
		gatewayKey: base64.StdEncoding.EncodeToString(gk)}
	// Registered early, so it runs late: logs are complete by then.
	t.Cleanup(w.dumpLogsOnFailure)
	t.Cleanup(w.stopAll)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var entries []harness.NodeEntry
	var discoveredKH []string
	var fakeNodes []discoverytest.Node
	for i, l := range loads {
		name := fmt.Sprintf("login%d", i+1)
		ndir := filepath.Join(dir, name)
		port := 0
		if slices.Contains(o.discovered, name) {
			port = discoveredPort
		}
		sshd, err := harness.StartNode(ctx, harness.NodeOptions{Name: name, Addr: nodeAddr(block, i), Port: port, Dir: ndir, UserCAPub: keys.UserCAPub})
		if err != nil {
			t.Fatal(err)
		}
		w.track(nil, sshd)
		n := &loginNode{name: name, host: nodeAddr(block, i), sshd: sshd, metrics: filepath.Join(ndir, "metrics.yaml"),
			drain: filepath.Join(ndir, "drain"), agentCfg: filepath.Join(ndir, "agent.yaml")}
		w.nodes = append(w.nodes, n)
		if slices.Contains(o.discovered, name) {
			discoveredKH = append(discoveredKH, harness.NodeKnownHostsLine(name, sshd.HostKey()))
			fakeNodes = append(fakeNodes, discoverytest.Node{Group: "login", InstanceID: "i-" + name, Status: "Running",
				IP: n.host, Hostname: name + ".ec2.internal", InstanceType: "ml.m5.2xlarge"})
		} else {
			entries = append(entries, sshd.Entry("general"))
		}
		if err := n.setLoad(l); err != nil {
			t.Fatal(err)
		}
	}

	// Gateways: each joins the other, so either can be restarted alone.
	gwBin := bin
	if o.ownBinary {
		gwBin = filepath.Join(dir, "frontdoor")
		if err := copyFile(bin, gwBin); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		g := &gw{name: fmt.Sprintf("gw%d", i+1), sshAddr: freeAddr(t, "127.0.0.1"),
			admin: filepath.Join(dir, fmt.Sprintf("gw%d", i+1), "admin.sock"), gossipAddr: freeAddr(t, "127.0.0.1"),
			poolAddr: freeAddr(t, "127.0.0.1"), bin: gwBin, args: o.gatewayArgs}
		g.env = o.gatewayEnv[g.name]
		w.gws = append(w.gws, g)
	}
	if o.connectTimeout == 0 {
		o.connectTimeout = 10 * time.Second
	}
	var kh strings.Builder
	for i, g := range w.gws {
		gdir := filepath.Join(dir, g.name)
		gc := harness.GatewayConfig{Name: g.name, Listen: g.sshAddr,
			AdminSocket: g.admin, Keys: keys, Nodes: entries, UsersFile: usersFile, LogLevel: "debug",
			ConnectTimeout: o.connectTimeout, Rules: o.rules, ExtraKnownHosts: discoveredKH}
		if len(fakeNodes) > 0 {
			if w.fake == nil {
				w.fake = discoverytest.Start(t, "us-west-2", "ml-cluster")
				w.fake.SetNodes(fakeNodes...)
			}
			if gc.Rules == nil {
				gc.Rules = []policy.Rule{{Name: "everyone", Groups: []string{"*"}, Pools: []string{"general"}}}
			}
			fakeURL := w.fake.URL
			gc.Edit = func(c *config.Config) {
				d := discovery.DefaultConfig()
				d.Kind, d.Cluster, d.Region, d.Endpoint = "hyperpod", "ml-cluster", "us-west-2", fakeURL
				d.RefreshInterval, d.Jitter, d.SSHPort = time.Second, 0, discoveredPort
				d.InstanceGroups = []discovery.InstanceGroup{{Name: "login", Pool: "general"}}
				c.Discovery = &d
			}
		}
		discover := gc.Edit
		gc.Edit = func(c *config.Config) {
			// A right password's check (argon2id under -race on a loaded
			// 2-core machine) can outlast the default 1 s, and then it is
			// refused; nothing here times refusals.
			c.Gateway.PasswordRefusalDelay = 3 * time.Second
			if discover != nil {
				discover(c)
			}
			if o.edit != nil {
				o.edit(c)
			}
		}
		cfg, err := harness.WriteGatewayConfig(gdir, gc)
		if err != nil {
			t.Fatal(err)
		}
		host, port, _ := net.SplitHostPort(g.gossipAddr)
		p, _ := strconv.Atoi(port)
		cs := w.clusterSection(g.name, host, p, []string{w.gws[1-i].gossipAddr})
		cs["gateway_keys"] = []string{w.gatewayKey}
		cs["locks_file"] = filepath.Join(gdir, "locks.json") // each its own, never the machine's
		_, poolPort, _ := net.SplitHostPort(g.poolAddr)
		cs["gateway_port"], _ = strconv.Atoi(poolPort)
		cs["gateway_join"] = []string{w.gws[1-i].poolAddr}
		for k, v := range o.cluster {
			cs[k] = v
		}
		patch := map[string]any{"cluster": cs}
		if o.route != nil {
			patch["route"] = o.route
		}
		if o.throttle != nil {
			patch["throttle"] = o.throttle
		}
		if err := harness.PatchConfig(cfg, patch); err != nil {
			t.Fatal(err)
		}
		g.cfg, g.log = cfg, filepath.Join(gdir, "gateway.log")
		if err := w.startGateway(ctx, g); err != nil {
			t.Fatal(err)
		}
		kh.WriteString(harness.KnownHostsLine(g.sshAddr, keys.HostPublicKey) + "\n")
	}
	w.knownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(w.knownHosts, []byte(kh.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	// Agents, one per node, gossiping from the node's own address.
	for _, n := range w.nodes {
		_, ps, _ := net.SplitHostPort(freeAddr(t, n.host))
		port, _ := strconv.Atoi(ps)
		cs := w.clusterSection("", n.host, port, []string{w.gws[0].gossipAddr, w.gws[1].gossipAddr})
		delete(cs, "name") // the agent's member name is its node name
		acfg := map[string]any{
			"node": n.name, "pool": "general", "ssh_addr": n.sshd.Addr(), "metrics_file": n.metrics,
			"drain_file": n.drain, "interval": "1s", "probe_interval": "250ms", "cluster": cs,
			"host_key": n.sshd.HostKeyPath(),
		}
		b, err := yaml.Marshal(acfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(n.agentCfg, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := w.startAgent(n); err != nil {
			t.Fatal(err)
		}
	}

	// Ready: both gateways route over every node's fresh health.
	for _, g := range w.gws {
		if _, err := w.waitView(g, 30*time.Second, func(v view) error {
			for _, n := range w.nodes {
				if err := v.usable(n.name); err != nil {
					return err
				}
				if v[n.name].Load1 != n.load1 {
					return fmt.Errorf("%s: load1 %.2f, want %.2f", n.name, v[n.name].Load1, n.load1)
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("cluster not ready: %v", err)
		}
	}
	return w
}

func (w *world) clusterSection(name, bindAddr string, port int, join []string) map[string]any {
	s := map[string]any{"name": name, "bind_addr": bindAddr, "bind_port": port, "join": join,
		"secret_keys": []string{w.gossipKey}, "label": w.label}
	for k, v := range clusterTimings {
		s[k] = v
	}
	return s
}

// startGateway starts g's process and waits until its SSH and admin ports
// answer.
func (w *world) startGateway(ctx context.Context, g *gw) error {
	p, err := startProcEnv(g.log, g.env, g.bin, append([]string{"gateway", "--config", g.cfg}, g.args...)...)
	if err != nil {
		return err
	}
	g.proc = p
	w.track(p, nil)
	return harness.WaitFor(ctx, 30*time.Second, func() error {
		if p.exited() {
			return fmt.Errorf("gateway %s exited: %s", g.name, tail(g.log, 1500))
		}
		for _, a := range [][2]string{{"tcp", g.sshAddr}, {"unix", g.admin}} {
			c, err := net.DialTimeout(a[0], a[1], time.Second)
			if err != nil {
				return fmt.Errorf("gateway %s: %w", g.name, err)
			}
			c.Close()
		}
		return nil
	})
}

// restartGateway starts g again with the same configuration and addresses.
func (w *world) restartGateway(ctx context.Context, g *gw) error {
	if !g.proc.exited() {
		return fmt.Errorf("gateway %s still runs", g.name)
	}
	return w.startGateway(ctx, g)
}

func (w *world) node(name string) *loginNode {
	for _, n := range w.nodes {
		if n.name == name {
			return n
		}
	}
	w.t.Fatalf("no node %s", name)
	return nil
}

// nodeNames lists the nodes' names.
func (w *world) nodeNames() []string {
	var out []string
	for _, n := range w.nodes {
		out = append(out, n.name)
	}
	return out
}

// freshUser returns a user no session of this world has used yet, so it
// has no affinity: routing decides by load alone.
func (w *world) freshUser() *harness.User {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nextUser >= len(users)-2 {
		w.t.Fatalf("user pool exhausted (%d users): raise poolSize", len(users))
	}
	u := users[w.nextUser]
	w.nextUser++
	return u
}

// probeUser is a user kept out of every login, for asking explain how a
// fresh user would be routed.
func probeUser() *harness.User { return users[len(users)-1] }

// cappedUser is kept for the session-cap test: worlds with rules name it.
func cappedUser() *harness.User { return users[len(users)-2] }

// setLoad rewrites the node's metrics file (write and rename: the agent
// must never read half a file).
func (n *loginNode) setLoad(load1 float64) error {
	n.load1 = load1
	m := fmt.Sprintf("load1: %g\ncpus: 8\nmem_avail_frac: 0.8\n", load1)
	tmp := n.metrics + ".tmp"
	if err := os.WriteFile(tmp, []byte(m), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, n.metrics)
}

// kill ends the node as a crash would: sshd and agent get SIGKILL.
func (n *loginNode) kill() {
	n.sshd.Kill()
	n.agent.kill()
}

// revive starts sshd (same address, port and host key) and the agent
// (same configuration) again after kill, as a rebooted node would.
func (w *world) revive(ctx context.Context, n *loginNode) error {
	sshd, err := harness.StartNode(ctx, harness.NodeOptions{Name: n.name, Addr: n.host, Port: n.sshd.Port(),
		Dir: n.sshd.Dir(), UserCAPub: keys.UserCAPub})
	if err != nil {
		return err
	}
	n.sshd = sshd
	w.track(nil, sshd)
	return w.startAgent(n)
}

func (w *world) startAgent(n *loginNode) error {
	p, err := startProc(filepath.Join(filepath.Dir(n.agentCfg), "agent.log"), bin, "agent", "--config", n.agentCfg, "--log-level", "debug")
	if err != nil {
		return err
	}
	n.agent = p
	w.track(p, nil)
	return nil
}

// nodeInfo is one row of GET /v1/nodes.
type nodeInfo struct {
	Name           string    `json:"name"`
	Pool           string    `json:"pool"`
	Addr           string    `json:"addr"`
	Alive          bool      `json:"alive"`
	SSHDUp         bool      `json:"sshd_up"`
	Draining       bool      `json:"draining"`
	HealthAt       time.Time `json:"health_at"`
	Sessions       int       `json:"sessions"`
	Load1          float64   `json:"load1"`
	RecentlyRouted int       `json:"recently_routed"`
	NoAgent        bool      `json:"no_agent"`
	NotTaking      string    `json:"not_taking"`
	Score          float64   `json:"score"`
	Users          int       `json:"users"`
	Lied           bool      `json:"lied"`
	Warnings       []string  `json:"warnings"`
}

// view is a gateway's /v1/nodes by node name.
type view map[string]nodeInfo

// usable reports why node would not be a candidate as /v1/nodes shows it.
func (v view) usable(node string) error {
	n, ok := v[node]
	switch {
	case !ok:
		return fmt.Errorf("%s: unknown", node)
	case !n.Alive:
		return fmt.Errorf("%s: not alive", node)
	case n.Lied:
		return fmt.Errorf("%s: its agent lied", node)
	case !n.SSHDUp:
		return fmt.Errorf("%s: sshd down", node)
	case n.Draining:
		return fmt.Errorf("%s: draining", node)
	case time.Since(n.HealthAt) > 10*time.Second:
		return fmt.Errorf("%s: health %s old", node, time.Since(n.HealthAt).Round(time.Millisecond))
	}
	return nil
}

func (w *world) fetchView(ctx context.Context, g *gw) (view, error) {
	var ns []nodeInfo
	if err := harness.AdminGetJSON(ctx, g.admin, "/v1/nodes", &ns); err != nil {
		return nil, err
	}
	v := view{}
	for _, n := range ns {
		v[n.Name] = n
	}
	return v, nil
}

// waitView polls g's /v1/nodes until cond holds, and returns how long that
// took.
func (w *world) waitView(g *gw, timeout time.Duration, cond func(view) error) (time.Duration, error) {
	start := time.Now()
	err := harness.WaitFor(context.Background(), timeout, func() error {
		v, err := w.fetchView(context.Background(), g)
		if err != nil {
			return err
		}
		if err := cond(v); err != nil {
			return fmt.Errorf("gateway %s: %w", g.name, err)
		}
		return nil
	})
	return time.Since(start), err
}

// waitAll is waitView on every running gateway; it returns the longest wait.
func (w *world) waitAll(timeout time.Duration, cond func(view) error) (time.Duration, error) {
	start := time.Now()
	for _, g := range w.gws {
		if _, err := w.waitView(g, timeout-time.Since(start), cond); err != nil {
			return time.Since(start), err
		}
	}
	return time.Since(start), nil
}

// decision is `frontdoor explain` parsed.
type decision struct {
	text      string
	reason    string            // "sticky", "least-loaded", ...; "" if refused
	order     []string          // nodes to try
	refused   string            // the refusal, if any
	candidate map[string]bool   // node → candidate
	why       map[string]string // node → why not a candidate
	score     map[string]float64
}

func (w *world) explain(ctx context.Context, g *gw, login string) (decision, error) {
	body, err := harness.AdminGet(ctx, g.admin, "/v1/explain?user="+url.QueryEscape(login))
	if err != nil {
		return decision{}, err
	}
	return parseExplain(body)
}

// parseExplain reads route.Explain's table and decision line.
func parseExplain(text string) (decision, error) {
	d := decision{text: text, candidate: map[string]bool{}, why: map[string]string{}, score: map[string]float64{}}
	inTable := false
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "NODE":
			inTable = true
		case strings.HasPrefix(line, "decision for "):
			inTable = false
			_, rest, _ := strings.Cut(line, ": ")
			if r, ok := strings.CutPrefix(rest, "refused: "); ok {
				d.refused = r
				continue
			}
			i := strings.LastIndex(rest, ", try ")
			if i < 0 {
				return d, fmt.Errorf("explain: cannot parse %q", line)
			}
			d.reason = rest[:i]
			d.order = strings.Split(rest[i+len(", try "):], " → ")
		case inTable && len(f) >= 6:
			d.candidate[f[0]] = f[2] == "yes"
			if f[2] == "yes" {
				d.score[f[0]], _ = strconv.ParseFloat(f[3], 64)
			}
			d.why[f[0]] = strings.Join(f[5:], " ")
		}
	}
	if d.reason == "" && d.refused == "" {
		return d, fmt.Errorf("explain: no decision in %q", text)
	}
	return d, nil
}

// waitExplain polls g's explain for login until cond holds.
func (w *world) waitExplain(g *gw, login string, timeout time.Duration, cond func(decision) error) (time.Duration, decision, error) {
	start := time.Now()
	var last decision
	err := harness.WaitFor(context.Background(), timeout, func() error {
		d, err := w.explain(context.Background(), g, login)
		if err != nil {
			return err
		}
		last = d
		if err := cond(d); err != nil {
			return fmt.Errorf("gateway %s, %s: %w\n%s", g.name, login, err, d.text)
		}
		return nil
	})
	return time.Since(start), last, err
}

// client is the OpenSSH client for g as u.
func (w *world) client(g *gw, u *harness.User) *harness.Client {
	host, port, _ := net.SplitHostPort(g.sshAddr)
	p, _ := strconv.Atoi(port)
	return &harness.Client{Host: host, Port: p, KnownHosts: w.knownHosts, Identity: u.KeyPath}
}

// sshNode logs in through g with OpenSSH as login (user or user+node) and
// returns the node the session ran on.
func (w *world) sshNode(ctx context.Context, g *gw, login string, u *harness.User) (string, harness.Result) {
	r := harness.Run(w.client(g, u).SSH(ctx, login, `echo "$SSH_CONNECTION"`), nil)
	if r.ExitCode != 0 {
		return "", r
	}
	n, err := w.nodeFromSSHConnection(string(r.Stdout))
	if err != nil {
		r.Err, r.ExitCode = err, -1
	}
	return n, r
}

// mustSSH is sshNode failing the test unless the login works.
func (w *world) mustSSH(ctx context.Context, g *gw, login string, u *harness.User) string {
	w.t.Helper()
	n, r := w.sshNode(ctx, g, login, u)
	if r.ExitCode != 0 {
		w.t.Fatalf("ssh %s via %s: %s", login, g.name, r)
	}
	return n
}

// goNode logs in through g with Go's SSH client and returns the node.
func (w *world) goNode(ctx context.Context, g *gw, login string, u *harness.User) (string, error) {
	c, err := harness.DialSSH(ctx, g.sshAddr, login, keys.HostPublicKey, ssh.PublicKeys(u.Signer))
	if err != nil {
		return "", fmt.Errorf("login %s via %s: %w", login, g.name, err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return "", fmt.Errorf("session %s via %s: %w", login, g.name, err)
	}
	defer s.Close()
	out, err := s.Output(`echo "$SSH_CONNECTION"`)
	if err != nil {
		return "", fmt.Errorf("command %s via %s: %w", login, g.name, err)
	}
	return w.nodeFromSSHConnection(string(out))
}

// burst logs n fresh users in, alternating gateways, four at a time, and
// returns the node each landed on. Every login must succeed.
func (w *world) burst(ctx context.Context, n int) []string {
	w.t.Helper()
	out := make([]string, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range n {
		u := w.freshUser()
		g := w.gws[i%len(w.gws)]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = w.goNode(ctx, g, u.Name, u)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		w.t.Fatalf("burst of %d logins: %v", n, err)
	}
	return out
}

// nodeFromSSHConnection maps "CLIENT CPORT SERVER SPORT" to a node name.
func (w *world) nodeFromSSHConnection(s string) (string, error) {
	f := strings.Fields(s)
	if len(f) < 4 {
		return "", fmt.Errorf("SSH_CONNECTION %q: want 4 fields", s)
	}
	for _, n := range w.nodes {
		if n.host == f[2] {
			return n.name, nil
		}
	}
	return "", fmt.Errorf("SSH_CONNECTION %q: server address is no node of this world", s)
}

// cli runs the frontdoor binary (an admin or agent subcommand).
func (w *world) cli(ctx context.Context, args ...string) harness.Result {
	return w.cliEnv(ctx, nil, args...)
}

// cliEnv is cli with env added to the environment.
func (w *world) cliEnv(ctx context.Context, env []string, args ...string) harness.Result {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "USER=clustere2e"), env...)
	cmd.WaitDelay = 5 * time.Second
	return harness.Run(cmd, nil)
}

// held is a long-running OpenSSH session: it prints SSH_CONNECTION and
// "ready", then answers each line it reads with "got LINE".
type held struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *syncBuffer
	errb  *syncBuffer
	done  chan struct{}
	node  string
}

func (w *world) hold(ctx context.Context, g *gw, login string, u *harness.User) *held {
	w.t.Helper()
	cmd := w.client(g, u).SSH(ctx, login, `echo "$SSH_CONNECTION"; echo ready; while read -r l; do echo "got $l"; done`)
	h := &held{cmd: cmd, out: &syncBuffer{}, errb: &syncBuffer{}, done: make(chan struct{})}
	var err error
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		w.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = h.out, h.errb
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { cmd.Wait(); close(h.done) }()
	w.t.Cleanup(func() {
		h.stdin.Close()
		cmd.Process.Kill()
		<-h.done
	})
	if err := h.expect("ready\n", 30*time.Second); err != nil {
		w.t.Fatalf("held session %s via %s: %v", login, g.name, err)
	}
	first, _, _ := strings.Cut(h.out.String(), "\n")
	if h.node, err = w.nodeFromSSHConnection(first); err != nil {
		w.t.Fatal(err)
	}
	return h
}

// expect waits until the session's output contains s.
func (h *held) expect(s string, timeout time.Duration) error {
	return harness.WaitFor(context.Background(), timeout, func() error {
		if strings.Contains(h.out.String(), s) {
			return nil
		}
		select {
		case <-h.done:
			return fmt.Errorf("session ended (%v) before %q; stdout %q stderr %q", h.cmd.ProcessState, s, h.out.String(), h.errb.String())
		default:
		}
		return fmt.Errorf("no %q yet; stdout %q", s, h.out.String())
	})
}

// ping checks the session still relays both ways.
func (h *held) ping(word string) error {
	if _, err := io.WriteString(h.stdin, word+"\n"); err != nil {
		return fmt.Errorf("write to session: %w", err)
	}
	return h.expect("got "+word+"\n", 15*time.Second)
}

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

// proc is a frontdoor subprocess (gateway or agent).
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

func startProc(logPath, name string, args ...string) (*proc, error) {
	return startProcEnv(logPath, nil, name, args...)
}

// startProcEnv starts name with args, its output to logPath, env added to
// this process's environment.
func startProcEnv(logPath string, env []string, name string, args ...string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	// Never outlive the test binary, even if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill is kill -9: no goodbye to the cluster.
func (p *proc) kill() {
	p.once.Do(func() {
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	})
}

// stop asks for a clean exit (SIGTERM), then kills after 10 s.
func (p *proc) stop() {
	p.once.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	})
}

func (w *world) dumpLogsOnFailure() {
	if !w.t.Failed() {
		if os.Getenv("FRONTDOOR_E2E_KEEP") == "" {
			os.RemoveAll(w.dir)
		}
		return
	}
	for _, g := range w.gws {
		w.t.Logf("--- %s log (%s), tail:\n%s", g.name, g.log, tail(g.log, 6000))
	}
	for _, n := range w.nodes {
		p := filepath.Join(filepath.Dir(n.agentCfg), "agent.log")
		w.t.Logf("--- %s agent log (%s), tail:\n%s", n.name, p, tail(p, 2000))
	}
	w.t.Logf("state kept in %s", w.dir)
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// handedOut remembers every port freeAddr returned: two worlds run at once,
// and the kernel may offer a port one of them has just probed and not yet
// bound, which then fails to start (seen: a gateway's SSH port taken by
// the other world's gossip).
var handedOut = struct {
	sync.Mutex
	ports map[string]bool
}{ports: map[string]bool{}}

// freeAddr returns host:port, free a moment ago and never returned before
// in this test process.
func freeAddr(t *testing.T, host string) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		p, err := harness.FreePort(host)
		if err != nil {
			t.Fatal(err)
		}
		a := net.JoinHostPort(host, strconv.Itoa(p))
		if !handedOut.ports[a] && !handedOut.ports[strconv.Itoa(p)] {
			handedOut.ports[a] = true
			handedOut.ports[strconv.Itoa(p)] = true // gossip binds UDP too
			return a
		}
	}
	t.Fatalf("no fresh free port on %s", host)
	return ""
}

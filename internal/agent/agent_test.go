package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
)

func TestMain(m *testing.M) {
	// memberlist's Shutdown does not wait for a probe in flight; that
	// goroutine ends by itself within one probe interval.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"))
}

// banner starts a TCP server on 127.0.0.1:0 that greets with line and
// closes; it stops at test cleanup. It returns the address.
func banner(t *testing.T, line string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(line))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFileSource(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.json")
	writeFile(t, p, `{"load1": 3.5, "cpus": 8, "mem_avail_frac": 0.4, "sessions": 12, "users": 5, "has_psi": true, "cpu_pressure": 0.2}`)
	s, err := FileSource{Path: p}.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := Sample{Load1: 3.5, CPUs: 8, MemAvailFrac: 0.4, Sessions: 12, Users: 5, HasPSI: true, CPUPressure: 0.2}
	if s != want {
		t.Fatalf("got %+v want %+v", s, want)
	}
	writeFile(t, p, "load1: 1\ncpus: 0\n")
	if s, err := (FileSource{Path: p}).Sample(t.Context()); err != nil || s.CPUs != 1 {
		t.Fatalf("yaml: %+v %v", s, err)
	}
	writeFile(t, p, `{"lod1": 3}`)
	if _, err := (FileSource{Path: p}).Sample(t.Context()); err == nil {
		t.Fatal("typo accepted")
	}
	if _, err := (FileSource{Path: p + ".missing"}).Sample(t.Context()); err == nil {
		t.Fatal("missing file accepted")
	}
}

const tcp4 = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0101007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0101007F:0016 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
   2: 0101007F:0016 0100007F:C351 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 20 4 30 10 -1
   3: 0201007F:0016 0100007F:C352 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0 20 4 30 10 -1
   4: 0101007F:0016 0100007F:C353 06 00000000:00000000 00:00000000 00000000     0        0 0 3 0 0 0 0 0 0
   5: 0100007F:C350 0101007F:0016 01 00000000:00000000 00:00000000 00000000     0        0 5 1 0 20 4 30 10 -1
`

const tcp6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0000000000000000FFFF00000101007F:0016 0000000000000000FFFF00000100007F:D000 01 00000000:00000000 00:00000000 00000000     0        0 6 1 0 20 4 30 10 -1
`

// fakeProc builds a /proc with the files ProcSource reads.
func fakeProc(t *testing.T, cpuLine string, psi bool) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "loadavg"), "1.50 1.00 0.50 2/300 12345\n")
	writeFile(t, filepath.Join(root, "stat"), cpuLine+"cpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 1 2 3 4 5 6 7 8 0 0\nintr 1\n")
	writeFile(t, filepath.Join(root, "meminfo"), "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    250 kB\n")
	if psi {
		writeFile(t, filepath.Join(root, "pressure", "cpu"), "some avg10=12.50 avg60=1.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
		writeFile(t, filepath.Join(root, "pressure", "memory"), "some avg10=5.00 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	}
	writeFile(t, filepath.Join(root, "net", "tcp"), tcp4)
	writeFile(t, filepath.Join(root, "net", "tcp6"), tcp6)
	for pid, cmd := range map[string]string{
		"1":   "/sbin/init\x00",
		"100": "sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups\x00",
		"200": "sshd: alice [priv]\x00",
		"201": "sshd: alice@pts/0\x00",
		"202": "sshd: alice [priv]\x00",
		"300": "sshd-session: bob [priv]\x00",
		"400": "sshd: unknown [priv]\x00",
		"401": "sshd: carol [net]\x00",
	} {
		writeFile(t, filepath.Join(root, pid, "cmdline"), cmd)
	}
	return root
}

func TestProcSource(t *testing.T) {
	root := fakeProc(t, "cpu  100 0 100 700 100 0 0 0 0 0\n", true)
	p := &ProcSource{Root: root, SSHDAddr: "127.0.1.1:22"}
	s, err := p.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := Sample{Load1: 1.5, Load5: 1, Load15: 0.5, CPUs: 2, MemAvailFrac: 0.25,
		HasPSI: true, CPUPressure: 0.125, MemPressure: 0.05, Sessions: 3, Users: 2}
	if s != want {
		t.Fatalf("got  %+v\nwant %+v", s, want)
	}
	// Second sample: 100 busy of 200 jiffies since the first.
	writeFile(t, filepath.Join(root, "stat"), "cpu  150 0 150 750 150 0 0 0 0 0\ncpu0 0\n")
	s, err = p.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUUtil != 0.5 {
		t.Fatalf("cpu util = %v, want 0.5", s.CPUUtil)
	}
	// Wildcard sshd address counts every local address on the port.
	p2 := &ProcSource{Root: fakeProc(t, "cpu 1 1 1 1 1 0 0 0\n", false), SSHDAddr: "0.0.0.0:22"}
	s, err = p2.Sample(t.Context())
	if err != nil || s.Sessions != 4 || s.HasPSI {
		t.Fatalf("wildcard: %+v %v", s, err)
	}
}

func TestSSHDSessionUser(t *testing.T) {
	for cmd, want := range map[string]string{
		"sshd: alice [priv]":          "alice",
		"sshd-session: bob [priv]":    "bob",
		"sshd: alice@pts/0":           "",
		"sshd: alice@notty":           "",
		"sshd: unknown [priv]":        "",
		"sshd: alice [net]":           "",
		"sshd: /usr/sbin/sshd -D":     "",
		"sshd: alice [preauth]":       "",
		"/usr/bin/sshd: alice [priv]": "",
	} {
		got, ok := sshdSessionUser(cmd)
		if got != want || ok != (want != "") {
			t.Errorf("%q → %q %v, want %q", cmd, got, ok, want)
		}
	}
}

func TestSignificant(t *testing.T) {
	base := cluster.Health{SSHDUp: true, CPUs: 4, Load1: 1, MemAvailFrac: 0.5, Sessions: 20}
	for name, tt := range map[string]struct {
		mod  func(*cluster.Health)
		want bool
	}{
		"same":             {func(h *cluster.Health) {}, false},
		"sshd down":        {func(h *cluster.Health) { h.SSHDUp = false }, true},
		"drain":            {func(h *cluster.Health) { h.Draining = true }, true},
		"load small":       {func(h *cluster.Health) { h.Load1 = 2 }, false},
		"load per cpu":     {func(h *cluster.Health) { h.Load1 = 3 }, true},
		"memory":           {func(h *cluster.Health) { h.MemAvailFrac = 0.35 }, true},
		"pressure":         {func(h *cluster.Health) { h.CPUPressure = 0.2 }, true},
		"few sessions":     {func(h *cluster.Health) { h.Sessions = 24 }, false},
		"many sessions":    {func(h *cluster.Health) { h.Sessions = 25 }, true},
		"sessions dropped": {func(h *cluster.Health) { h.Sessions = 10 }, true},
	} {
		cur := base
		tt.mod(&cur)
		if got := significant(base, cur); got != tt.want {
			t.Errorf("%s: significant = %v, want %v", name, got, tt.want)
		}
	}
}

type fakePub struct {
	mu  sync.Mutex
	got []cluster.Health
}

func (f *fakePub) PublishHealth(h cluster.Health) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, h)
	return nil
}

// tickConfig is an agent config for tick tests: a metrics file (returned)
// with a modest load, a banner server as its sshd, a drain file.
func tickConfig(t *testing.T) (Config, string) {
	dir := t.TempDir()
	metrics := filepath.Join(dir, "m.json")
	writeFile(t, metrics, `{"load1": 1, "cpus": 4, "mem_avail_frac": 0.5}`)
	cfg := DefaultConfig()
	cfg.Node, cfg.SSHAddr, cfg.ProbeAddr = "n1", "10.0.0.1:22", banner(t, "SSH-2.0-test\r\n")
	cfg.DrainFile = filepath.Join(dir, "drain")
	return cfg, metrics
}

func TestTick(t *testing.T) {
	cfg, metrics := tickConfig(t)
	cfg.MaxSessions = 50
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	pub := &fakePub{}
	a := &agent{cfg: cfg, src: FileSource{Path: metrics}, pub: pub, log: testLogger(), now: func() time.Time { return now }}
	steps := []struct {
		name      string
		do        func()
		published bool
		check     func(cluster.Health) error
	}{
		{"first tick publishes", func() {}, true, func(h cluster.Health) error {
			if !h.SSHDUp || h.Draining || h.Addr != "10.0.0.1:22" || h.MaxSessions != 50 || h.CPUs != 4 || !h.At.Equal(now) {
				return fmt.Errorf("%+v", h)
			}
			return nil
		}},
		{"no change, not due", func() { now = now.Add(time.Second) }, false, nil},
		{"load jump publishes at once", func() { writeFile(t, metrics, `{"load1": 9, "cpus": 4, "mem_avail_frac": 0.5}`) }, true,
			func(h cluster.Health) error {
				if h.Load1 != 9 {
					return fmt.Errorf("load %v", h.Load1)
				}
				return nil
			}},
		{"drain publishes at once", func() { Drain(cfg.DrainFile, "test") }, true, func(h cluster.Health) error {
			if !h.Draining {
				return errors.New("not draining")
			}
			return nil
		}},
		{"interval passes", func() { now = now.Add(cfg.Interval) }, true, nil},
		{"broken source publishes nothing", func() { writeFile(t, metrics, "{"); now = now.Add(cfg.Interval) }, false, nil},
	}
	for _, st := range steps {
		before := len(pub.got)
		st.do()
		a.tick(t.Context())
		if published := len(pub.got) > before; published != st.published {
			t.Fatalf("%s: published = %v", st.name, published)
		}
		if st.check != nil {
			if err := st.check(pub.got[len(pub.got)-1]); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
		}
	}
	if err := Undrain(cfg.DrainFile); err != nil || Drained(cfg.DrainFile) {
		t.Fatalf("undrain: %v", err)
	}
	if err := Undrain(cfg.DrainFile); err != nil {
		t.Fatalf("second undrain: %v", err)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agent.yaml")
	writeFile(t, p, `
node: login1
pool: gpu
ssh_addr: 127.0.1.1:22
interval: 3s
cluster:
  bind_addr: 127.0.0.1
  bind_port: 0
  insecure: true
  join: ["127.0.0.1:7946"]
`)
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster.Name != "login1" || cfg.ProbeAddr != "127.0.1.1:22" || cfg.Interval != 3*time.Second ||
		cfg.ProbeInterval != time.Second || cfg.Cluster.GossipInterval == 0 {
		t.Fatalf("cfg %+v", cfg)
	}
	writeFile(t, p, "node: x\nbogus: 1\n")
	if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown key: %v", err)
	}
	writeFile(t, p, "node: x\ncluster: {insecure: true}\nssh_addr: nope\n")
	if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), p+":3: ssh_addr: address nope: missing port") {
		t.Fatalf("bad ssh_addr: %v", err)
	}
	host, _ := os.Hostname()
	writeFile(t, p, "cluster: {insecure: true, join: [\"gw1:7946\"]}\n")
	cfg, err = LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Node != host || cfg.SSHAddr != net.JoinHostPort(host, "22") || cfg.ProbeAddr != cfg.SSHAddr || cfg.Cluster.Name != host ||
		cfg.Pool != "default" || cfg.Interval != 5*time.Second {
		t.Fatalf("derived from the host name: %+v", cfg)
	}
}

// testKey is a gossip key (32 zero bytes, base64).
const testKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

func TestValidateConfig(t *testing.T) {
	good := DefaultConfig()
	good.Node, good.SSHAddr, good.Cluster.Insecure = "login1", "10.0.0.1:22", true
	good.Cluster.Join = []string{"gw1:7946"}
	good.Derive()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"node name", func(c *Config) { c.Node, c.Cluster.Name = "login 1", "login 1" }, `node: "login 1" is not a valid node name`},
		{"pool name", func(c *Config) { c.Pool = "" }, `pool: "" is not a valid pool name`},
		{"ssh_addr", func(c *Config) { c.SSHAddr = "10.0.0.1" }, "ssh_addr: address 10.0.0.1: missing port"},
		{"probe_addr", func(c *Config) { c.ProbeAddr = "" }, "probe_addr:"},
		{"max_sessions", func(c *Config) { c.MaxSessions = -1 }, "max_sessions: must not be negative"},
		{"interval", func(c *Config) { c.Interval = 0 }, "interval: must be positive"},
		{"probe_interval", func(c *Config) { c.ProbeInterval = 0 }, "probe_interval: must be positive"},
		{"probe_timeout", func(c *Config) { c.ProbeTimeout = -1 }, "probe_timeout: must be positive"},
		{"drain_file", func(c *Config) { c.DrainFile = "" }, "drain_file: must be set"},
		{"host_key", func(c *Config) { c.HostKey, c.Cluster.Insecure, c.Cluster.SecretKeys = "", false, []string{testKey} }, "host_key: must be set"},
		{"not derived", func(c *Config) { c.Cluster.Name = "other" }, "cluster.name: must be the node's name"},
		{"gateway keys", func(c *Config) { c.Cluster.GatewayKeys = []string{testKey} }, "cluster.gateway_keys: must not be set on an agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.change(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRun runs a real agent against a gateway member: the gateway sees the
// node, its drain, and its departure when the agent stops.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	gwCfg := cluster.DefaultConfig()
	gwCfg.Name, gwCfg.BindAddr, gwCfg.BindPort, gwCfg.GatewayPort, gwCfg.Insecure = "gw1", "127.0.0.1", 0, 0, true
	gwCfg.GossipInterval, gwCfg.ProbeInterval, gwCfg.ProbeTimeout = 20*time.Millisecond, 500*time.Millisecond, 400*time.Millisecond
	gwCfg.PushPullInterval, gwCfg.RejoinInterval = 300*time.Millisecond, 200*time.Millisecond
	gw, err := cluster.Start(t.Context(), gwCfg, cluster.Options{Role: cluster.RoleGateway})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()

	metrics := filepath.Join(dir, "m.json")
	writeFile(t, metrics, `{"load1": 2, "cpus": 8, "mem_avail_frac": 0.7, "sessions": 3}`)
	cfg := DefaultConfig()
	cfg.Node, cfg.Pool, cfg.SSHAddr = "login1", "gpu", banner(t, "SSH-2.0-test\r\n")
	cfg.DrainFile, cfg.MetricsFile = filepath.Join(dir, "drain"), metrics
	cfg.Interval, cfg.ProbeInterval = time.Second, 100*time.Millisecond
	cfg.Cluster = gwCfg
	cfg.Cluster.Join = []string{gw.LocalAddr()}
	cfg.HostKey = hostKeyFile(t, dir)
	cfg.Derive()

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, testLogger()) }()
	defer func() {
		cancel()
		<-done
	}()

	eventually(t, 20*time.Second, func() error {
		ns := gw.Nodes()
		if len(ns) != 1 || ns[0].Name != "login1" || !ns[0].Alive || !ns[0].SSHDUp || ns[0].Pool != "gpu" ||
			ns[0].Sessions != 3 || ns[0].CPUs != 8 || ns[0].Addr != cfg.SSHAddr {
			return fmt.Errorf("nodes %+v", ns)
		}
		return nil
	})
	if err := Drain(cfg.DrainFile, "maintenance"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		if ns := gw.Nodes(); !ns[0].Draining {
			return errors.New("drain not seen")
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	done <- nil // for the deferred receive
	eventually(t, 20*time.Second, func() error {
		if ns := gw.Nodes(); ns[0].Alive {
			return errors.New("stopped agent still alive")
		}
		return nil
	})
}

func eventually(t *testing.T, within time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true within %v: %v", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// hostKeyFile writes a fresh ed25519 host key in OpenSSH format.
func hostKeyFile(t *testing.T, dir string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "ssh_host_ed25519_key")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

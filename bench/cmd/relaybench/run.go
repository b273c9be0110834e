package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// Paths a transfer can take.
const (
	pathDirect    = "direct"
	pathFrontdoor = "frontdoor"
	pathSocat     = "socat"
	// pathPeer is sshpiper v1.6.1, a packet-relaying Go SSH proxy
	// (peer.go); on by default, --peer=false leaves it out.
	pathPeer = "sshpiper"
	// pathBaseline is a second gateway (--baseline-bin, e.g. the build
	// before a change), measured in the same run, interleaved.
	pathBaseline = "frontdoor-baseline"
)

// paths in the order of the first round; main adds the peer and the
// baseline when they run.
var paths = []string{pathDirect, pathFrontdoor, pathSocat}

// Ciphers measured: AES-GCM, and whatever the OpenSSH client picks by
// itself (chacha20-poly1305 for OpenSSH 9.x; both the gateway and sshd
// accept it).
var ciphers = []struct{ name, flag string }{
	{"aes128-gcm@openssh.com", "aes128-gcm@openssh.com"},
	{"default (chacha20-poly1305@openssh.com)", ""},
}

// Go's x/crypto lacks sntrup761 (OpenSSH 9.2's first choice): every path
// uses the same key exchange.
const kex = "curve25519-sha256"

// bench is the running setup: the node and the proxies in front of it.
type bench struct {
	o    options
	dir  string
	node *harness.Node
	user *harness.User
	kh   string
	src  string
	keys *harness.ClusterKeys
	// The node's sshd with every session process it forks, for CPU
	// accounting.
	sshdCPU *cpuGroup
	// proxies by path: every path but direct.
	proxies map[string]*proxyProc
}

// proxyProc is one proxy process in front of the node, its CPU accounted
// in a cgroup of its own (the whole tree: socat forks per connection).
type proxyProc struct {
	cmd     *exec.Cmd
	addr    string
	hostKey ssh.PublicKey // what the client sees
	cpu     *cpuGroup
	admin   string // a gateway's admin socket
}

// gw is the gateway under test.
func (b *bench) gw() *proxyProc { return b.proxies[pathFrontdoor] }

func (b *bench) sshArgs(path, cipher string) []string {
	host, port := b.node.Host(), b.node.Port()
	if p := b.proxies[path]; p != nil {
		host, port = splitAddr(p.addr)
	}
	a := []string{"-F", "/dev/null", "-o", "UserKnownHostsFile=" + b.kh, "-o", "StrictHostKeyChecking=yes",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", b.user.KeyPath,
		"-o", "KexAlgorithms=" + kex, "-p", strconv.Itoa(port), "-l", b.user.Name}
	if cipher != "" {
		a = append(a, "-c", cipher)
	}
	return append(a, host)
}

// addr and hostKey are where a client of path connects and the key it
// expects.
func (b *bench) target(path string) (string, ssh.PublicKey) {
	if p := b.proxies[path]; p != nil {
		return p.addr, p.hostKey
	}
	return b.node.Addr(), b.node.HostKey()
}

func splitAddr(addr string) (string, int) {
	h, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return h, n
}

func run(ctx context.Context, o options) (*result, error) {
	r := &result{Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), Kex: kex, Quick: o.quick,
		Pinned: o.pinned, SizeMiB: o.sizeMiB, Reps: o.reps, LatencyN: o.latN, Paths: paths, LoadStart: loadNow()}
	if o.pinned {
		r.Pinning = fmt.Sprintf("client, node sshd and the bench on CPU %d; each proxy on CPU %d", cpuClient, cpuProxy)
	}
	if o.peer {
		r.Peer = fmt.Sprintf("sshpiper %s (github.com/tg123/sshpiper %s, crypto fork github.com/datacosmos-br/sshpiper.crypto %s)",
			piperVersion, piperCommit[:12], piperCryptoRef[:12])
	}
	r.Host, _ = os.Hostname()
	r.GoVersion = runtime.Version()
	if out, err := exec.Command("ssh", "-V").CombinedOutput(); err == nil {
		r.OpenSSH = strings.TrimSpace(string(out))
	}
	b, cleanup, err := setup(ctx, o)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	if o.hold {
		return nil, b.holdOpen(ctx)
	}
	if o.waitLoad > 0 {
		r.Wait = waitForLoad(ctx, o.waitLoad, o.waitMax)
	}
	phase := func(name string, f func() error) error {
		if !o.phase(name) {
			return nil
		}
		p := phaseLoad{Name: name, LoadStart: loadNow()}
		start := time.Now()
		log.Printf("phase %s (load %.2f)", name, p.LoadStart.L1)
		err := f()
		p.Seconds = time.Since(start).Seconds()
		p.LoadEnd = loadNow()
		r.Phases = append(r.Phases, p)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	if err := phase("transfer", func() error { return b.transfers(ctx, r) }); err != nil {
		return nil, err
	}
	if err := phase("latency", func() error { return b.latency(ctx, r) }); err != nil {
		return nil, err
	}
	if err := phase("rate", func() error { return b.rate(ctx, r, "") }); err != nil {
		return nil, err
	}
	if err := phase("profile", func() error { return b.profiles(ctx, r) }); err != nil {
		return nil, err
	}
	if err := phase("trace", func() error { return b.traces(ctx) }); err != nil {
		return nil, err
	}
	// Last: it leaves thousands of sshd sessions to tear down.
	if err := phase("idle", func() error { return b.idle(ctx, r) }); err != nil {
		return nil, err
	}
	r.LoadEnd = loadNow()
	r.Goals = goals(r)
	return r, nil
}

// holdOpen prints, for each path, the ssh command that reaches it and the
// proxy's pid, then waits for ctx's end (^C): the setup, for tracing and
// profiling by hand.
func (b *bench) holdOpen(ctx context.Context) error {
	for _, p := range paths {
		pid := b.node.PID()
		if pp := b.proxies[p]; pp != nil {
			pid = pp.cmd.Process.Pid
		}
		fmt.Printf("%s (pid %d): ssh %s\n", p, pid, strings.Join(b.sshArgs(p, ""), " "))
	}
	fmt.Printf("upload source: %s; gateway admin socket: %s; ^C ends\n", b.src, b.gw().admin)
	<-ctx.Done()
	return errHeld
}

// errHeld ends a --hold run.
var errHeld = errors.New("held open until interrupted; nothing measured")

// waitForLoad waits, up to max, for the 1-minute load average to fall
// below limit: a measurement taken while other work runs on the machine
// measures that work. It records what it saw either way.
func waitForLoad(ctx context.Context, limit float64, max time.Duration) *loadWait {
	w := &loadWait{Limit: limit, MaxSeconds: max.Seconds(), Start: loadNow()}
	start := time.Now()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		l := loadNow()
		if l.L1 < limit {
			w.Reached = true
			break
		}
		if time.Since(start) >= max {
			break
		}
		log.Printf("waiting for the 1-minute load (%.2f) to fall below %.2f (%.0f s of %.0f s)", l.L1, limit, time.Since(start).Seconds(), max.Seconds())
		select {
		case <-ctx.Done():
			return w
		case <-t.C:
		}
	}
	w.Seconds = time.Since(start).Seconds()
	w.End = loadNow()
	if !w.Reached {
		log.Printf("the load stayed at %.2f or more for %.0f s: measuring anyway (recorded)", limit, w.Seconds)
	}
	return w
}

func setup(ctx context.Context, o options) (*bench, func(), error) {
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return nil, cleanup, err
	}
	if _, err := exec.LookPath("socat"); err != nil {
		return nil, cleanup, fmt.Errorf("socat missing (make deps installs it): %w", err)
	}
	if o.pinned {
		if err := checkPinnable(); err != nil {
			return nil, cleanup, err
		}
		// The bench's own work (its Go clients, the bookkeeping) is on the
		// client's side.
		if err := pinPID(os.Getpid(), cpuClient); err != nil {
			return nil, cleanup, err
		}
	}
	dir, err := os.MkdirTemp("", "relaybench-")
	if err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, func() { os.RemoveAll(dir) })
	// sshd reads AuthorizedKeysFile as the user: the tree must be readable.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, cleanup, err
	}
	b := &bench{o: o, dir: dir, proxies: map[string]*proxyProc{}}
	if b.keys, err = harness.Keys(filepath.Join(dir, "keys")); err != nil {
		return nil, cleanup, err
	}
	const user = "fdbench"
	if err := harness.EnsureUnixUser(user); err != nil {
		return nil, cleanup, err
	}
	if b.user, err = harness.NewUser(filepath.Join(dir, "users"), user, ""); err != nil {
		return nil, cleanup, err
	}
	if b.node, err = harness.StartNode(ctx, harness.NodeOptions{Name: "bench1", Addr: "127.0.1.250", Dir: filepath.Join(dir, "node"),
		UserCAPub: b.keys.UserCAPub}); err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, func() { b.node.Stop() }, unmountCgroup)
	if o.pinned {
		// Sessions forked later inherit the listener's CPU.
		if err := pinPID(b.node.PID(), cpuClient); err != nil {
			return nil, cleanup, err
		}
	}
	if b.sshdCPU, err = newCPUGroup("sshd"); err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, b.sshdCPU.remove)
	if err := b.sshdCPU.add(b.node.PID()); err != nil {
		return nil, cleanup, err
	}
	if err := b.node.Authorize(user, b.user.AuthorizedKey()); err != nil {
		return nil, cleanup, err
	}
	usersFile := filepath.Join(dir, "users.yaml")
	if err := harness.WriteUsersFile(usersFile, b.user); err != nil {
		return nil, cleanup, err
	}
	if b.proxies[pathFrontdoor], err = b.startGateway(ctx, "gw", bin, usersFile, nil, &undo); err != nil {
		return nil, cleanup, err
	}
	if o.baselineBin != "" {
		bbin, err := filepath.Abs(o.baselineBin)
		if err != nil {
			return nil, cleanup, err
		}
		var env []string
		if o.baselineEnv != "" {
			env = strings.Split(o.baselineEnv, ",")
		}
		if b.proxies[pathBaseline], err = b.startGateway(ctx, "gw-baseline", bbin, usersFile, env, &undo); err != nil {
			return nil, cleanup, fmt.Errorf("baseline gateway: %w", err)
		}
	}
	if b.proxies[pathSocat], err = b.startSocat(ctx, &undo); err != nil {
		return nil, cleanup, err
	}
	if o.peer {
		if b.proxies[pathPeer], err = b.startPeer(ctx, &undo); err != nil {
			return nil, cleanup, err
		}
	}

	b.kh = filepath.Join(dir, "known_hosts")
	lines := b.node.KnownHostsLine() + "\n"
	for _, p := range b.proxies {
		lines += harness.KnownHostsLine(p.addr, p.hostKey) + "\n"
	}
	if err := os.WriteFile(b.kh, []byte(lines), 0o644); err != nil {
		return nil, cleanup, err
	}
	// A source file in memory, so the disk is not measured.
	b.src = filepath.Join("/dev/shm", fmt.Sprintf("relaybench-%d", os.Getpid()))
	if err := writeZeros(b.src, o.sizeMiB); err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, func() { os.Remove(b.src) })
	return b, cleanup, nil
}

// startSocat runs socat as a plain TCP forwarder to the node (a process
// per connection, as socat's fork option does).
func (b *bench) startSocat(ctx context.Context, undo *[]func()) (*proxyProc, error) {
	port, err := harness.FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	p := &proxyProc{addr: fmt.Sprintf("127.0.0.1:%d", port), hostKey: b.node.HostKey()}
	err = b.startProxy(ctx, pathSocat, p, nil, undo, "socat",
		fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,fork,reuseaddr,backlog=1024", port), "TCP:"+b.node.Addr())
	return p, err
}

// startProxy runs a proxy's program (name, args, with env added) on the
// proxy's CPU when pinned, its CPU time accounted in a cgroup of its own,
// and waits until it listens on p.addr. undo gets what stops it.
func (b *bench) startProxy(ctx context.Context, name string, p *proxyProc, env []string, undo *[]func(), prog string, args ...string) error {
	var err error
	if p.cpu, err = newCPUGroup(name); err != nil {
		return err
	}
	*undo = append(*undo, p.cpu.remove)
	p.cmd = b.command(context.Background(), cpuProxy, prog, args...)
	p.cmd.Stderr = os.Stderr
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return err
	}
	*undo = append(*undo, func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	if err := p.cpu.add(p.cmd.Process.Pid); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := waitListening(wctx, p.addr); err != nil {
		return fmt.Errorf("%s did not start: %w", name, err)
	}
	return nil
}

// startGateway runs bin as a gateway in front of the node, its CPU
// accounted in its own cgroup.
func (b *bench) startGateway(ctx context.Context, name, bin, usersFile string, env []string, undo *[]func()) (*proxyProc, error) {
	port, err := harness.FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	g := &proxyProc{addr: fmt.Sprintf("127.0.0.1:%d", port), admin: filepath.Join(b.dir, name, "admin.sock"), hostKey: b.keys.HostPublicKey}
	cfgPath, err := harness.WriteGatewayConfig(filepath.Join(b.dir, name), harness.GatewayConfig{
		Listen: g.addr, AdminSocket: g.admin,
		Edit: func(c *config.Config) {
			g := &c.Gateway
			g.AdminPprof = true // profiles, and liveMemory forces GCs through it
			g.MaxConnections = 20000
			// Thousands of logins from 127.0.0.1: admission control is not
			// what is measured.
			g.AdmissionExempt, g.MaxStartups = []string{"127.0.0.0/8"}, 1000
		},
		Keys: b.keys, Nodes: []harness.NodeEntry{b.node.Entry("general")}, UsersFile: usersFile, LogLevel: "warn",
	})
	if err != nil {
		return nil, err
	}
	return g, b.startProxy(ctx, name, g, env, undo, bin, "gateway", "--config", cfgPath)
}

func waitListening(ctx context.Context, addr string) error {
	return harness.WaitFor(ctx, 15*time.Second, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// waitNoChildren waits (up to 10 s) until pid has no child processes, so
// that their CPU time has been added to pid's cutime/cstime.
func waitNoChildren(ctx context.Context, pid int) error {
	return harness.WaitFor(ctx, 10*time.Second, func() error {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			return fmt.Errorf("children %s still running", s)
		}
		return nil
	})
}

// cpuSample is the CPU seconds so far of sshd with every session process
// it forked, and of each proxy with its children.
type cpuSample struct {
	sshd  float64
	proxy map[string]float64
	// Read and write syscalls so far of each Go proxy (/proc/PID/io): a
	// figure machine load does not inflate. (socat forks per connection;
	// its counts are not kept.)
	sys map[string][2]int64
}

func (b *bench) cpuNow() (cpuSample, error) {
	s := cpuSample{proxy: map[string]float64{}, sys: map[string][2]int64{}}
	var errs []error
	var err error
	s.sshd, err = b.sshdCPU.seconds()
	errs = append(errs, err)
	for path, p := range b.proxies {
		s.proxy[path], err = p.cpu.seconds()
		errs = append(errs, err)
		if path != pathSocat {
			s.sys[path] = syscallCounts(p.cmd.Process.Pid)
		}
	}
	return s, errors.Join(errs...)
}

// syscallCounts is syscr and syscw from /proc/PID/io.
func syscallCounts(pid int) [2]int64 {
	var c [2]int64
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return c
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case ok && k == "syscr":
			c[0] = n
		case ok && k == "syscw":
			c[1] = n
		}
	}
	return c
}

// settle waits until the sessions of the last transfer have ended on the
// node and in socat.
func (b *bench) settle(ctx context.Context) error {
	return errors.Join(waitNoChildren(ctx, b.node.PID()), waitNoChildren(ctx, b.proxies[pathSocat].cmd.Process.Pid))
}

func writeZeros(path string, mib int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for i := 0; i < mib; i++ {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func loadNow() loadAvg {
	l := loadAvg{At: time.Now().UTC().Format(time.RFC3339)}
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	if len(f) >= 3 {
		l.L1, _ = strconv.ParseFloat(f[0], 64)
		l.L5, _ = strconv.ParseFloat(f[1], 64)
		l.L15, _ = strconv.ParseFloat(f[2], 64)
	}
	return l
}

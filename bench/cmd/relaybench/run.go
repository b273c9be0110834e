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

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// Paths a transfer can take.
const (
	pathDirect    = "direct"
	pathFrontdoor = "frontdoor"
	pathSocat     = "socat"
	// pathBaseline is a second gateway (--baseline-bin, e.g. the build
	// before a change), measured in the same run, interleaved.
	pathBaseline = "frontdoor-baseline"
)

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

// bench is the running setup: the node, the gateway, the forwarder.
type bench struct {
	o         options
	dir       string
	node      *harness.Node
	user      *harness.User
	gw        *exec.Cmd
	gwAddr    string
	adminSock string
	socat     *exec.Cmd
	socatAddr string
	kh        string
	src       string
	keys      *harness.ClusterKeys
	// CPU accounting for the whole process trees.
	gwCPU, sshdCPU, socatCPU *cpuGroup
	// The baseline gateway, with --baseline-bin.
	base *gatewayProc
}

type gatewayProc struct {
	cmd   *exec.Cmd
	addr  string
	admin string
	cpu   *cpuGroup
}

func (b *bench) sshArgs(path, cipher string) []string {
	host, port := b.node.Host(), b.node.Port()
	switch path {
	case pathFrontdoor:
		host, port = splitAddr(b.gwAddr)
	case pathSocat:
		host, port = splitAddr(b.socatAddr)
	case pathBaseline:
		host, port = splitAddr(b.base.addr)
	}
	a := []string{"-F", "/dev/null", "-o", "UserKnownHostsFile=" + b.kh, "-o", "StrictHostKeyChecking=yes",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", b.user.KeyPath,
		"-o", "KexAlgorithms=" + kex, "-p", strconv.Itoa(port), "-l", b.user.Name}
	if cipher != "" {
		a = append(a, "-c", cipher)
	}
	return append(a, host)
}

func splitAddr(addr string) (string, int) {
	h, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return h, n
}

func run(ctx context.Context, o options) (*result, error) {
	r := &result{Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), Kex: kex, Quick: o.quick,
		SizeMiB: o.sizeMiB, Reps: o.reps, LatencyN: o.latN, LoadStart: loadNow()}
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
	// Last: it leaves thousands of sshd sessions to tear down.
	if err := phase("idle", func() error { return b.idle(ctx, r) }); err != nil {
		return nil, err
	}
	r.LoadEnd = loadNow()
	r.Goals = goals(r)
	return r, nil
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
	dir, err := os.MkdirTemp("", "relaybench-")
	if err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, func() { os.RemoveAll(dir) })
	// sshd reads AuthorizedKeysFile as the user: the tree must be readable.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, cleanup, err
	}
	b := &bench{o: o, dir: dir}
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
	for _, g := range []struct {
		into **cpuGroup
		name string
	}{{&b.sshdCPU, "sshd"}, {&b.socatCPU, "socat"}} {
		cg, err := newCPUGroup(g.name)
		if err != nil {
			return nil, cleanup, err
		}
		*g.into = cg
		undo = append(undo, cg.remove)
	}
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
	gw, err := b.startGateway(ctx, "gw", bin, usersFile, nil, &undo)
	if err != nil {
		return nil, cleanup, err
	}
	b.gw, b.gwAddr, b.adminSock, b.gwCPU = gw.cmd, gw.addr, gw.admin, gw.cpu
	if o.baselineBin != "" {
		bbin, err := filepath.Abs(o.baselineBin)
		if err != nil {
			return nil, cleanup, err
		}
		var env []string
		if o.baselineEnv != "" {
			env = strings.Split(o.baselineEnv, ",")
		}
		if b.base, err = b.startGateway(ctx, "gw-baseline", bbin, usersFile, env, &undo); err != nil {
			return nil, cleanup, fmt.Errorf("baseline gateway: %w", err)
		}
	}

	sport, err := harness.FreePort("127.0.0.1")
	if err != nil {
		return nil, cleanup, err
	}
	b.socatAddr = fmt.Sprintf("127.0.0.1:%d", sport)
	b.socat = exec.Command("socat", fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,fork,reuseaddr,backlog=1024", sport), "TCP:"+b.node.Addr())
	b.socat.Stderr = os.Stderr
	b.socat.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := b.socat.Start(); err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, func() { b.socat.Process.Kill(); b.socat.Wait() })
	if err := b.socatCPU.add(b.socat.Process.Pid); err != nil {
		return nil, cleanup, err
	}
	if err := waitListening(ctx, b.socatAddr); err != nil {
		return nil, cleanup, fmt.Errorf("socat did not start: %w", err)
	}

	b.kh = filepath.Join(dir, "known_hosts")
	lines := harness.KnownHostsLine(b.gwAddr, b.keys.HostPublicKey) + "\n" + b.node.KnownHostsLine() + "\n" +
		harness.KnownHostsLine(b.socatAddr, b.node.HostKey()) + "\n"
	if b.base != nil {
		lines += harness.KnownHostsLine(b.base.addr, b.keys.HostPublicKey) + "\n"
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

// startGateway runs bin as a gateway in front of the node, its CPU
// accounted in its own cgroup.
func (b *bench) startGateway(ctx context.Context, name, bin, usersFile string, env []string, undo *[]func()) (*gatewayProc, error) {
	port, err := harness.FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	g := &gatewayProc{addr: fmt.Sprintf("127.0.0.1:%d", port), admin: filepath.Join(b.dir, name, "admin.sock")}
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
	if g.cpu, err = newCPUGroup(name); err != nil {
		return nil, err
	}
	*undo = append(*undo, g.cpu.remove)
	g.cmd = exec.Command(bin, "gateway", "--config", cfgPath)
	g.cmd.Stderr = os.Stderr
	g.cmd.Env = append(os.Environ(), env...)
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	*undo = append(*undo, func() { g.cmd.Process.Kill(); g.cmd.Wait() })
	if err := g.cpu.add(g.cmd.Process.Pid); err != nil {
		return nil, err
	}
	if err := waitListening(ctx, g.addr); err != nil {
		return nil, fmt.Errorf("gateway %s did not start: %w", name, err)
	}
	return g, nil
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

// cpuSample is the CPU seconds so far of the gateway, of sshd with every
// session process it forked, and of socat with its per-connection children.
type cpuSample struct {
	gw, base, sshd, socat float64
	// Read and write syscalls so far of the gateway and the baseline
	// (/proc/PID/io): a figure machine load does not inflate.
	gwSys, baseSys [2]int64
}

func (b *bench) cpuNow() (cpuSample, error) {
	var s cpuSample
	s.gwSys = syscallCounts(b.gw.Process.Pid)
	if b.base != nil {
		s.baseSys = syscallCounts(b.base.cmd.Process.Pid)
	}
	var e [4]error
	s.gw, e[0] = b.gwCPU.seconds()
	s.sshd, e[1] = b.sshdCPU.seconds()
	s.socat, e[2] = b.socatCPU.seconds()
	if b.base != nil {
		s.base, e[3] = b.base.cpu.seconds()
	}
	return s, errors.Join(e[:]...)
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
	return errors.Join(waitNoChildren(ctx, b.node.PID()), waitNoChildren(ctx, b.socat.Process.Pid))
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

// Command relaybench measures the gateway's relay against direct OpenSSH in
// the same run: bulk throughput up and down, `ssh HOST true` latency with the
// same key exchange, gateway CPU seconds per GiB relayed, and gateway memory
// per idle session. Everything is real: an OpenSSH sshd login node, the
// OpenSSH client, and the gateway as its own process (bin/frontdoor).
//
// Results go to OUT/relay.json and OUT/relay.md. Figures are reported, not
// asserted: on a shared 2-core machine the client, gateway and sshd compete
// for CPU, and that is part of what is measured.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

type result struct {
	Date       string  `json:"date"`
	Host       string  `json:"host"`
	CPUs       int     `json:"cpus"`
	Cipher     string  `json:"cipher"`
	Kex        string  `json:"kex"`
	SizeMiB    int     `json:"size_mib"`
	Reps       int     `json:"reps"`
	DirectUp   float64 `json:"direct_up_mib_s"`
	DirectDown float64 `json:"direct_down_mib_s"`
	GwUp       float64 `json:"gateway_up_mib_s"`
	GwDown     float64 `json:"gateway_down_mib_s"`
	UpRatio    float64 `json:"up_ratio"`
	DownRatio  float64 `json:"down_ratio"`
	// CPU seconds the gateway process spent per GiB relayed (user+system),
	// over all gateway transfers.
	GwCPUPerGiB float64 `json:"gateway_cpu_s_per_gib"`
	// CPU seconds sshd's session processes (and the remote cat/head they
	// ran) spent per GiB in the direct transfers: one side of the crypto a
	// relay does on both sides, done by OpenSSH, as a yardstick that
	// machine load inflates the same way.
	SSHDCPUPerGiB float64 `json:"sshd_cpu_s_per_gib_direct"`
	// `ssh HOST true`, milliseconds, median and p90 of LatencyN runs each.
	LatencyN      int     `json:"latency_runs"`
	DirectTrueP50 float64 `json:"direct_true_ms_p50"`
	DirectTrueP90 float64 `json:"direct_true_ms_p90"`
	GwTrueP50     float64 `json:"gateway_true_ms_p50"`
	GwTrueP90     float64 `json:"gateway_true_ms_p90"`
	LatencyRatio  float64 `json:"latency_ratio_p50"`
	IdleSessions  int     `json:"idle_sessions"`
	// Resident memory growth per idle session (includes garbage the GC
	// has not collected yet: the gateway keeps 64 MiB of GC headroom).
	IdleKiBPerSess float64 `json:"gateway_rss_kib_per_idle_session"`
	// live Go heap objects plus goroutine stacks, after forced GCs, per idle
	// session: what a session really holds.
	IdleLiveKiBPerSess float64 `json:"gateway_live_kib_per_idle_session"`
	IdleGoroutines     float64 `json:"gateway_goroutines_per_idle_session"`
}

func main() {
	out := flag.String("out", "bench/results", "directory for relay.json and relay.md")
	sizeMiB := flag.Int("size", 512, "MiB per transfer")
	reps := flag.Int("reps", 3, "transfers per direction and target (median reported)")
	latN := flag.Int("latency-runs", 30, "`ssh true` runs per target")
	idle := flag.Int("idle", 200, "idle sessions for the memory figure")
	bin := flag.String("bin", "bin/frontdoor", "frontdoor binary")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := run(ctx, *out, *bin, *sizeMiB, *reps, *latN, *idle); err != nil {
		log.Fatalf("relaybench: %v", err)
	}
}

const (
	cipher = "aes128-gcm@openssh.com"
	// Go's x/crypto lacks sntrup761 (OpenSSH 9.2's first choice): compare
	// both paths with the same key exchange.
	kex = "curve25519-sha256"
)

func run(ctx context.Context, out, bin string, sizeMiB, reps, latN, idleN int) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "relaybench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// sshd reads AuthorizedKeysFile as the user: the tree must be readable.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}

	keys, err := harness.Keys(filepath.Join(dir, "keys"))
	if err != nil {
		return err
	}
	const user = "fdbench"
	if err := harness.EnsureUnixUser(user); err != nil {
		return err
	}
	u, err := harness.NewUser(filepath.Join(dir, "users"), user, "")
	if err != nil {
		return err
	}
	node, err := harness.StartNode(ctx, harness.NodeOptions{Name: "bench1", Addr: "127.0.1.250", Dir: filepath.Join(dir, "node"),
		UserCAPub: keys.UserCAPub})
	if err != nil {
		return err
	}
	defer node.Stop()
	if err := node.Authorize(user, u.AuthorizedKey()); err != nil {
		return err
	}
	usersFile := filepath.Join(dir, "users.yaml")
	if err := harness.WriteUsersFile(usersFile, u); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	adminSock := filepath.Join(dir, "gw", "admin.sock")
	cfgPath, err := harness.WriteGatewayConfig(filepath.Join(dir, "gw"), harness.GatewayConfig{
		Listen: fmt.Sprintf("127.0.0.1:%d", port), AdminSocket: adminSock,
		GatewayExtra: map[string]any{"admin_pprof": true}, // liveMemory forces GCs through it
		Keys:         keys, Nodes: []harness.NodeEntry{node.Entry("general")}, UsersFile: usersFile, LogLevel: "warn",
	})
	if err != nil {
		return err
	}
	gw := exec.Command(bin, "gateway", "--config", cfgPath)
	gw.Stderr = os.Stderr
	if err := gw.Start(); err != nil {
		return err
	}
	defer func() { gw.Process.Kill(); gw.Wait() }()
	gwAddr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := harness.WaitFor(ctx, 15*time.Second, func() error {
		c, err := net.DialTimeout("tcp", gwAddr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		return fmt.Errorf("gateway did not start: %w", err)
	}

	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, []byte(harness.KnownHostsLine(gwAddr, keys.HostPublicKey)+"\n"+node.KnownHostsLine()+"\n"), 0o644); err != nil {
		return err
	}
	sshArgs := func(host string, port int) []string {
		return []string{"-F", "/dev/null", "-o", "UserKnownHostsFile=" + kh, "-o", "StrictHostKeyChecking=yes",
			"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", u.KeyPath, "-c", cipher,
			"-o", "KexAlgorithms=" + kex, "-p", strconv.Itoa(port), "-l", user, host}
	}
	direct := sshArgs(node.Host(), node.Port())
	via := sshArgs("127.0.0.1", port)

	// A source file in memory, so the disk is not measured.
	src := filepath.Join("/dev/shm", fmt.Sprintf("relaybench-%d", os.Getpid()))
	if err := writeZeros(src, sizeMiB); err != nil {
		return err
	}
	defer os.Remove(src)
	size := int64(sizeMiB) << 20

	r := result{Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), Cipher: cipher, Kex: kex,
		SizeMiB: sizeMiB, Reps: reps, LatencyN: latN, IdleSessions: idleN}
	r.Host, _ = os.Hostname()

	transfer := func(args []string, up bool) (float64, error) {
		var cmd *exec.Cmd
		if up {
			cmd = exec.CommandContext(ctx, "ssh", append(args, "cat > /dev/null")...)
			f, err := os.Open(src)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			cmd.Stdin = f
		} else {
			cmd = exec.CommandContext(ctx, "ssh", append(args, fmt.Sprintf("head -c %d /dev/zero", size))...)
		}
		// Output to /dev/null: capturing it would measure this process.
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return 0, err
		}
		defer devnull.Close()
		var stderr strings.Builder
		cmd.Stdout, cmd.Stderr = devnull, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%v: %s", err, stderr.String())
		}
		return float64(sizeMiB) / time.Since(start).Seconds(), nil
	}
	var gwCPU, sshdCPU float64
	var gwBytes, directBytes int64
	for _, up := range []bool{true, false} {
		var d, g []float64
		// Interleave, so that drifting machine load hits both alike.
		for i := 0; i < reps; i++ {
			before, err := harness.ChildrenCPU(node.PID())
			if err != nil {
				return err
			}
			v, err := transfer(direct, up)
			if err != nil {
				return fmt.Errorf("direct transfer: %w", err)
			}
			after, err := harness.ChildrenCPU(node.PID())
			if err != nil {
				return err
			}
			sshdCPU += after - before
			directBytes += size
			d = append(d, v)
			before, err = harness.ProcessCPU(gw.Process.Pid)
			if err != nil {
				return err
			}
			v, err = transfer(via, up)
			if err != nil {
				return fmt.Errorf("gateway transfer: %w", err)
			}
			after, err = harness.ProcessCPU(gw.Process.Pid)
			if err != nil {
				return err
			}
			gwCPU += after - before
			gwBytes += size
			g = append(g, v)
		}
		if up {
			r.DirectUp, r.GwUp = median(d), median(g)
		} else {
			r.DirectDown, r.GwDown = median(d), median(g)
		}
		log.Printf("up=%v direct %v gateway %v MiB/s", up, d, g)
	}
	r.UpRatio, r.DownRatio = r.GwUp/r.DirectUp, r.GwDown/r.DirectDown
	r.GwCPUPerGiB = gwCPU / (float64(gwBytes) / (1 << 30))
	r.SSHDCPUPerGiB = sshdCPU / (float64(directBytes) / (1 << 30))

	var dl, gl []float64
	for i := 0; i < latN; i++ {
		for _, t := range []struct {
			args []string
			into *[]float64
		}{{direct, &dl}, {via, &gl}} {
			start := time.Now()
			if outb, err := exec.CommandContext(ctx, "ssh", append(t.args, "true")...).CombinedOutput(); err != nil {
				return fmt.Errorf("ssh true: %v: %s", err, outb)
			}
			*t.into = append(*t.into, float64(time.Since(start).Microseconds())/1000)
		}
	}
	r.DirectTrueP50, r.DirectTrueP90 = percentile(dl, 50), percentile(dl, 90)
	r.GwTrueP50, r.GwTrueP90 = percentile(gl, 50), percentile(gl, 90)
	r.LatencyRatio = r.GwTrueP50 / r.DirectTrueP50

	if err := idleMemory(ctx, &r, gw.Process.Pid, adminSock, gwAddr, keys.HostPublicKey, u, idleN); err != nil {
		return fmt.Errorf("idle sessions: %w", err)
	}

	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "relay.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	md := markdown(r)
	if err := os.WriteFile(filepath.Join(out, "relay.md"), []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	return nil
}

// idleMemory opens n sessions (a shell each, then idle) through the gateway
// and records the gateway's memory and goroutine growth per session.
func idleMemory(ctx context.Context, r *result, pid int, admin, addr string, hostKey ssh.PublicKey, u *harness.User, n int) error {
	before, err := rssKiB(pid)
	if err != nil {
		return err
	}
	liveBefore, gBefore, err := liveMemory(ctx, admin)
	if err != nil {
		return err
	}
	var clients []*ssh.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := harness.DialSSH(ctx, addr, u.Name, hostKey, ssh.PublicKeys(u.Signer))
		if err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
		clients = append(clients, c)
		s, err := c.NewSession()
		if err != nil {
			return err
		}
		if err := s.Start("sleep 3600"); err != nil {
			return err
		}
	}
	liveAfter, gAfter, err := liveMemory(ctx, admin)
	if err != nil {
		return err
	}
	after, err := rssKiB(pid)
	if err != nil {
		return err
	}
	r.IdleKiBPerSess = float64(after-before) / float64(n)
	r.IdleLiveKiBPerSess = (liveAfter - liveBefore) / 1024 / float64(n)
	r.IdleGoroutines = (gAfter - gBefore) / float64(n)
	return nil
}

// liveMemory forces GCs in the gateway (through its pprof endpoint) and
// returns its live Go heap (allocated objects) plus goroutine stacks, in
// bytes, and its goroutines.
// Several cycles: each GC halves the stacks of idle goroutines that grew
// during the key exchange, so the figure is the steady state of a session
// that stays idle.
func liveMemory(ctx context.Context, admin string) (bytes, goroutines float64, err error) {
	for range 4 {
		if _, err := harness.AdminGet(ctx, admin, "/debug/pprof/heap?gc=1"); err != nil {
			return 0, 0, err
		}
	}
	m, err := harness.AdminGet(ctx, admin, "/metrics")
	if err != nil {
		return 0, 0, err
	}
	vals := map[string]float64{}
	for _, line := range strings.Split(m, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && !strings.HasPrefix(line, "#") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				vals[f[0]] = v
			}
		}
	}
	return vals["go_memstats_heap_alloc_bytes"] + vals["go_memstats_stack_inuse_bytes"], vals["go_goroutines"], nil
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func markdown(r result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Relay: gateway vs direct OpenSSH (%s, %d CPUs, %s, %s)\n\n", r.Date, r.CPUs, r.Cipher, r.Kex)
	fmt.Fprintf(&b, "| figure | direct | via gateway | ratio | aim |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| upload MiB/s (%d MiB, median of %d) | %.0f | %.0f | %.2f | ≥ 0.9 |\n", r.SizeMiB, r.Reps, r.DirectUp, r.GwUp, r.UpRatio)
	fmt.Fprintf(&b, "| download MiB/s | %.0f | %.0f | %.2f | ≥ 0.9 |\n", r.DirectDown, r.GwDown, r.DownRatio)
	fmt.Fprintf(&b, "| `ssh HOST true` ms p50 (%d runs) | %.1f | %.1f | %.2f | ≤ 1.1 |\n", r.LatencyN, r.DirectTrueP50, r.GwTrueP50, r.LatencyRatio)
	fmt.Fprintf(&b, "| `ssh HOST true` ms p90 | %.1f | %.1f | %.2f | |\n", r.DirectTrueP90, r.GwTrueP90, r.GwTrueP90/r.DirectTrueP90)
	fmt.Fprintf(&b, "| CPU s per GiB: sshd direct / gateway relay | %.2f | %.2f | %.2f | gateway ≤ 1.5 |\n", r.SSHDCPUPerGiB, r.GwCPUPerGiB, r.GwCPUPerGiB/r.SSHDCPUPerGiB)
	fmt.Fprintf(&b, "| gateway KiB per idle session, live heap + stacks after GC (%d sessions) | | %.1f | | ≤ 64 |\n", r.IdleSessions, r.IdleLiveKiBPerSess)
	fmt.Fprintf(&b, "| gateway goroutines per idle session | | %.1f | | |\n\n", r.IdleGoroutines)
	return b.String()
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
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

func rssKiB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		}
	}
	return 0, errors.New("no VmRSS")
}

func median(v []float64) float64 { return percentile(v, 50) }

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

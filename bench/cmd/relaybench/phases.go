package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// transfer runs one bulk transfer of size MiB (up: the client's stdin into
// `cat > /dev/null`; down: `head -c` of /dev/zero to the client's
// /dev/null) and returns MiB/s and the client's CPU seconds.
func (b *bench) transfer(ctx context.Context, args []string, up bool, sizeMiB int) (float64, float64, error) {
	size := int64(sizeMiB) << 20
	var cmd *exec.Cmd
	if up {
		cmd = exec.CommandContext(ctx, "ssh", append(args, "cat > /dev/null")...)
		src := b.src
		if sizeMiB != b.o.sizeMiB {
			// Another size (profiling): an endless source, cut by the
			// remote end.
			cmd = exec.CommandContext(ctx, "ssh", append(args, fmt.Sprintf("head -c %d > /dev/null", size))...)
			src = "/dev/zero"
		}
		f, err := os.Open(src)
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		cmd.Stdin = f
	} else {
		cmd = exec.CommandContext(ctx, "ssh", append(args, fmt.Sprintf("head -c %d /dev/zero", size))...)
	}
	// Output to /dev/null: capturing it would measure this process.
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, 0, err
	}
	defer devnull.Close()
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = devnull, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%w: %s", err, stderr.String())
	}
	el := time.Since(start).Seconds()
	cpu := cmd.ProcessState.UserTime().Seconds() + cmd.ProcessState.SystemTime().Seconds()
	return float64(sizeMiB) / el, cpu, nil
}

// transfers: every cipher, both directions, all paths; reps rounds, the
// paths' order rotating each round so drifting load hits all alike.
func (b *bench) transfers(ctx context.Context, r *result) error {
	gib := float64(b.o.sizeMiB) / 1024
	// One untimed transfer per path first: the gateway's first transfer
	// pays for growing its heap and buffers, which is not a steady state.
	for _, p := range paths {
		if _, _, err := b.transfer(ctx, b.sshArgs(p, ciphers[0].flag), false, b.o.sizeMiB); err != nil {
			return fmt.Errorf("warm-up via %s: %w", p, err)
		}
	}
	for _, c := range ciphers {
		for _, up := range []bool{true, false} {
			rows := map[string]*transferRow{}
			for _, p := range paths {
				rows[p] = &transferRow{Cipher: c.name, Direction: dirName(up), Path: p}
			}
			for i := 0; i < b.o.reps; i++ {
				for j := range paths {
					p := paths[(i+j)%len(paths)]
					row := rows[p]
					if err := b.settle(ctx); err != nil {
						return err
					}
					before, err := b.cpuNow()
					if err != nil {
						return err
					}
					v, ccpu, err := b.transfer(ctx, b.sshArgs(p, c.flag), up, b.o.sizeMiB)
					if err != nil {
						return fmt.Errorf("%s %s %s: %w", p, c.name, dirName(up), err)
					}
					if err := b.settle(ctx); err != nil {
						return err
					}
					after, err := b.cpuNow()
					if err != nil {
						return err
					}
					row.MiBs = append(row.MiBs, v)
					log.Printf("  %s %s %s: %.0f MiB/s, cpu gw %.2f baseline %.2f sshd %.2f socat %.2f client %.2f s", c.name, dirName(up), p, v,
						after.gw-before.gw, after.base-before.base, after.sshd-before.sshd, after.socat-before.socat, ccpu)
					row.SSHDCPU += (after.sshd - before.sshd) / gib
					row.ClientCPU += ccpu / gib
					switch p {
					case pathFrontdoor:
						row.GatewayCPU += (after.gw - before.gw) / gib
						row.GatewayCPURuns = append(row.GatewayCPURuns, (after.gw-before.gw)/gib)
						row.GatewayReads += float64(after.gwSys[0]-before.gwSys[0]) / float64(b.o.sizeMiB)
						row.GatewayWrites += float64(after.gwSys[1]-before.gwSys[1]) / float64(b.o.sizeMiB)
					case pathSocat:
						row.ForwarderCPU += (after.socat - before.socat) / gib
					case pathBaseline:
						row.GatewayCPU += (after.base - before.base) / gib
						row.GatewayCPURuns = append(row.GatewayCPURuns, (after.base-before.base)/gib)
						row.GatewayReads += float64(after.baseSys[0]-before.baseSys[0]) / float64(b.o.sizeMiB)
						row.GatewayWrites += float64(after.baseSys[1]-before.baseSys[1]) / float64(b.o.sizeMiB)
					}
				}
			}
			n := float64(b.o.reps)
			for _, p := range paths {
				row := rows[p]
				row.Median = median(row.MiBs)
				row.Ratio = row.Median / rows[pathDirect].Median
				row.GatewayCPU /= n
				row.GatewayCPUMedian = median(row.GatewayCPURuns)
				row.SSHDCPU /= n
				row.ClientCPU /= n
				row.ForwarderCPU /= n
				row.GatewayReads /= n
				row.GatewayWrites /= n
				r.Transfers = append(r.Transfers, *row)
				log.Printf("%s %s %-9s %v MiB/s ×%.2f  gw %.2f sshd %.2f s/GiB, gw syscalls/MiB %.0f r %.0f w", c.name, dirName(up), p, fmtList(row.MiBs), row.Ratio, row.GatewayCPU, row.SSHDCPU, row.GatewayReads, row.GatewayWrites)
			}
		}
	}
	return nil
}

func dirName(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

func fmtList(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strings.Join(s, " ")
}

// latency: `ssh HOST true` through each path, interleaved, default cipher.
func (b *bench) latency(ctx context.Context, r *result) error {
	ms := map[string][]float64{}
	for i := 0; i < b.o.latN; i++ {
		for j := range paths {
			p := paths[(i+j)%len(paths)]
			start := time.Now()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			out, err := exec.CommandContext(cctx, "ssh", append(b.sshArgs(p, ""), "true")...).CombinedOutput()
			cancel()
			if err != nil {
				return fmt.Errorf("ssh true via %s: %w: %s", p, err, out)
			}
			ms[p] = append(ms[p], float64(time.Since(start).Microseconds())/1000)
		}
	}
	for _, p := range paths {
		l := latencyRow{Path: p, Runs: len(ms[p]), P50: percentile(ms[p], 50), P99: percentile(ms[p], 99)}
		l.RatioP50 = l.P50 / percentile(ms[pathDirect], 50)
		l.RatioP99 = l.P99 / percentile(ms[pathDirect], 99)
		r.Latency = append(r.Latency, l)
		log.Printf("ssh true %-9s p50 %.1f ms p99 %.1f ms ×%.2f", p, l.P50, l.P99, l.RatioP50)
	}
	return nil
}

// login is one new session: key exchange, login, a session running
// `true`, close. Go's client, so the bench's own cost is the same on every
// path and no ssh process is forked per login.
func (b *bench) login(ctx context.Context, p string) error {
	addr, key := b.node.Addr(), b.node.HostKey()
	switch p {
	case pathFrontdoor:
		addr, key = b.gwAddr, b.keys.HostPublicKey
	case pathSocat:
		addr = b.socatAddr
	case pathBaseline:
		addr, key = b.base.addr, b.keys.HostPublicKey
	}
	c, err := harness.DialSSH(ctx, addr, b.user.Name, key, ssh.PublicKeys(b.user.Signer))
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run("true")
}

// rate: new sessions per second with rateWorkers concurrent logins, each
// path for rateSeconds split in two interleaved halves. With prof set
// (a file prefix), only the frontdoor path runs and the gateway is
// profiled meanwhile.
func (b *bench) rate(ctx context.Context, r *result, prof string) error {
	type acc struct {
		n           int64
		secs        float64
		gw, sshd    float64
		errs        int64
		firstErr    error
		socatCPU    float64
		loadSamples []float64
	}
	res := map[string]*acc{}
	rev := slices.Clone(paths)
	slices.Reverse(rev)
	order := append(slices.Clone(paths), rev...)
	half := time.Duration(b.o.rateSeconds / 2 * float64(time.Second))
	if prof != "" {
		order, half = []string{pathFrontdoor}, 8*time.Second
	}
	for _, p := range order {
		a := res[p]
		if a == nil {
			a = &acc{}
			res[p] = a
		}
		if err := b.settle(ctx); err != nil {
			return err
		}
		before, err := b.cpuNow()
		if err != nil {
			return err
		}
		var done atomic.Int64
		var errs atomic.Int64
		var errOnce sync.Once
		var wg sync.WaitGroup
		stopAt := time.Now().Add(half)
		var profErr error
		var profWG sync.WaitGroup
		if prof != "" {
			profWG.Add(1)
			go func() { defer profWG.Done(); profErr = b.captureProfiles(ctx, prof, 6) }()
		}
		start := time.Now()
		for range b.o.rateWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stopAt) {
					lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					err := b.login(lctx, p)
					cancel()
					if err != nil {
						errs.Add(1)
						errOnce.Do(func() { a.firstErr = err })
						continue
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		el := time.Since(start).Seconds()
		profWG.Wait()
		if profErr != nil {
			return profErr
		}
		if err := b.settle(ctx); err != nil {
			return err
		}
		after, err := b.cpuNow()
		if err != nil {
			return err
		}
		a.n += done.Load()
		a.errs += errs.Load()
		a.secs += el
		a.sshd += after.sshd - before.sshd
		if p == pathFrontdoor {
			a.gw += after.gw - before.gw
		}
		if p == pathBaseline {
			a.gw += after.base - before.base
		}
		if p == pathSocat {
			a.socatCPU += after.socat - before.socat
		}
	}
	if prof != "" {
		return nil
	}
	for _, p := range paths {
		a := res[p]
		row := rateRow{Path: p, Workers: b.o.rateWorkers, Seconds: a.secs, Sessions: a.n, Errors: a.errs}
		if a.firstErr != nil {
			row.FirstError = a.firstErr.Error()
		}
		if a.n > 0 {
			row.PerSecond = float64(a.n) / a.secs
			row.SSHDCPUms = a.sshd / float64(a.n) * 1000
			row.GatewayCPUms = a.gw / float64(a.n) * 1000
		}
		r.Rate = append(r.Rate, row)
	}
	for i := range r.Rate {
		r.Rate[i].Ratio = r.Rate[i].PerSecond / r.Rate[0].PerSecond
		log.Printf("new sessions %-9s %.1f/s ×%.2f (errors %d) gw %.1f ms sshd %.1f ms per session", r.Rate[i].Path, r.Rate[i].PerSecond, r.Rate[i].Ratio, r.Rate[i].Errors, r.Rate[i].GatewayCPUms, r.Rate[i].SSHDCPUms)
	}
	return nil
}

// captureProfiles takes a CPU profile and an allocation profile (the
// allocations made during the window) of the gateway for secs seconds.
func (b *bench) captureProfiles(ctx context.Context, prefix string, secs int) error {
	dir := filepath.Join(b.o.out, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var errs [2]error
	for i, kind := range []string{"profile", "allocs"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := harness.AdminGet(ctx, b.adminSock, fmt.Sprintf("/debug/pprof/%s?seconds=%d", kind, secs))
			if err != nil {
				errs[i] = err
				return
			}
			name := prefix + "-cpu.pprof"
			if kind == "allocs" {
				name = prefix + "-allocs.pprof"
			}
			errs[i] = os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
		}()
	}
	wg.Wait()
	return errors.Join(errs[:]...)
}

// profiles: the gateway profiled during uploads, during downloads (aes128-gcm
// on both legs; transfers repeat until the profile window closes) and
// during the new-sessions test.
const profileMiB = 4096

func (b *bench) profiles(ctx context.Context, r *result) error {
	label := b.o.label
	if label == "" {
		label = "run"
	}
	for _, up := range []bool{true, false} {
		prefix := fmt.Sprintf("%s-%s", label, dirName(up))
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- b.captureProfiles(ctx, prefix, 6); cancel() }()
		var bytes float64
		for pctx.Err() == nil {
			if _, _, err := b.transfer(pctx, b.sshArgs(pathFrontdoor, ciphers[0].flag), up, profileMiB); err != nil {
				if pctx.Err() != nil {
					break
				}
				cancel()
				<-done
				return err
			}
			bytes += profileMiB
		}
		if err := <-done; err != nil {
			return err
		}
		r.Profiles = append(r.Profiles, "profiles/"+prefix+"-cpu.pprof", "profiles/"+prefix+"-allocs.pprof")
		log.Printf("profiled %s (%.0f MiB)", prefix, bytes)
	}
	prefix := label + "-logins"
	if err := b.rate(ctx, r, prefix); err != nil {
		return err
	}
	r.Profiles = append(r.Profiles, "profiles/"+prefix+"-cpu.pprof", "profiles/"+prefix+"-allocs.pprof")
	return nil
}

// idle opens sessions through the gateway (a command each that waits on
// its stdin, so it ends with the session instead of outliving it:
// connected, authenticated, one open session channel, no data), growing to
// each count in turn, and records the gateway's memory and goroutine growth
// per session. A count the machine cannot hold (processes, memory) is
// skipped with the reason recorded, not silently.
func (b *bench) idle(ctx context.Context, r *result) error {
	pid := b.gw.Process.Pid
	rssBefore, err := rssKiB(pid)
	if err != nil {
		return err
	}
	liveBefore, gBefore, err := liveMemory(ctx, b.adminSock)
	if err != nil {
		return err
	}
	memBefore := memAvailableKiB()
	var mu sync.Mutex
	var clients []*ssh.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for _, n := range b.o.idle {
		row := idleRow{Sessions: n, LoadStart: loadNow()}
		have := len(clients)
		// Each node session is 3 processes (sshd monitor, sshd user
		// child, sleep); keep 3,000 pids and 2 GiB spare for everyone
		// else on the machine.
		if need, free := 3*(n-have)+3000, pidsFree(); need > free {
			row.Skipped = fmt.Sprintf("needs ~%d more processes, %d pids free", need, free)
		} else if have > 0 {
			perSess := float64(memBefore-memAvailableKiB()) / float64(have)
			if need, avail := perSess*float64(n-have)+2<<20, float64(memAvailableKiB()); need > avail {
				row.Skipped = fmt.Sprintf("needs ~%.0f MiB more memory (%.0f KiB per session machine-wide), %.0f MiB available", need/1024, perSess, avail/1024)
			}
		}
		if row.Skipped != "" {
			log.Printf("idle %d: SKIPPED: %s", n, row.Skipped)
			r.Idle = append(r.Idle, row)
			continue
		}
		start := time.Now()
		next := make(chan int)
		var wg sync.WaitGroup
		var firstErr error
		var errOnce sync.Once
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					c, err := harness.DialSSH(ctx, b.gwAddr, b.user.Name, b.keys.HostPublicKey, ssh.PublicKeys(b.user.Signer))
					if err == nil {
						var s *ssh.Session
						if s, err = c.NewSession(); err == nil {
							// A stdin that stays open: without one, x/crypto
							// sends EOF at once and cat (and the session)
							// ends. Closing the client ends it.
							if _, err = s.StdinPipe(); err == nil {
								err = s.Start("cat > /dev/null")
							}
						}
						mu.Lock()
						clients = append(clients, c)
						mu.Unlock()
					}
					if err != nil {
						errOnce.Do(func() { firstErr = fmt.Errorf("session %d: %w", i, err) })
					}
				}
			}()
		}
	feed:
		for i := have; i < n; i++ {
			select {
			case next <- i:
			case <-ctx.Done():
				break feed
			}
			if firstErr != nil {
				break
			}
		}
		close(next)
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		liveAfter, gAfter, err := liveMemory(ctx, b.adminSock)
		if err != nil {
			return err
		}
		rssAfter, err := rssKiB(pid)
		if err != nil {
			return err
		}
		if b.o.profile {
			if err := b.saveIdleProfiles(ctx, r, n); err != nil {
				return err
			}
		}
		row.OpenSeconds = time.Since(start).Seconds()
		row.RSSKiB = float64(rssAfter-rssBefore) / float64(n)
		row.LiveKiB = (liveAfter - liveBefore) / 1024 / float64(n)
		row.Goroutines = (gAfter - gBefore) / float64(n)
		row.MachineKiB = float64(memBefore-memAvailableKiB()) / float64(n)
		row.LoadEnd = loadNow()
		r.Idle = append(r.Idle, row)
		log.Printf("idle %d: rss %.1f KiB, live %.1f KiB, %.1f goroutines per session (machine-wide %.0f KiB)", n, row.RSSKiB, row.LiveKiB, row.Goroutines, row.MachineKiB)
	}
	return nil
}

// saveIdleProfiles keeps the gateway's live heap and goroutines with n
// idle sessions: what an idle session holds, and where.
func (b *bench) saveIdleProfiles(ctx context.Context, r *result, n int) error {
	label := b.o.label
	if label == "" {
		label = "run"
	}
	dir := filepath.Join(b.o.out, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, kind := range []string{"heap", "goroutine"} {
		body, err := harness.AdminGet(ctx, b.adminSock, "/debug/pprof/"+kind+"?gc=1")
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s-idle%d-%s.pprof", label, n, kind)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
		r.Profiles = append(r.Profiles, "profiles/"+name)
	}
	return nil
}

// liveMemory forces GCs in the gateway (through its pprof endpoint) and
// returns its live Go heap (allocated objects) plus goroutine stacks, in
// bytes, and its goroutines. Several cycles: each GC halves the stacks of
// idle goroutines that grew during the key exchange, so the figure is the
// steady state of a session that stays idle.
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

func rssKiB(pid int) (int64, error) {
	return procStatusKiB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
}

func memAvailableKiB() int64 {
	v, _ := procStatusKiB("/proc/meminfo", "MemAvailable:")
	return v
}

func procStatusKiB(file, key string) (int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			return strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in %s", key, file)
}

// pidsFree is how many more processes the kernel will create.
func pidsFree() int {
	max := 32768
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			max = v
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	used := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			used++
			// Threads take pids too.
			if t, err := os.ReadDir("/proc/" + e.Name() + "/task"); err == nil {
				used += len(t) - 1
			}
		}
	}
	return max - used
}

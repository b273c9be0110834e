// Command authbench measures authentication through the gateway against a
// real Active Directory (a Samba AD DC on loopback): login latency p50/p99
// for key and password logins with a warm identity cache and a cold one, and
// the logins per second one gateway sustains against one DC.
//
// Everything is real: the DC (samba), an OpenSSH sshd login node, and the
// gateways as their own processes (bin/frontdoor gateway). Clients are Go
// x/crypto SSH clients (curve25519-sha256), so the client costs little CPU;
// a login is timed from the TCP connect to the end of authentication, which
// at frontdoor includes the backend login to the node with a fresh user
// certificate. A direct key login to the same sshd is the reference.
//
// Cold means the gateway has never seen the user: each cold sample is a
// different account's first login (key samples on one gateway, password
// samples on another, so both are cold for the same accounts). Warm means
// the identity is cached (cache_ttl 10m); a warm password login still binds
// to AD as the user, as it must.
//
// Refusal timing: whether a stranger can tell an account that exists from a
// made-up name by how long the gateway takes to refuse it (timing.go in
// internal/gateway). The DC sits behind a slow link (test/harness/slowlink:
// every answer 40 ms late, then 250 ms, slower than the refusal delays);
// clients at eight addresses time connect-to-refusal for a stranger's key
// and for a wrong password, for an account and for made-up names,
// interleaved; each pair of samples is compared with a two-sample
// Kolmogorov–Smirnov test. The directory's own lookups through the same
// link are measured too: the oracle the gateway must hide.
//
// Results go to OUT/auth.json and OUT/auth.md. Figures are reported, not
// asserted: on a shared 2-core machine the DC, the gateway, sshd and the
// clients compete for CPU, and that is part of what is measured.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/ad"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/harness/samba"
)

// Latency is one latency figure in milliseconds.
type Latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// Rate is one throughput figure.
type Rate struct {
	Concurrency int     `json:"concurrency"`
	Seconds     float64 `json:"seconds"`
	Logins      int64   `json:"logins"`
	Errors      int64   `json:"errors"`
	PerSecond   float64 `json:"logins_per_s"`
	// GatewayCPUms is the gateway process's CPU time per login.
	GatewayCPUms float64 `json:"gateway_cpu_ms_per_login"`
	// DCCPUms is the DC's CPU time (all samba processes) per login.
	DCCPUms float64 `json:"dc_cpu_ms_per_login"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
}

type result struct {
	Date    string  `json:"date"`
	Host    string  `json:"host"`
	CPUs    int     `json:"cpus"`
	Load1   float64 `json:"load1_at_start"`
	Kex     string  `json:"kex"`
	Samples int     `json:"samples"`
	// Latency of one login (TCP connect to authenticated), by kind.
	DirectKey    Latency `json:"direct_key"`
	KeyWarm      Latency `json:"key_warm"`
	KeyCold      Latency `json:"key_cold"`
	PasswordWarm Latency `json:"password_warm"`
	PasswordCold Latency `json:"password_cold"`
	// Sustained logins per second against one DC.
	RateKeyWarm     Rate `json:"rate_key_warm"`
	RateKeyUncached Rate `json:"rate_key_uncached"`
	RatePassword    Rate `json:"rate_password"`
	// Refusal timing, account vs made-up names.
	Timing []Timing `json:"refusal_timing"`
}

// Quantiles are one sample's figures in milliseconds.
type Quantiles struct {
	N   int     `json:"n"`
	P10 float64 `json:"p10_ms"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// Timing compares the answer times of one probe for an account and for
// made-up names.
type Timing struct {
	Probe    string    `json:"probe"`
	LinkMs   float64   `json:"dc_link_delay_ms"`
	Account  Quantiles `json:"account"`
	MadeUp   Quantiles `json:"made_up"`
	KSD      float64   `json:"ks_d"`
	Critical float64   `json:"ks_critical"`
	Alpha    float64   `json:"alpha"`
	Separate bool      `json:"separate"`
}

const kex = "curve25519-sha256"

func main() {
	out := flag.String("out", "bench/results", "directory for auth.json and auth.md")
	bin := flag.String("bin", "bin/frontdoor", "frontdoor binary")
	samples := flag.Int("samples", 30, "logins per latency figure (each cold sample is a different account)")
	dur := flag.Duration("duration", 6*time.Second, "length of each throughput run")
	conc := flag.Int("concurrency", 8, "concurrent clients in the throughput runs")
	dcAddr := flag.String("dc-addr", "127.0.2.6", "loopback address for the Samba DC (must be free)")
	nodeAddr := flag.String("node-addr", "127.0.1.241", "loopback address for the sshd login node")
	timingSamples := flag.Int("timing-samples", 150, "refusals timed per class (account, made-up) and probe")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	if err := run(ctx, *out, *bin, *dcAddr, *nodeAddr, *samples, *conc, *dur, *timingSamples); err != nil {
		log.Fatalf("authbench: %v", err)
	}
	log.Printf("authbench: done in %v", time.Since(start).Round(time.Second))
}

// bench holds the running parts.
type bench struct {
	dir   string
	bin   string
	dc    *samba.DC
	keys  *harness.ClusterKeys
	node  *harness.Node
	procs []*exec.Cmd
}

func run(ctx context.Context, out, bin, dcAddr, nodeAddr string, samples, conc int, dur time.Duration, timingSamples int) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s missing (make build): %w", bin, err)
	}
	dir, err := os.MkdirTemp("", "authbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // sshd reads files as the user
		return err
	}
	b := &bench{dir: dir, bin: bin}
	defer b.close()

	r := result{Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), Kex: kex, Samples: samples}
	r.Host, _ = os.Hostname()
	r.Load1 = load1()

	for _, port := range []int{samba.LDAPPort, samba.LDAPSPort} {
		addr := net.JoinHostPort(dcAddr, strconv.Itoa(port))
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return fmt.Errorf("%s is already in use (another authbench, or another DC?): pick another --dc-addr", addr)
		}
	}
	log.Printf("authbench: provisioning the DC on %s", dcAddr)
	if b.dc, err = samba.Start(ctx, samba.Options{Dir: filepath.Join(dir, "dc"), Addr: dcAddr}); err != nil {
		return err
	}
	if b.keys, err = harness.Keys(filepath.Join(dir, "keys")); err != nil {
		return err
	}
	if b.node, err = harness.StartNode(ctx, harness.NodeOptions{Name: "bench1", Addr: nodeAddr,
		Dir: filepath.Join(dir, "node"), UserCAPub: b.keys.UserCAPub}); err != nil {
		return err
	}
	const group = "fdab-users"
	if err := b.dc.CreateGroup(ctx, group); err != nil {
		return err
	}
	// The warm user, and one account per cold sample (fdab-0 ...).
	log.Printf("authbench: creating %d accounts", samples+1)
	warm, err := b.user(ctx, "fdab-warm", group)
	if err != nil {
		return err
	}
	if err := b.node.Authorize(warm.Name, warm.AuthorizedKey()); err != nil {
		return err
	}
	cold := make([]*harness.User, samples)
	for i := range cold {
		if cold[i], err = b.user(ctx, fmt.Sprintf("fdab-%d", i), group); err != nil {
			return err
		}
	}

	// gwKey and gwPw cache identities for 10 minutes; gwNoCache asks AD on
	// every login.
	gwKey, err := b.gateway(ctx, "gw-key", cacheFor(10*time.Minute))
	if err != nil {
		return err
	}
	gwPw, err := b.gateway(ctx, "gw-pw", cacheFor(10*time.Minute))
	if err != nil {
		return err
	}
	gwNoCache, err := b.gateway(ctx, "gw-nocache", cacheFor(time.Millisecond))
	if err != nil {
		return err
	}
	direct := b.node.Addr()
	keyAuth := func(u *harness.User) ssh.AuthMethod { return ssh.PublicKeys(u.Signer) }
	pwAuth := func(u *harness.User) ssh.AuthMethod { return ssh.Password(u.Password) }

	log.Printf("authbench: latency, %d samples per figure", samples)
	// Cold first: nothing has touched these accounts on either gateway.
	if r.KeyCold, err = latency(ctx, samples, func(i int) error {
		return login(ctx, gwKey.addr, cold[i].Name, b.keys.HostPublicKey, keyAuth(cold[i]))
	}); err != nil {
		return fmt.Errorf("key cold: %w", err)
	}
	if r.PasswordCold, err = latency(ctx, samples, func(i int) error {
		return login(ctx, gwPw.addr, cold[i].Name, b.keys.HostPublicKey, pwAuth(cold[i]))
	}); err != nil {
		return fmt.Errorf("password cold: %w", err)
	}
	// Warm: one untimed login fills the cache.
	for _, g := range []*gw{gwKey, gwPw} {
		if err := login(ctx, g.addr, warm.Name, b.keys.HostPublicKey, keyAuth(warm)); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	if r.KeyWarm, err = latency(ctx, samples, func(int) error {
		return login(ctx, gwKey.addr, warm.Name, b.keys.HostPublicKey, keyAuth(warm))
	}); err != nil {
		return fmt.Errorf("key warm: %w", err)
	}
	if r.PasswordWarm, err = latency(ctx, samples, func(int) error {
		return login(ctx, gwPw.addr, warm.Name, b.keys.HostPublicKey, pwAuth(warm))
	}); err != nil {
		return fmt.Errorf("password warm: %w", err)
	}
	if r.DirectKey, err = latency(ctx, samples, func(int) error {
		return login(ctx, direct, warm.Name, b.node.HostKey(), keyAuth(warm))
	}); err != nil {
		return fmt.Errorf("direct: %w", err)
	}

	log.Printf("authbench: throughput, %d clients for %v per figure", conc, dur)
	if r.RateKeyWarm, err = b.rate(ctx, gwKey, conc, dur, func(int) (string, ssh.AuthMethod) { return warm.Name, keyAuth(warm) }); err != nil {
		return fmt.Errorf("rate key warm: %w", err)
	}
	// Spread the uncached and password runs over the accounts, as real
	// traffic would be (their identities are cached at gwPw by now: each
	// password login is one bind as the user).
	if r.RateKeyUncached, err = b.rate(ctx, gwNoCache, conc, dur, func(i int) (string, ssh.AuthMethod) {
		u := cold[i%len(cold)]
		return u.Name, keyAuth(u)
	}); err != nil {
		return fmt.Errorf("rate key uncached: %w", err)
	}
	if r.RatePassword, err = b.rate(ctx, gwPw, conc, dur, func(i int) (string, ssh.AuthMethod) {
		u := cold[i%len(cold)]
		return u.Name, pwAuth(u)
	}); err != nil {
		return fmt.Errorf("rate password: %w", err)
	}

	log.Printf("authbench: refusal timing, %d samples per class and probe", timingSamples)
	if r.Timing, err = b.refusalTiming(ctx, warm.Name, timingSamples); err != nil {
		return fmt.Errorf("refusal timing: %w", err)
	}

	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "auth.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	md := markdown(r)
	fmt.Print(md)
	return os.WriteFile(filepath.Join(out, "auth.md"), []byte(md), 0o644)
}

func (b *bench) close() {
	for _, p := range b.procs {
		p.Process.Kill()
		p.Wait()
	}
	if b.node != nil {
		b.node.Stop()
	}
	if b.dc != nil {
		b.dc.Close()
	}
}

// user creates an AD account with a key in sshPublicKey and the login
// node's Unix user of the same name.
func (b *bench) user(ctx context.Context, name, group string) (*harness.User, error) {
	u, err := harness.NewUser(filepath.Join(b.dir, "users"), name, "")
	if err != nil {
		return nil, err
	}
	u.Password = "Pw-" + name + "-0k!"
	if _, err := b.dc.CreateUser(ctx, name, u.Password, group); err != nil {
		return nil, err
	}
	if err := b.dc.SetSSHKey(ctx, name, u.AuthorizedKey()); err != nil {
		return nil, err
	}
	return u, harness.EnsureUnixUser(name)
}

// gw is a gateway process.
type gw struct {
	addr string
	cmd  *exec.Cmd
}

// gateway writes a configuration with the AD directory (edit, unless nil,
// changes the directory.ad section) and starts `frontdoor gateway` on a
// free port.
func (b *bench) gateway(ctx context.Context, name string, edit func(*ad.Config)) (*gw, error) {
	dir := filepath.Join(b.dir, name)
	port, err := harness.FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	path, err := harness.WriteGatewayConfig(dir, harness.GatewayConfig{
		Name: name, Listen: addr, Keys: b.keys, Nodes: []harness.NodeEntry{b.node.Entry("general")},
		UsersFile: filepath.Join(dir, "unused.yaml"), LogLevel: "warn",
		Rules: []policy.Rule{{Name: "users", Groups: []string{"fdab-users"}, Pools: []string{"general"}}},
		Edit: func(c *config.Config) {
			a := harness.ADConfig(b.dc)
			a.PoolSize = 8
			if edit != nil {
				edit(&a)
			}
			c.Directory.Kind, c.Directory.AD = source.KindAD, a
			// The refusal timing sends many wrong passwords; keep the
			// throttle out of the figures anyway.
			harness.GenerousThrottle(&c.Throttle)
			c.Throttle.UserFailures, c.Throttle.UserSourceFailures = 1000, 1000
			// Every client here is on loopback, where real users come
			// from many addresses: the per-source admission and lookup
			// bounds would measure themselves (10 connections a second
			// from one address), not the gateway and the DC.
			c.Gateway.AdmissionExempt = []string{"127.0.0.0/8"}
		},
	})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.bin, "gateway", "--config", path)
	logf, err := os.Create(filepath.Join(dir, "gateway.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b.procs = append(b.procs, cmd)
	err = harness.WaitFor(ctx, 20*time.Second, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("gateway %s did not start (see %s): %w", name, logf.Name(), err)
	}
	return &gw{addr: addr, cmd: cmd}, nil
}

// cacheFor sets directory.ad.cache_ttl.
func cacheFor(ttl time.Duration) func(*ad.Config) {
	return func(a *ad.Config) { a.CacheTTL = ttl }
}

// login performs one full login (key exchange, authentication, and at the
// gateway the backend login) and closes it.
func login(ctx context.Context, addr, user string, hostKey ssh.PublicKey, auth ssh.AuthMethod) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	cc, chans, reqs, err := ssh.NewClientConn(nc, addr, &ssh.ClientConfig{
		User: user, Auth: []ssh.AuthMethod{auth}, HostKeyCallback: ssh.FixedHostKey(hostKey),
		Config: ssh.Config{KeyExchanges: []string{kex}},
	})
	if err != nil {
		nc.Close()
		return err
	}
	ssh.NewClient(cc, chans, reqs).Close()
	return nil
}

// latency times n sequential logins.
func latency(ctx context.Context, n int, fn func(i int) error) (Latency, error) {
	var ms []float64
	for i := range n {
		if ctx.Err() != nil {
			return Latency{}, ctx.Err()
		}
		start := time.Now()
		if err := fn(i); err != nil {
			return Latency{}, fmt.Errorf("login %d: %w", i, err)
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
	}
	return Latency{N: n, P50: round(percentile(ms, 50)), P99: round(percentile(ms, 99)), Max: round(slices.Max(ms))}, nil
}

// rate runs conc clients logging in back to back for dur against g.
func (b *bench) rate(ctx context.Context, g *gw, conc int, dur time.Duration, who func(i int) (string, ssh.AuthMethod)) (Rate, error) {
	gcpu0, _ := harness.ProcessCPU(g.cmd.Process.Pid)
	dcpu0 := groupCPU(b.dc.PID())
	var ok, failed atomic.Int64
	var seq atomic.Int64
	var mu sync.Mutex
	var ms []float64
	var firstErr error
	rctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rctx.Err() == nil {
				user, auth := who(int(seq.Add(1)))
				t0 := time.Now()
				err := login(ctx, g.addr, user, b.keys.HostPublicKey, auth)
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					failed.Add(1)
					if firstErr == nil {
						firstErr = err
					}
				} else {
					ok.Add(1)
					ms = append(ms, float64(d.Microseconds())/1000)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	gcpu1, _ := harness.ProcessCPU(g.cmd.Process.Pid)
	dcpu1 := groupCPU(b.dc.PID())
	r := Rate{Concurrency: conc, Seconds: round(elapsed), Logins: ok.Load(), Errors: failed.Load()}
	if r.Logins == 0 {
		return r, fmt.Errorf("no login succeeded: %v", firstErr)
	}
	if r.Errors > 0 {
		log.Printf("authbench: %d of %d logins failed, first: %v", r.Errors, r.Errors+r.Logins, firstErr)
	}
	r.PerSecond = round(float64(r.Logins) / elapsed)
	r.GatewayCPUms = round((gcpu1 - gcpu0) * 1000 / float64(r.Logins))
	r.DCCPUms = round((dcpu1 - dcpu0) * 1000 / float64(r.Logins))
	r.P50, r.P99 = round(percentile(ms, 50)), round(percentile(ms, 99))
	return r, nil
}

func markdown(r result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Auth against Active Directory (Samba AD DC) through the gateway (%s, %d CPUs, load %.1f at start, %s)\n\n", r.Date, r.CPUs, r.Load1, r.Kex)
	fmt.Fprintf(&b, "Latency of one login, TCP connect to authenticated (at the gateway this includes the backend login to the node), %d sequential logins each; cold = the account's first login at that gateway, warm = identity cached.\n\n", r.Samples)
	fmt.Fprintf(&b, "| login | p50 ms | p99 ms | max ms |\n|---|---|---|---|\n")
	for _, l := range []struct {
		name string
		l    Latency
	}{
		{"key, warm cache", r.KeyWarm}, {"key, cold cache", r.KeyCold},
		{"password, warm cache (binds to AD)", r.PasswordWarm}, {"password, cold cache", r.PasswordCold},
		{"reference: key, directly to sshd", r.DirectKey},
	} {
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f |\n", l.name, l.l.P50, l.l.P99, l.l.Max)
	}
	fmt.Fprintf(&b, "\nSustained logins against one DC (%d concurrent Go clients from one address, %.0f s each; loopback is in admission_exempt, as a campus NAT would be, so the per-source bounds stay out of the figures):\n\n", r.RateKeyWarm.Concurrency, r.RateKeyWarm.Seconds)
	fmt.Fprintf(&b, "| logins | per second | errors | p50 ms | p99 ms | gateway CPU ms/login | DC CPU ms/login |\n|---|---|---|---|---|---|---|\n")
	for _, x := range []struct {
		name string
		r    Rate
	}{
		{"key, warm cache (no AD traffic)", r.RateKeyWarm},
		{"key, cache_ttl 1ms (AD search every login)", r.RateKeyUncached},
		{"password, warm cache (one user bind per login)", r.RatePassword},
	} {
		fmt.Fprintf(&b, "| %s | %.1f | %d | %.1f | %.1f | %.2f | %.2f |\n", x.name, x.r.PerSecond, x.r.Errors, x.r.P50, x.r.P99, x.r.GatewayCPUms, x.r.DCCPUms)
	}
	b.WriteString("\n")
	if len(r.Timing) > 0 {
		fmt.Fprintf(&b, "Refusal timing, an account vs made-up names (connect to refusal, x/crypto client, DC behind a delaying link, %d samples each, eight client addresses; KS: two-sample Kolmogorov–Smirnov statistic, separate when above the critical value at alpha %g):\n\n", r.Timing[0].Account.N, r.Timing[0].Alpha)
		fmt.Fprintf(&b, "| probe | DC link ms | account p10/p50/p90/p99 ms | made-up p10/p50/p90/p99 ms | KS D | critical | separate |\n|---|---|---|---|---|---|---|\n")
		q := func(x Quantiles) string { return fmt.Sprintf("%.1f / %.1f / %.1f / %.1f", x.P10, x.P50, x.P90, x.P99) }
		for _, t := range r.Timing {
			fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %.3f | %.3f | %v |\n", t.Probe, t.LinkMs, q(t.Account), q(t.MadeUp), t.KSD, t.Critical, t.Separate)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(float64(len(s))*p/100)) - 1
	return s[max(0, min(i, len(s)-1))]
}

func round(x float64) float64 { return math.Round(x*100) / 100 }

// groupCPU is the CPU time of every live process in process group pgid (the
// DC and its workers).
func groupCPU(pgid int) float64 {
	if pgid == 0 {
		return 0
	}
	ents, _ := os.ReadDir("/proc")
	total := 0.0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+2:])
		// pgrp is field 5 of the line, 3 here.
		if len(f) < 13 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		if c, err := harness.ProcessCPU(pid); err == nil {
			total += c
		}
	}
	return total
}

func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	x, _ := strconv.ParseFloat(f[0], 64)
	return x
}

// Package soak runs frontdoor's local stack (test/stack: Samba AD, Slurm,
// real sshd login nodes with agents, two gateway processes) under a
// university's Monday morning — a thousand held sessions and new logins
// at the highest rate the machine sustains — and breaks one part of it at
// a time while the load goes on, measuring what each failure costs.
//
// The order of a run (Run):
//
//  1. setup: the stack in a temporary directory (its own loopback
//     addresses: the DC on 127.0.2.11, nodes on 127.0.1.81–83), an S3
//     bucket for the audit trail, load users in the directory and on the
//     nodes, a TCP echo service the forwarding sessions reach;
//  2. ramp: the held sessions open, a few dozen per second;
//  3. rate search (unless a rate is given): new logins at rising rates
//     until one fails, is shed, or its p99 passes 2 s; the last rate
//     that held is the rate of the rest of the run;
//  4. steady: that load, with no fault, for Config.Steady;
//  5. faults (faults.go), one after the other under the same load, each
//     cleaned up and waited out before the next;
//  6. after: the load stops; the gateways' goroutines, descriptors and
//     memory are compared with before it began; the gateways stop and
//     every audit event in their files is looked for in the bucket.
//
// cmd: `make soak` (test/cmd/soak) runs it in full and writes
// bench/results/soak.json and the plots; `make test` runs a short form
// (soak_test.go). See RELIABILITY.md for the figures.
package soak

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/stack"
)

// Config is a soak run.
type Config struct {
	// Root is the repository (binaries are built from it).
	Root string
	// Dir is the work directory (the stack's state, the binaries, the
	// audit disk); it must be world-traversable.
	Dir string
	// Sessions held open; Users they and the new logins belong to.
	Sessions, Users int
	// StreamEvery and ForwardEvery: every StreamEvery-th held session
	// streams, every ForwardEvery-th forwards; 0 for none.
	StreamEvery, ForwardEvery int
	// RampPerSecond is how fast the held sessions open.
	RampPerSecond float64
	// Rate is the new logins per second; 0 searches for the highest the
	// machine sustains (RateStart, ×1.5 every RateStep).
	Rate      float64
	RateStart float64
	RateStep  time.Duration
	// PasswordShare of new logins use a password (the rest a key).
	PasswordShare float64
	// Steady is how long the load runs without faults.
	Steady time.Duration
	// Faults to inject, by name (Faults lists them all); none: none.
	Faults []string
	// Slurm: the stack runs Slurm (and its sync); without it, banners
	// show no GPU use.
	Slurm bool
	// SampleEvery is the gateways' sampling interval (default 5s).
	SampleEvery time.Duration
	// Log receives progress.
	Log *slog.Logger
}

// Addresses of this package's stack: apart from every other suite's
// (docs/testing.md).
const (
	adAddr     = "127.0.2.11"
	nodeFirst  = 81 // 127.0.1.81–83
	bucketName = "frontdoor-soak-audit"
)

// run is one soak in progress.
type run struct {
	cfg       Config
	log       *slog.Logger
	st        *stack.Stack
	load      *Load
	holds     *Holds
	held      atomic.Pointer[Holds] // holds, for the sampler's goroutine
	rec       *Recorder
	smp       *Sampler
	s3        *S3
	disk      *Disk
	net       *NetFault
	clockFile string
	probes    []*User // directory users the load never uses
	rate      atomic.Value
	shed      *atomic.Int64
	inFlight  func() int
	res       *Result
	churnStop context.CancelFunc

	baseline map[string]Sample // each gateway before the load
	firstPID map[string]int

	tmu       sync.Mutex // tmu protects teardowns
	teardowns []func()
}

func (r *run) churnRate() float64 {
	v, _ := r.rate.Load().(float64)
	return v
}

func (r *run) mark(name string, from, to time.Time) {
	r.res.Marks = append(r.res.Marks, Mark{Name: name, From: from, To: to})
}

// Run runs a soak and returns its result; err is a setup failure (the
// result's Checks carry the goals missed).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.SampleEvery == 0 {
		cfg.SampleEvery = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.RateStart == 0 {
		cfg.RateStart = 4
	}
	if cfg.RateStep == 0 {
		cfg.RateStep = 20 * time.Second
	}
	if err := checkFaults(cfg.Faults); err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, log: cfg.Log, rec: &Recorder{}, res: &Result{Start: time.Now()}}
	r.rate.Store(0.0)
	r.res.Date = time.Now().UTC().Format(time.RFC3339)
	r.res.Machine = machine()
	defer r.teardown()
	if err := r.setup(ctx); err != nil {
		return r.res, err
	}
	if err := r.exercise(ctx); err != nil {
		return r.res, err
	}
	return r.res, nil
}

func (r *run) has(fault string) bool {
	for _, f := range r.cfg.Faults {
		if f == fault {
			return true
		}
	}
	return false
}

// setup starts everything and opens the held sessions.
func (r *run) setup(ctx context.Context) error {
	cfg := r.cfg
	start := time.Now()
	for _, p := range []string{harness.SSHDPath, "go", "useradd", "mount", "nft"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("soak: %s missing (make deps)", p)
			}
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("soak: must run as root (it starts sshd, Samba, Slurm and changes nftables)")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return err
	}
	os.Chmod(cfg.Dir, 0o755)
	bin := filepath.Join(cfg.Dir, "frontdoor")
	r.log.Info("building the gateway binary")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/frontdoor")
	build.Dir = cfg.Root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v: %s", err, out)
	}
	var clockBin string
	if r.has(FaultClock) {
		r.log.Info("building the clock-offset gateway binary (a patched runtime: clock.go)")
		var err error
		if clockBin, err = BuildClockGateway(ctx, cfg.Root, cfg.Dir); err != nil {
			return err
		}
		r.clockFile = filepath.Join(cfg.Dir, "gw2-clock-offset")
		if err := SetClockOffset(r.clockFile, 0); err != nil {
			return err
		}
	}
	var err error
	if r.s3, err = StartS3(bucketName); err != nil {
		return err
	}
	for _, gw := range []string{"gw1", "gw2"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, gw+"-audit"), 0o700); err != nil {
			return err
		}
	}
	if r.has(FaultDisk) {
		if r.disk, err = MountDisk(filepath.Join(cfg.Dir, "gw2-audit"), 256); err != nil {
			return err
		}
	}
	echo, err := StartEcho()
	if err != nil {
		return err
	}
	r.onTeardown(echo.Close)
	r.net = NewNetFault()
	r.net.Heal(ctx) // a table left by a killed run

	r.log.Info("starting the stack")
	st, err := stack.Start(ctx, stack.Options{
		StateDir: filepath.Join(cfg.Dir, "stack"), Bin: bin, ADAddr: adAddr,
		NodeAddr: func(i int) string { return fmt.Sprintf("127.0.1.%d", nodeFirst+i-1) },
		NoSlurm:  !cfg.Slurm, SlurmSync: cfg.Slurm, Log: r.log,
		GatewayPatch: r.gatewayPatch,
		GatewayCommand: func(name string, cmd *exec.Cmd) {
			cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=soak", "AWS_SECRET_ACCESS_KEY=soak-secret", "AWS_SESSION_TOKEN=",
				"AWS_PROFILE=", "AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent", "AWS_EC2_METADATA_DISABLED=true")
			if name == "gw2" && clockBin != "" {
				cmd.Path = clockBin
				cmd.Env = append(cmd.Env, ClockFileEnv+"="+r.clockFile)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	r.st = st
	var pools []int
	for _, g := range st.Gateways {
		pools = append(pools, g.PoolPort)
	}
	r.net = NewNetFault(pools...)

	users, err := r.createUsers(ctx)
	if err != nil {
		return err
	}
	r.load = &Load{HostKey: st.Keys.HostPublicKey, Users: users, Nodes: map[string]string{}, EchoAddr: echo.Addr(), Rec: r.rec}
	r.load.defaults()
	for _, g := range st.Gateways {
		r.load.Gateways = append(r.load.Gateways, Target{Name: g.Name, Addr: g.SSH})
	}
	for _, n := range st.Nodes {
		r.load.Nodes[n.Host] = n.Name
	}
	r.smp = &Sampler{st: st, holds: func() int {
		if h := r.held.Load(); h != nil {
			return h.Up()
		}
		return 0
	}}
	sctx, cancel := context.WithCancel(ctx)
	r.onTeardown(cancel)
	r.baseline, r.firstPID = map[string]Sample{}, map[string]int{}
	for _, s := range r.smp.Once(ctx) {
		r.baseline[s.Gateway], r.firstPID[s.Gateway] = s, s.PID
	}
	r.res.Machine.LoadBefore = harness.Load1()
	go r.smp.Run(sctx, cfg.SampleEvery)

	// Every user logs in once before the load (their identities are then
	// cached, as on a working day).
	if err := r.warm(ctx); err != nil {
		return err
	}
	r.log.Info("opening the held sessions", "sessions", cfg.Sessions, "per_second", cfg.RampPerSecond)
	rampStart := time.Now()
	hctx, hcancel := context.WithCancel(context.Background())
	r.onTeardown(hcancel)
	r.holds = r.load.Hold(hctx, cfg.Sessions, cfg.RampPerSecond, cfg.StreamEvery, cfg.ForwardEvery)
	r.held.Store(r.holds)
	if err := harness.WaitFor(ctx, 5*time.Minute, func() error {
		if up := r.holds.Up(); up < cfg.Sessions {
			return fmt.Errorf("%d of %d held sessions open", up, cfg.Sessions)
		}
		return nil
	}); err != nil {
		return err
	}
	r.mark("ramp", rampStart, time.Now())
	r.res.SetupSeconds = time.Since(start).Seconds()
	r.res.Conditions = r.conditions()
	return nil
}

// gatewayPatch is what the soak adds to each gateway's configuration: the
// audit file and spool in a directory of its own (gw2's on its own small
// filesystem when the disk fault runs), the S3 bucket with short batches,
// and a Slurm sync that notices changes within seconds.
func (r *run) gatewayPatch(name string) map[string]any {
	dir := filepath.Join(r.cfg.Dir, name+"-audit")
	p := map[string]any{
		"audit": map[string]any{
			"file": filepath.Join(dir, "audit.jsonl"),
			"s3": map[string]any{"bucket": bucketName, "region": "us-east-1", "endpoint": r.s3.URL(), "path_style": true,
				"batch_max_age": "5s", "spool_dir": filepath.Join(dir, "spool"), "spool_max_bytes": 64 << 20},
		},
	}
	if r.cfg.Slurm {
		p["slurm"] = map[string]any{"sync_interval": "1m", "watch_interval": "5s"}
	}
	return p
}

// createUsers makes the load users (soak-u001 …) and a few probe users
// (soak-p1 …): local Unix users on the nodes, and directory accounts with
// a key and a password in groups the policy grants (three load users in
// four, and the probe users, in the NLP lab, which may use every pool; one
// in four in the vision lab).
func (r *run) createUsers(ctx context.Context) ([]*User, error) {
	n := r.cfg.Users
	names := make([]string, 0, n+4)
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("soak-u%03d", i))
	}
	for i := 1; i <= 4; i++ {
		names = append(names, fmt.Sprintf("soak-p%d", i))
	}
	r.log.Info("creating users", "count", len(names))
	for _, name := range names {
		if err := harness.EnsureUnixUser(name); err != nil {
			return nil, err
		}
	}
	all := make([]*User, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, name := range names {
		group := "nlp-lab"
		if i < n && i%4 == 3 {
			group = "vision-lab"
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			all[i], errs[i] = r.createUser(ctx, name, group)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r.probes = all[n:]
	return all[:n], nil
}

func (r *run) createUser(ctx context.Context, name, group string) (*User, error) {
	pw, err := stack.RandomPassword()
	if err != nil {
		return nil, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	u := &User{Name: name, Password: pw, Signer: signer}
	if r.st.DC == nil {
		return nil, errors.New("soak: the stack needs the AD directory")
	}
	if _, err := r.st.DC.CreateUser(ctx, name, pw, group); err != nil {
		return nil, fmt.Errorf("AD user %s: %w", name, err)
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " " + name
	if err := r.st.DC.SetSSHKey(ctx, name, line); err != nil {
		return nil, err
	}
	return u, nil
}

// warm logs every load user in once with a key (not counted: setup). A
// user's first key login at a gateway that has never seen them is refused
// unseen when the directory answers after key_refusal_delay (a fixed
// answer time, docs/security.md); eight at once against a freshly
// populated Samba on a loaded machine sometimes do. Like a user, the
// warm-up tries once more (the lookup the first try started has
// answered by then), and says how many needed it.
func (r *run) warm(ctx context.Context) error {
	r.log.Info("first login of every user")
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	var mu sync.Mutex
	var errs []error
	retried := 0
	for i, u := range append(append([]*User(nil), r.load.Users...), r.probes...) {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			l := r.load.LoginOnce(ctx, KindProbe, i, u, "publickey")
			if !l.OK && l.Stage == "auth" {
				mu.Lock()
				retried++
				mu.Unlock()
				l = r.load.LoginOnce(ctx, KindProbe, i, u, "publickey")
			}
			if !l.OK {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %s %s", u.Name, l.Stage, l.Err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if retried > 0 {
		r.log.Info("first logins refused once (the directory answered after key_refusal_delay) and tried again", "users", retried)
	}
	if len(errs) > 0 {
		return fmt.Errorf("first logins: %d failed, e.g. %w", len(errs), errs[0])
	}
	return nil
}

// exercise runs the rate search, the steady load, the faults and the
// after-check.
func (r *run) exercise(ctx context.Context) error {
	cctx, cancel := context.WithCancel(ctx)
	r.churnStop = cancel
	r.shed, r.inFlight = r.load.Churn(cctx, r.churnRate, r.cfg.PasswordShare, 400)
	rate := r.cfg.Rate
	if rate == 0 {
		rate = r.searchRate(ctx)
	}
	r.res.Rate = rate
	r.rate.Store(rate)
	r.log.Info("steady load", "rate", rate, "for", r.cfg.Steady)
	from := time.Now()
	shed0 := r.shed.Load()
	if err := sleepCtx(ctx, r.cfg.Steady); err != nil {
		return err
	}
	to := time.Now()
	r.res.Steady = summarize(r.rec, r.smp, from, to)
	r.res.Steady.Shed = r.shed.Load() - shed0
	r.mark("steady", from, to)
	r.checkSteady()

	for _, name := range r.cfg.Faults {
		if err := r.settle(ctx, 3*time.Minute); err != nil {
			r.log.Warn("not settled before the fault", "fault", name, "err", err)
		}
		r.log.Info("fault", "name", name)
		before := r.signals(ctx)
		fr := faults[name](ctx, r)
		fr.Counters, fr.Warnings = r.since(ctx, before)
		r.res.Faults = append(r.res.Faults, fr)
		r.mark(name, fr.Start, fr.End.Add(time.Duration(fr.RecoverS*float64(time.Second))))
		r.res.check("fault: "+name, fr.Goal, fr.Met, "%s", fr.Verdict)
		r.log.Info("fault done", "name", name, "met", fr.Met, "verdict", fr.Verdict)
	}
	return r.after(ctx)
}

// checkSteady records the goals of the steady load.
func (r *run) checkSteady() {
	s := r.res.Steady
	r.res.check("failed logins", "0", s.Logins.Failed == 0 && s.HoldLogins.Failed == 0,
		"%d of %d new logins, %d of %d held-session logins (%v)", s.Logins.Failed, s.Logins.Count, s.HoldLogins.Failed, s.HoldLogins.Count, s.FailReasons)
	r.res.check("corrupted transfers", "0", s.Transfers.Corrupt == 0, "%d of %d round trips (%d MiB)", s.Transfers.Corrupt, s.Transfers.Count, s.Transfers.Bytes>>20)
	r.res.check("held sessions lost", "0", s.SessionsEnded == 0, "%d (%v)", s.SessionsEnded, s.EndReasons)
	r.res.check("logins shed by the client", "0", s.Shed == 0, "%d", s.Shed)
}

// settle waits until the system is back to normal: every node healthy at
// every gateway, every held session open.
func (r *run) settle(ctx context.Context, timeout time.Duration) error {
	return harness.WaitFor(ctx, timeout, func() error {
		for _, g := range r.st.Gateways {
			if !g.Running() {
				return fmt.Errorf("%s is not running", g.Name)
			}
			nodes, err := g.Nodes(ctx)
			if err != nil {
				return err
			}
			for _, n := range nodes {
				if !n.Alive || !n.SSHDUp {
					return fmt.Errorf("%s sees %s not healthy", g.Name, n.Name)
				}
			}
		}
		if up := r.holds.Up(); up < r.cfg.Sessions {
			return fmt.Errorf("%d of %d held sessions open", up, r.cfg.Sessions)
		}
		return nil
	})
}

// after stops the load and checks that the gateways gave back what it
// took, then stops the gateways and checks the audit trail.
func (r *run) after(ctx context.Context) error {
	r.churnStop()
	r.log.Info("stopping the load")
	stopAt := time.Now()
	r.holds.Stop()
	// Every session gone from both gateways, then a settling period.
	harness.WaitFor(ctx, 2*time.Minute, func() error {
		for _, s := range r.smp.Once(ctx) {
			if s.Sessions > 0 {
				return fmt.Errorf("%s still has %d sessions", s.Gateway, s.Sessions)
			}
		}
		return nil
	})
	closed := time.Now()
	if err := sleepCtx(ctx, 30*time.Second); err != nil {
		return err
	}
	final := r.smp.Once(ctx)
	r.mark("after", stopAt, time.Now())
	all := r.smp.Samples(r.res.Start, time.Now())
	for _, s := range final {
		b := r.baseline[s.Gateway]
		g := Growth{Gateway: s.Gateway, GoroutinesBefore: b.Goroutines, GoroutinesAfter: s.Goroutines, FDsBefore: b.FDs,
			FDsAfter: s.FDs, RSSBeforeMiB: float64(b.RSSKiB) / 1024, RSSAfterMiB: float64(s.RSSKiB) / 1024,
			SessionsAfter: s.Sessions, Restarted: s.PID != r.firstPID[s.Gateway], SettledS: time.Since(closed).Seconds()}
		for _, x := range all {
			if x.Gateway == s.Gateway {
				g.GoroutinesPeak = max(g.GoroutinesPeak, x.Goroutines)
				g.FDsPeak = max(g.FDsPeak, x.FDs)
				g.RSSPeakMiB = max(g.RSSPeakMiB, float64(x.RSSKiB)/1024)
			}
		}
		r.res.After = append(r.res.After, g)
		// A gateway with no sessions left holds what an idle one holds:
		// a few goroutines and descriptors more at most (gossip and
		// pooled directory connections come and go).
		r.res.check("no growth after the load: "+s.Gateway, "goroutines ≤ before+25, fds ≤ before+15, no sessions",
			s.Goroutines <= b.Goroutines+25 && s.FDs <= b.FDs+15 && s.Sessions == 0,
			"goroutines %d → peak %d → %d, fds %d → peak %d → %d, RSS %.0f → peak %.0f → %.0f MiB, %d sessions",
			b.Goroutines, g.GoroutinesPeak, s.Goroutines, b.FDs, g.FDsPeak, s.FDs, g.RSSBeforeMiB, g.RSSPeakMiB, g.RSSAfterMiB, s.Sessions)
	}
	r.res.Latency = series(r.rec, r.res.Start, time.Now(), 15*time.Second)
	r.res.Samples = all
	r.res.Host = r.smp.Machine(r.res.Start, time.Now())
	return r.checkAudit(ctx)
}

// checkAudit stops the gateways (each flushes its spool to the bucket)
// and compares their audit files with the bucket.
func (r *run) checkAudit(ctx context.Context) error {
	dropped := map[string]map[string]float64{}
	for _, g := range r.st.Gateways {
		m, err := harness.AdminGet(ctx, g.AdminSocket, "/metrics")
		if err != nil {
			continue
		}
		d := map[string]float64{}
		for _, name := range []string{"frontdoor_audit_s3_dropped_events_total", "frontdoor_audit_dropped_events_total", "frontdoor_audit_write_errors_total"} {
			if v := metricSum(m, name); v > 0 {
				d[name] = v
			}
		}
		dropped[g.Name] = d
	}
	for _, g := range r.st.Gateways {
		g.Stop()
	}
	inBucket, err := r.s3.Events()
	if err != nil {
		return fmt.Errorf("reading the bucket: %w", err)
	}
	byGW := map[string]map[string]int{}
	for _, e := range inBucket {
		if byGW[e.Gateway] == nil {
			byGW[e.Gateway] = map[string]int{}
		}
		byGW[e.Gateway][eventKey(e)]++
	}
	for _, g := range r.st.Gateways {
		evs, err := harness.ReadAudit(g.Audit)
		if err != nil {
			return err
		}
		c := AuditCheck{Gateway: g.Name, Dropped: dropped[g.Name]}
		bucket := byGW[g.Name]
		inFile := map[string]bool{}
		for _, e := range evs {
			if e.Gateway != g.Name {
				// `frontdoor slurm apply/sync` run with this gateway's
				// configuration write their slurm.change events to the
				// same file; they ship nowhere else.
				c.OtherWriters++
				continue
			}
			c.File++
			k := eventKey(e)
			inFile[k] = true
			if bucket[k] == 0 {
				c.NotInS3++
				if len(c.Missing) < 10 {
					c.Missing = append(c.Missing, k)
				}
			}
		}
		for k, n := range bucket {
			c.Bucket += n
			if n > 1 {
				c.Dupes += n - 1
			}
			if !inFile[k] {
				c.NotInFile++
			}
		}
		r.res.Audit = append(r.res.Audit, c)
		lost := 0.0
		for _, v := range c.Dropped {
			lost += v
		}
		// What the file has must be in the bucket, unless the gateway
		// counted it as dropped (the full-disk fault).
		r.res.check("audit: nothing lost to S3 "+g.Name, "every event of the file in the bucket, or counted as dropped",
			float64(c.NotInS3) <= lost, "%d of %d events of the file not in the bucket, %d counted as dropped, %d duplicates",
			c.NotInS3, c.File, int(lost), c.Dupes)
	}
	return nil
}

// eventKey identifies an audit event across the file and the bucket.
func eventKey(e audit.Event) string {
	return e.Time.UTC().Format(time.RFC3339Nano) + "|" + e.Type + "|" + e.Session + "|" + e.User + "|" + e.Result + "|" + e.Reason
}

func (r *run) conditions() Conditions {
	c := Conditions{Sessions: r.cfg.Sessions, Users: r.cfg.Users, Gateways: len(r.st.Gateways), Nodes: len(r.st.Nodes),
		PasswordShare: r.cfg.PasswordShare, SteadySeconds: r.cfg.Steady.Seconds(), StreamBytes: r.load.StreamBytes,
		StreamEveryS: r.load.StreamEvery.Seconds(), ForwardBytes: r.load.ForwardBytes, ForwardEveryS: r.load.ForwardEvery.Seconds(),
		PingEveryS: r.load.PingEvery.Seconds(), Slurm: r.cfg.Slurm, Directory: "Samba AD (LDAPS)", AuditS3: true,
		SourceAddrs: 1016, LoginTimeoutS: r.load.LoginTimeout.Seconds(), RateSearchStep: r.cfg.RateStep.Seconds()}
	for _, s := range r.holds.States() {
		switch s.Kind {
		case SessStream:
			c.Streaming++
		case SessForward:
			c.Forwarding++
		}
	}
	if r.clockFile != "" {
		c.ClockGateway = "gw2"
	}
	if r.disk != nil {
		c.DiskGateway = "gw2"
	}
	return c
}

func (r *run) onTeardown(f func()) {
	r.tmu.Lock()
	defer r.tmu.Unlock()
	r.teardowns = append(r.teardowns, f)
}

func (r *run) teardown() {
	ctx := context.Background()
	if r.churnStop != nil {
		r.churnStop()
	}
	if r.holds != nil {
		r.holds.Stop()
	}
	if r.net != nil {
		r.net.Heal(ctx)
	}
	if r.st != nil {
		if r.st.DC != nil {
			r.st.DC.Resume() // a fault cut short must not leave it frozen
		}
		r.st.Close()
	}
	if r.s3 != nil {
		r.s3.Close()
	}
	if r.disk != nil {
		r.disk.Unmount()
	}
	r.tmu.Lock()
	fs := r.teardowns
	r.tmu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	m.MemMiB = harness.MemTotalKiB() / 1024
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command(harness.SSHDPath, "-V").CombinedOutput(); err == nil || len(out) > 0 {
		m.OpenSSH, _, _ = strings.Cut(strings.TrimSpace(string(out)), ",")
	}
	return m
}

package lifecycle

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cloudflare/tableflip"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/assembly"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// Options are a gateway process's command-line settings.
type Options struct {
	// ConfigPath is the configuration file.
	ConfigPath string
	// PIDFile, if set, gets the pid of the process serving the gateway
	// once it is ready (for supervisors that follow a PID file; the
	// systemd unit uses sd_notify's MAINPID instead).
	PIDFile string
	// UpgradeTimeout is how long a new process has to become ready.
	UpgradeTimeout time.Duration
	// Stderr receives the process log (default os.Stderr).
	Stderr io.Writer
}

// DefaultUpgradeTimeout is Options.UpgradeTimeout's default.
const DefaultUpgradeTimeout = time.Minute

// takeoverTimeout bounds the wait for the old process to give its place up.
const takeoverTimeout = 30 * time.Second

// nodesUpTimeout bounds the wait for the nodes the old process routed to
// (a few heartbeats of their agents).
const nodesUpTimeout = 10 * time.Second

// process is one gateway process: the assembly, the upgrader, the state
// machine and what GET /v1/status shows.
type process struct {
	o       Options
	log     *slog.Logger
	upg     *tableflip.Upgrader
	a       *assembly.Gateway
	pred    *predecessor // nil: started afresh
	started time.Time
	events  chan func()   // work for the loop, from admin requests and goroutines
	done    chan struct{} // closed when the loop has returned
	metrics *metrics

	mu            sync.Mutex // mu protects the following (read by the status)
	m             Machine
	lastUpgrade   *admin.Upgrade
	drainDeadline time.Time

	// The loop's own (touched on its goroutine only).
	succ    *successor      // the upgrade under way, or the successor drained for
	idle    <-chan struct{} // while draining: closed when no connection is left
	timers  []*time.Timer   // drain notices and deadline
	exiting bool
}

// Run runs a gateway process until it exits: it starts afresh, or takes
// over from the process that started it (an upgrade); it reloads on SIGHUP
// or POST /v1/reload, upgrades on SIGUSR2 or POST /v1/upgrade, drains on
// SIGTERM and closes everything on SIGINT. ctx bounds the start only.
func Run(ctx context.Context, o Options) error {
	if o.UpgradeTimeout <= 0 {
		o.UpgradeTimeout = DefaultUpgradeTimeout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	// Signals first: a SIGHUP during the start must not end the process.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	upg, err := tableflip.New(tableflip.Options{PIDFile: o.PIDFile, UpgradeTimeout: o.UpgradeTimeout})
	if err != nil {
		return err
	}
	defer upg.Stop()
	// The file and what it names are checked by Build, as by `frontdoor
	// config check` and a reload (assembly.load).
	cfg, err := config.Load(o.ConfigPath)
	if err != nil {
		return err
	}
	level := new(slog.LevelVar)
	var l slog.Level
	_ = l.UnmarshalText([]byte(cfg.Log.Level))
	level.Set(l)
	p := &process{o: o, upg: upg, log: NewLogger(cfg.Log, level, o.Stderr), started: time.Now(),
		events: make(chan func(), 16), done: make(chan struct{}), m: Machine{State: Serving}}
	p.metrics = newMetrics(p)
	bo := assembly.Options{Log: p.log, LogLevel: level, Listen: p.listen, Lifecycle: p}
	if upg.HasParent() {
		f, err := upg.Fds.File(handoverFile)
		if err != nil || f == nil {
			return fmt.Errorf("upgrade: no handover channel from the previous process (%v)", err)
		}
		if p.pred, err = newPredecessor(f, p.log); err != nil {
			return err
		}
		p.m.Predecessor = true
		bo.Takeover = func(ctx context.Context, member string) ([]cluster.Session, error) {
			ctx, cancel := context.WithTimeout(ctx, takeoverTimeout)
			defer cancel()
			return p.pred.takeover(ctx, member)
		}
	}
	p.a, err = assembly.Build(ctx, cfg, bo)
	if err != nil {
		return err
	}
	p.a.Registry.MustRegister(p.metrics.collectors()...)
	if p.pred != nil {
		p.a.InheritIdentities(p.pred.identities())
	}
	p.a.Report.Processes, p.a.Report.Upgrade = p, p
	if err := p.a.Listen(); err != nil {
		p.a.Close()
		return err
	}
	if p.pred != nil {
		// The old process serves on meanwhile: take no login before the
		// nodes it routes to are up here too (their next heartbeat).
		wctx, cancel := context.WithTimeout(ctx, nodesUpTimeout)
		if err := p.a.WaitNodesUp(wctx, p.pred.nodesUp()); err != nil {
			p.log.Warn("upgrade: taking logins before every node is up here", "err", err)
		}
		cancel()
	}
	served := make(chan error, 1)
	go func() { served <- p.a.Serve(context.Background()) }()
	if p.pred != nil {
		go p.pred.follow(p.a, func() { p.do(func() { p.on(EvPredecessorGone, "") }) })
		go p.pred.sendMaintenance(p.a)
	}
	if err := upg.Ready(); err != nil {
		p.a.Close()
		return fmt.Errorf("upgrade: telling the previous process: %w", err)
	}
	if !upg.HasParent() {
		if err := sdNotify("READY=1"); err != nil {
			p.log.Warn("systemd notify", "err", err)
		}
	}
	p.log.Info("gateway serving", "pid", os.Getpid(), "version", version(), "took_over", upg.HasParent())
	return p.loop(sigs, served)
}

// NewLogger is the process log: JSON (or text) lines on w, at level.
func NewLogger(c config.Log, level slog.Leveler, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// listen hands a listener this process inherited for network and addr
// back, or creates it; either way it is passed on at the next upgrade.
func (p *process) listen(network, addr string, create func() (net.Listener, error)) (net.Listener, error) {
	ln, err := p.upg.Fds.Listener(network, addr)
	if err != nil {
		return nil, err
	}
	if ln != nil {
		if network == "unix" {
			return admin.InheritUnix(ln, addr)
		}
		return ln, nil
	}
	if ln, err = create(); err != nil {
		return nil, err
	}
	tl, ok := ln.(tableflip.Listener)
	if !ok {
		ln.Close()
		return nil, fmt.Errorf("upgrade: a %T cannot be handed over", ln)
	}
	if err := p.upg.Fds.AddListener(network, addr, tl); err != nil {
		ln.Close()
		return nil, fmt.Errorf("upgrade: %w", err)
	}
	return ln, nil
}

// do runs f on the loop, unless the loop has returned; false then.
func (p *process) do(f func()) bool {
	select {
	case p.events <- f:
		return true
	case <-p.done:
		return false
	}
}

// loop is the process's life after the start: signals, admin requests and
// what they started, through the state machine, until it exits.
func (p *process) loop(sigs <-chan os.Signal, served <-chan error) error {
	defer close(p.done)
	for !p.exiting {
		select {
		case sig := <-sigs:
			by := signalName(sig)
			switch sig {
			case syscall.SIGHUP:
				p.reload(context.Background(), by)
			case syscall.SIGUSR2:
				p.upgrade(by)
			case syscall.SIGTERM:
				p.on(EvTerminate, by)
			case syscall.SIGINT:
				p.on(EvInterrupt, by)
			}
		case f := <-p.events:
			f()
		case <-p.idle:
			p.idle = nil
			p.on(EvDrained, "")
		}
	}
	for _, t := range p.timers {
		t.Stop()
	}
	err := p.a.Close()
	<-served
	p.log.Info("gateway exited", "pid", os.Getpid())
	return err
}

// signalName is what a signal's change records as its "by".
func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGUSR2:
		return "SIGUSR2"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return s.String()
}

// on feeds e to the state machine and does what it says (on the loop).
func (p *process) on(e Event, by string) Step {
	p.mu.Lock()
	m, step := p.m.On(e)
	p.m = m
	p.mu.Unlock()
	if step.Refused != "" {
		p.log.Warn("refused", "by", by, "reason", step.Refused)
		return step
	}
	switch step.Do {
	case CancelUpgrade:
		p.log.Info("SIGTERM during an upgrade: cancelling it, then draining", "by", by)
		p.upg.Stop() // kills the new process; its failure then drains this one
	case Resume:
		p.resume()
	case ResumeAndDrain:
		p.resume()
		p.startDrain(ReasonShutdown, false)
	case DrainUpgrade:
		p.startDrain(ReasonUpgrade, true)
	case DrainShutdown:
		if err := sdNotify("STOPPING=1"); err != nil {
			p.log.Warn("systemd notify", "err", err)
		}
		p.startDrain(ReasonShutdown, false)
	case CloseNow:
		p.upg.Stop()
		n := p.a.SSH.SessionCount()
		p.a.SSH.CloseSessions("gateway stopped")
		p.log.Info("stopping now: sessions closed", "by", by, "sessions", n)
		p.exiting = true
	case CloseAndExit:
		p.mu.Lock()
		reason := p.m.Reason
		p.mu.Unlock()
		n := p.a.SSH.SessionCount()
		p.a.SSH.CloseSessions(closeText(reason, p.a.Config().Gateway.DrainTimeout))
		p.log.Info("drain timeout: the sessions left were closed", "sessions", n)
		p.exiting = true
	case Exit:
		p.log.Info("drain over: the last session ended")
		p.exiting = true
	}
	return step
}

// startDrain stops taking logins (the sockets handed over, or closed) and
// tells the users; the loop exits once the last connection ends or at the
// deadline.
func (p *process) startDrain(reason string, handedOver bool) {
	p.a.StopAccepting(handedOver)
	timeout := p.a.Config().Gateway.DrainTimeout
	start := time.Now()
	deadline := start.Add(timeout)
	p.mu.Lock()
	p.drainDeadline = deadline
	p.mu.Unlock()
	if p.succ != nil && handedOver {
		p.succ.drain(deadline)
	}
	ns := drainNotices(reason, start, deadline)
	k := p.a.SSH.Notify(ns[0].text)
	p.log.Info("draining", "reason", reason, "sessions", p.a.SSH.SessionCount(), "told", k, "deadline", deadline)
	for _, n := range ns[1:] {
		p.timers = append(p.timers, time.AfterFunc(time.Until(n.at), func() {
			if k := p.a.SSH.Notify(n.text); k > 0 {
				p.log.Info("drain: users told", "sessions", k, "notice", n.text)
			}
		}))
	}
	p.timers = append(p.timers, time.AfterFunc(timeout, func() { p.do(func() { p.on(EvDrainTimeout, "") }) }))
	p.idle = p.a.SSH.Idle()
}

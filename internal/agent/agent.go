// Package agent runs on each login node: it measures the node's health,
// checks that the local sshd answers (and that it does not penalise the
// gateways: sshdcheck.go), honours the drain file, and sends the result,
// signed with the node's host key, to the gateways through
// internal/cluster.
//
// A minimal /etc/frontdoor/agent.yaml:
//
//	node: login1                 # the name users type as alice+login1
//	pool: general
//	ssh_addr: 10.1.0.11:22       # what gateways dial
//	max_sessions: 200
//	cluster:
//	  bind_addr: 10.1.0.11       # login nodes have several interfaces
//	  bind_port: 7946
//	  join: ["10.1.0.2:7946", "10.1.0.3:7946"]   # the gateways it sends to
//	  label: hpc-prod
//	  secret_keys: ["<base64 32 bytes>"]
//
// The local stack adds metrics_file (per-node simulated load), probe_addr
// and drain_file under its state directory.
package agent

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/sshprobe"
)

// Run joins the cluster and publishes health until ctx is cancelled, then
// leaves the cluster. It returns nil on cancellation. cfg is derived (see
// Config.Derive) and validated.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var src Source = &ProcSource{Root: cfg.ProcRoot, SSHDAddr: cfg.ProbeAddr}
	if cfg.MetricsFile != "" {
		src = FileSource{Path: cfg.MetricsFile}
	}
	var hostKey ssh.Signer
	if cfg.HostKey != "" {
		k, err := cfg.LoadHostKey()
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		hostKey = k
	}
	c, err := cluster.Start(ctx, cfg.Cluster, cluster.Options{
		Role: cluster.RoleAgent, Logger: logger, Meta: map[string]string{"pool": cfg.Pool}, HostKey: hostKey,
	})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	defer c.Close()
	a := &agent{cfg: cfg, src: src, pub: c, log: logger.With("node", cfg.Node), now: time.Now}
	if cfg.SSHDCheckInterval > 0 {
		a.sshd = &sshdChecker{sshd: cfg.SSHDPath, config: cfg.SSHDConfig, gateways: gatewayAddrs(cfg), run: runCommand}
	}
	a.loop(ctx)
	return nil
}

// publisher is the one cluster method the agent needs.
type publisher interface {
	PublishHealth(cluster.Health) error
}

type agent struct {
	cfg Config
	src Source
	pub publisher
	log *slog.Logger
	now func() time.Time

	last      cluster.Health // last published
	published time.Time      // when, by now(); zero before the first

	// sshd checks the node's sshd (nil: off); warnings are what its last
	// check found, at checked.
	sshd     *sshdChecker
	warnings []string
	checked  time.Time
	detail   string // the last check's log line, to log changes only
}

func (a *agent) loop(ctx context.Context) {
	t := time.NewTicker(a.cfg.ProbeInterval)
	defer t.Stop()
	for {
		a.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick measures once and publishes when something changed significantly
// or Interval has passed since the last publication.
func (a *agent) tick(ctx context.Context) {
	a.checkSSHD(ctx)
	h, err := a.measure(ctx)
	if err != nil {
		// Publishing guesses would make a node we cannot measure look idle;
		// staying silent lets its health go stale and routing skip it.
		a.log.Warn("agent: measurement failed", "err", err)
		return
	}
	if err := h.Check(a.now(), 0); err != nil && (a.published.IsZero() || a.last.Check(a.now(), 0) == nil) {
		// Sent anyway: a node whose figures are wrong must show up on
		// the gateways, not go silent and look merely dead.
		a.log.Warn("agent: health outside what a machine can report; the gateways will refuse it and take this node as lying",
			"reason", err.Error())
	}
	due := a.published.IsZero() || a.now().Sub(a.published) >= a.cfg.Interval
	if !due && !significant(a.last, h) {
		return
	}
	if err := a.pub.PublishHealth(h); err != nil {
		a.log.Error("agent: publish health", "err", err)
		return
	}
	if h.SSHDUp != a.last.SSHDUp || h.Draining != a.last.Draining || a.published.IsZero() {
		a.log.Info("agent: health", "sshd_up", h.SSHDUp, "draining", h.Draining,
			"load1", h.Load1, "sessions", h.Sessions)
	}
	a.last, a.published = h, a.now()
}

// checkSSHD runs the sshd check when due and logs what changed.
func (a *agent) checkSSHD(ctx context.Context) {
	if a.sshd == nil || (!a.checked.IsZero() && a.now().Sub(a.checked) < a.cfg.SSHDCheckInterval) {
		return
	}
	a.checked = a.now()
	ws, detail, err := a.sshd.check(ctx)
	if err != nil {
		ws, detail = []string{cluster.WarnSSHDCheckFailed}, err.Error()
	}
	if detail != a.detail {
		if detail == "" {
			a.log.Info("agent: sshd check passes")
		} else {
			a.log.Warn("agent: sshd check", "reason", detail, "warnings", ws)
		}
	}
	a.warnings, a.detail = ws, detail
}

func (a *agent) measure(ctx context.Context) (cluster.Health, error) {
	s, err := a.src.Sample(ctx)
	if err != nil {
		return cluster.Health{}, err
	}
	up := true
	if err := sshprobe.Probe(ctx, a.cfg.ProbeAddr, a.cfg.ProbeTimeout); err != nil {
		if a.last.SSHDUp || a.published.IsZero() {
			a.log.Warn("agent: sshd not answering", "err", err)
		}
		up = false
	}
	return cluster.Health{
		Pool:         a.cfg.Pool,
		Addr:         a.cfg.SSHAddr,
		SSHDUp:       up,
		Draining:     Drained(a.cfg.DrainFile),
		At:           a.now(),
		Sessions:     s.Sessions,
		Users:        s.Users,
		MaxSessions:  a.cfg.MaxSessions,
		Load1:        s.Load1,
		Load5:        s.Load5,
		Load15:       s.Load15,
		CPUs:         max(s.CPUs, 1),
		CPUUtil:      s.CPUUtil,
		MemAvailFrac: s.MemAvailFrac,
		HasPSI:       s.HasPSI,
		CPUPressure:  s.CPUPressure,
		MemPressure:  s.MemPressure,
		Warnings:     a.warnings,
	}, nil
}

// significant reports a change gateways should hear about before the next
// regular publication: sshd, drain or warnings changed, load per CPU moved by 0.5,
// available memory by 10 points, pressure by 10 points, or sessions by 5
// and 20 %.
func significant(prev, cur cluster.Health) bool {
	if prev.SSHDUp != cur.SSHDUp || prev.Draining != cur.Draining || !slices.Equal(prev.Warnings, cur.Warnings) {
		return true
	}
	perCPU := func(h cluster.Health) float64 { return h.Load1 / float64(max(h.CPUs, 1)) }
	if math.Abs(perCPU(prev)-perCPU(cur)) >= 0.5 {
		return true
	}
	if math.Abs(prev.MemAvailFrac-cur.MemAvailFrac) >= 0.1 ||
		math.Abs(prev.CPUPressure-cur.CPUPressure) >= 0.1 ||
		math.Abs(prev.MemPressure-cur.MemPressure) >= 0.1 {
		return true
	}
	d := cur.Sessions - prev.Sessions
	if d < 0 {
		d = -d
	}
	return d >= 5 && float64(d) >= 0.2*float64(max(prev.Sessions, 1))
}

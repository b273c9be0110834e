package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/assembly"
	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// The changes an admin asks for — a reload, an upgrade — and what the
// process shows of them: GET /v1/status (its processes, the last reload
// and upgrade), the metrics, the log and the audit trail (type admin, the
// admin as its user).

var _ admin.Lifecycle = (*process)(nil)

// reload re-reads the configuration (on the loop) and records how it went
// (assembly.ReloadLog: the status and frontdoor_reloads_total).
func (p *process) reload(ctx context.Context, by string) admin.Reload {
	r := admin.Reload{At: time.Now().UTC(), By: by, OK: true, Result: admin.ResultOK}
	if step := p.on(EvReload, by); step.Refused != "" {
		r.OK, r.Result, r.Error = false, admin.ResultRefused, step.Refused
	} else if err := p.a.Reload(ctx); err != nil {
		r.OK, r.Result, r.Error = false, admin.ResultFailed, err.Error()
		var re *assembly.ReloadError
		if errors.As(err, &re) && re.Refused {
			r.Result = admin.ResultRefused
		}
	}
	p.a.Reloads.Record(r)
	p.record("reload", r.Result, by, r.Error)
	if r.OK {
		p.log.Info("configuration reloaded: new logins use it; open sessions go on as they started", "by", by, "config", p.o.ConfigPath)
	} else {
		p.log.Error("configuration not reloaded: nothing changed", "by", by, "result", r.Result, "problems", r.Error)
	}
	return r
}

// upgrade starts a new process that takes the sockets over (on the loop);
// upgraded hears how it went.
func (p *process) upgrade(by string) admin.Upgrade {
	u := admin.Upgrade{At: time.Now().UTC(), By: by, Result: admin.ResultStarted}
	if step := p.on(EvUpgrade, by); step.Refused != "" {
		u.Result, u.Error = admin.ResultRefused, step.Refused
		p.setUpgrade(u)
		return u
	}
	ours, theirs, err := socketPair()
	if err == nil {
		err = p.upg.Fds.AddFile(handoverFile, theirs)
		theirs.Close()
		if err != nil {
			ours.Close()
		}
	}
	if err != nil {
		p.upgraded(by, fmt.Errorf("upgrade: %w", err))
		u.Result, u.Error = admin.ResultFailed, err.Error()
		return u
	}
	p.succ = newSuccessor(ours, p.log)
	go p.succ.run(p.a, p.started)
	p.setUpgrade(u)
	p.log.Info("upgrade: starting the new binary; it takes the listening sockets over once ready", "by", by)
	go func() {
		err := p.upg.Upgrade()
		p.do(func() { p.upgraded(by, err) })
	}()
	return u
}

// setUpgrade records an upgrade's state: the status, the metrics, the
// audit trail.
func (p *process) setUpgrade(u admin.Upgrade) {
	p.mu.Lock()
	p.lastUpgrade = &u
	p.mu.Unlock()
	p.metrics.upgrades.WithLabelValues(u.Result).Inc()
	p.record("upgrade", u.Result, u.By, u.Error)
}

// upgraded takes the outcome of an upgrade (on the loop).
func (p *process) upgraded(by string, err error) {
	u := admin.Upgrade{At: time.Now().UTC(), By: by, Result: admin.ResultOK}
	if err != nil {
		u.Result, u.Error = admin.ResultFailed, err.Error()
		if p.succ != nil {
			p.succ.close()
		}
		p.setUpgrade(u)
		p.log.Error("upgrade failed: this process goes on serving", "err", err)
		p.on(EvUpgradeFailed, by)
		return
	}
	_, u.PID = p.succ.tookOver()
	p.setUpgrade(u)
	p.log.Info("upgrade: the new process serves the gateway now", "pid", u.PID)
	if err := sdNotify(fmt.Sprintf("MAINPID=%d", u.PID)); err != nil {
		p.log.Warn("systemd notify", "err", err)
	}
	p.on(EvUpgradeOK, by)
}

// resume takes the gateway's place back if the failed upgrade's process
// had taken it.
func (p *process) resume() {
	s := p.succ
	p.succ = nil
	if s == nil {
		return
	}
	s.close()
	<-s.done // HandOver, if it started, is over
	if took, pid := s.tookOver(); took {
		ctx, cancel := context.WithTimeout(context.Background(), takeoverTimeout)
		defer cancel()
		if err := p.a.Resume(ctx); err != nil {
			p.log.Error("upgrade: taking the gateway's place back from the failed process", "pid", pid, "err", err)
			return
		}
		p.log.Info("upgrade: took the gateway's place back (gossip member, audit spool, session counts)", "failed_pid", pid)
	}
}

// record audits a change (type admin, the admin as user).
func (p *process) record(what, result, by, problems string) {
	e := audit.Event{Type: audit.TypeAdmin, Gateway: p.a.Config().Gateway.Name, User: by, Result: audit.ResultOK, Reason: what}
	switch result {
	case admin.ResultFailed:
		e.Result = audit.ResultFail
	case admin.ResultRefused:
		e.Result = audit.ResultDenied
	case admin.ResultStarted:
		e.Reason += " started"
	}
	if problems != "" {
		e.Reason += ": " + strings.ReplaceAll(problems, "\n", "; ")
	}
	p.a.Audit.Record(e)
}

// Processes are this gateway's processes for the status: this one and,
// after an upgrade, the previous one while it drains
// (assembly.ProcessReporter).
func (p *process) Processes() []admin.Process {
	p.mu.Lock()
	me := admin.Process{PID: os.Getpid(), Started: p.started.UTC(), State: admin.ProcessServing, Sessions: p.a.SSH.SessionCount()}
	switch p.m.State {
	case Upgrading:
		me.State = admin.ProcessUpgrading
	case Draining, Stopped:
		me.State = admin.ProcessDraining
	}
	if p.drainDeadline != (time.Time{}) {
		me.DrainDeadline = p.drainDeadline
	}
	p.mu.Unlock()
	out := []admin.Process{me}
	if p.pred != nil {
		if pid, started, deadline, ok := p.pred.status(); ok {
			out = append(out, admin.Process{PID: pid, Started: started, State: admin.ProcessDraining,
				Sessions: p.a.Router.InheritedTotal(), DrainDeadline: deadline})
		}
	}
	return out
}

// LastUpgrade is the status's last upgrade (assembly.UpgradeReporter).
func (p *process) LastUpgrade() (admin.Upgrade, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastUpgrade == nil {
		return admin.Upgrade{}, false
	}
	return *p.lastUpgrade, true
}

// Reload is POST /v1/reload: the reload runs on the loop.
func (p *process) Reload(ctx context.Context, by string) admin.Reload {
	res := make(chan admin.Reload, 1)
	if !p.do(func() { res <- p.reload(ctx, by) }) {
		return admin.Reload{At: time.Now().UTC(), By: by, Result: admin.ResultRefused, Error: "the process is exiting"}
	}
	select {
	case r := <-res:
		return r
	case <-ctx.Done():
		return admin.Reload{At: time.Now().UTC(), By: by, Result: admin.ResultFailed,
			Error: "no answer in time; the outcome will be in GET /v1/status and the log"}
	}
}

// Upgrade is POST /v1/upgrade: it starts one and returns.
func (p *process) Upgrade(by string) admin.Upgrade {
	res := make(chan admin.Upgrade, 1)
	if !p.do(func() { res <- p.upgrade(by) }) {
		return admin.Upgrade{At: time.Now().UTC(), By: by, Result: admin.ResultRefused, Error: "the process is exiting"}
	}
	return <-res
}

// version is the binary's module version, or its VCS revision.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return bi.Main.Version
}

// metrics are the process's: changes by result, and the drain.
type metrics struct {
	upgrades *prometheus.CounterVec
	gauges   []prometheus.Collector
}

func newMetrics(p *process) *metrics {
	m := &metrics{
		upgrades: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_upgrades_total",
			Help: "Binary upgrades by result (started, ok, failed, refused)."}, []string{"result"}),
	}
	for _, r := range []string{admin.ResultStarted, admin.ResultOK, admin.ResultFailed, admin.ResultRefused} {
		m.upgrades.WithLabelValues(r)
	}
	m.gauges = []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "frontdoor_draining",
			Help: "1 while this process drains: it takes no new logins and relays its sessions until they end or gateway.drain_timeout."},
			func() float64 {
				p.mu.Lock()
				defer p.mu.Unlock()
				if p.m.State == Draining {
					return 1
				}
				return 0
			}),
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.upgrades}, m.gauges...)
}

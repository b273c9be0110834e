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
// process shows of them: GET /v1/status (admin.Status), the metrics, the
// log and the audit trail (type admin, the admin as its user).

var _ admin.Lifecycle = (*process)(nil)

// Change results.
const (
	resultOK      = "ok"
	resultFailed  = "failed"
	resultRefused = "refused"
	resultStarted = "started"
)

// reload re-reads the configuration (on the loop).
func (p *process) reload(ctx context.Context, by string) admin.Change {
	c := admin.Change{Time: time.Now().UTC(), By: by, Result: resultOK}
	if step := p.on(EvReload, by); step.Refused != "" {
		c.Result, c.Errors = resultRefused, []string{step.Refused}
	} else if err := p.a.Reload(ctx); err != nil {
		var re *assembly.ReloadError
		c.Result, c.Errors = resultFailed, []string{err.Error()}
		if errors.As(err, &re) {
			c.Errors = re.Problems
			if re.Refused {
				c.Result = resultRefused
			}
		}
	}
	p.mu.Lock()
	p.lastReload = &c
	p.reloads[c.Result]++
	p.mu.Unlock()
	p.metrics.reloads.WithLabelValues(c.Result).Inc()
	p.record("reload", c)
	if c.Result == resultOK {
		p.log.Info("configuration reloaded: new logins use it; open sessions go on as they started", "by", by, "config", p.o.ConfigPath)
	} else {
		p.log.Error("configuration not reloaded: nothing changed", "by", by, "result", c.Result, "problems", strings.Join(c.Errors, "\n"))
	}
	return c
}

// upgrade starts a new process that takes the sockets over (on the loop);
// upgraded hears how it went.
func (p *process) upgrade(by string) admin.Change {
	c := admin.Change{Time: time.Now().UTC(), By: by, Result: resultStarted}
	if step := p.on(EvUpgrade, by); step.Refused != "" {
		c.Result, c.Errors = resultRefused, []string{step.Refused}
		p.metrics.upgrades.WithLabelValues(c.Result).Inc()
		p.record("upgrade", c)
		return c
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
		c.Result, c.Errors = resultFailed, []string{err.Error()}
		return c
	}
	p.succ = newSuccessor(ours, p.log)
	go p.succ.run(p.a)
	p.mu.Lock()
	p.lastUpgrade = &c
	p.mu.Unlock()
	p.metrics.upgrades.WithLabelValues(c.Result).Inc()
	p.log.Info("upgrade: starting the new binary; it takes the listening sockets over once ready", "by", by)
	go func() {
		err := p.upg.Upgrade()
		p.do(func() { p.upgraded(by, err) })
	}()
	return c
}

// upgraded takes the outcome of an upgrade (on the loop).
func (p *process) upgraded(by string, err error) {
	c := admin.Change{Time: time.Now().UTC(), By: by, Result: resultOK}
	if err != nil {
		c.Result, c.Errors = resultFailed, []string{err.Error()}
		if p.succ != nil {
			p.succ.close()
		}
		p.mu.Lock()
		p.lastUpgrade = &c
		p.mu.Unlock()
		p.log.Error("upgrade failed: this process goes on serving", "err", err)
		p.on(EvUpgradeFailed, by)
	} else {
		_, c.PID = p.succ.tookOver()
		p.mu.Lock()
		p.lastUpgrade = &c
		p.mu.Unlock()
		p.log.Info("upgrade: the new process serves the gateway now", "pid", c.PID)
		if err := sdNotify(fmt.Sprintf("MAINPID=%d", c.PID)); err != nil {
			p.log.Warn("systemd notify", "err", err)
		}
		p.on(EvUpgradeOK, by)
	}
	p.metrics.upgrades.WithLabelValues(c.Result).Inc()
	p.record("upgrade", c)
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

// record audits a change.
func (p *process) record(what string, c admin.Change) {
	e := audit.Event{Type: audit.TypeAdmin, Gateway: p.a.Config().Gateway.Name, User: c.By, Result: "ok", Reason: what}
	switch c.Result {
	case resultFailed:
		e.Result = "fail"
	case resultRefused:
		e.Result = "denied"
	case resultStarted:
		e.Reason += " started"
	}
	if len(c.Errors) > 0 {
		e.Reason += ": " + strings.Join(c.Errors, "; ")
	}
	p.a.Audit.Record(e)
}

// Status is GET /v1/status.
func (p *process) Status() admin.Status { return p.status() }

func (p *process) status() admin.Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := admin.Status{Gateway: p.a.Config().Gateway.Name, PID: os.Getpid(), Version: version(), Started: p.started.UTC(),
		Config: p.o.ConfigPath, State: string(p.m.State), Sessions: p.a.SSH.SessionCount(), Reloads: map[string]int{},
		LastReload: copyChange(p.lastReload), LastUpgrade: copyChange(p.lastUpgrade)}
	for k, v := range p.reloads {
		st.Reloads[k] = v
	}
	if p.drain != nil {
		d := *p.drain
		st.Drain = &d
	}
	if p.pred != nil {
		if pid, deadline, ok := p.pred.status(); ok {
			st.Previous = &admin.Previous{PID: pid, Sessions: p.a.Router.InheritedTotal(), Deadline: deadline}
		}
	}
	return st
}

// Reload is POST /v1/reload: the reload runs on the loop.
func (p *process) Reload(ctx context.Context, by string) admin.Change {
	res := make(chan admin.Change, 1)
	if !p.do(func() { res <- p.reload(ctx, by) }) {
		return admin.Change{Time: time.Now().UTC(), By: by, Result: resultRefused, Errors: []string{"the process is exiting"}}
	}
	select {
	case c := <-res:
		return c
	case <-ctx.Done():
		return admin.Change{Time: time.Now().UTC(), By: by, Result: resultFailed,
			Errors: []string{"no answer in time; the outcome will be in GET /v1/status and the log"}}
	}
}

// Upgrade is POST /v1/upgrade: it starts one and returns.
func (p *process) Upgrade(by string) admin.Change {
	res := make(chan admin.Change, 1)
	if !p.do(func() { res <- p.upgrade(by) }) {
		return admin.Change{Time: time.Now().UTC(), By: by, Result: resultRefused, Errors: []string{"the process is exiting"}}
	}
	return <-res
}

func copyChange(c *admin.Change) *admin.Change {
	if c == nil {
		return nil
	}
	d := *c
	d.Errors = append([]string(nil), c.Errors...)
	return &d
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
	reloads  *prometheus.CounterVec
	upgrades *prometheus.CounterVec
	gauges   []prometheus.Collector
}

func newMetrics(p *process) *metrics {
	m := &metrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_reloads_total",
			Help: "Configuration reloads by result (ok; failed: the file or a file it names is invalid; refused: it changes keys only an upgrade applies, or the process cannot reload now)."}, []string{"result"}),
		upgrades: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_upgrades_total",
			Help: "Binary upgrades by result (started, ok, failed, refused)."}, []string{"result"}),
	}
	for _, r := range []string{resultOK, resultFailed, resultRefused} {
		m.reloads.WithLabelValues(r)
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
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "frontdoor_previous_process_sessions",
			Help: "Sessions the previous process of this gateway still relays after an upgrade; they count toward caps and node load here."},
			func() float64 {
				if p.a == nil || p.a.Router == nil {
					return 0
				}
				return float64(p.a.Router.InheritedTotal())
			}),
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.reloads, m.upgrades}, m.gauges...)
}

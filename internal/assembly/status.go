package assembly

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
)

// The status (GET /v1/status, the status page) of a gateway process. Parts
// built by other code plug in through Reporters without touching the
// admin package or the page: the process lifecycle (reload, upgrade)
// reports the last reload and the processes of this gateway, the
// maintenance code the drains with a deadline.

// Reporters fill the parts of the status that this package does not own.
// Each may be nil: then the status says what the assembly knows by itself.
// Set them before Run.
type Reporters struct {
	// Reload tells how the last reload went (default: Gateway.Reloads,
	// which the reload code fills by calling Record).
	Reload ReloadReporter
	// Drains lists drains with their deadline and message; they replace
	// the plain drains the node view shows for the same nodes.
	Drains DrainReporter
	// Processes lists this gateway's processes (default: this one).
	Processes ProcessReporter
}

// ReloadReporter tells the last reload's result; false before the first.
type ReloadReporter interface {
	LastReload() (admin.Reload, bool)
}

// DrainReporter lists the nodes drained with a deadline or a message.
type DrainReporter interface {
	Drains() []admin.Drain
}

// ProcessReporter lists the processes of this gateway: during an upgrade,
// the old one still serving its sessions, and the new one.
type ProcessReporter interface {
	Processes() []admin.Process
}

// Status is the whole status as this gateway sees it now.
func (a *Gateway) Status(_ context.Context) admin.Status {
	now := time.Now()
	nodes := a.Nodes()
	st := admin.Status{Gateway: a.Config.Gateway.Name, Now: now, Nodes: nodes, Gateways: a.gateways(),
		Drains: a.drains(nodes), Refusals: a.refusals.summary(now)}
	if p := a.Report.Processes; p != nil {
		st.Processes = p.Processes()
	} else {
		st.Processes = []admin.Process{{PID: os.Getpid(), Started: a.started, State: admin.ProcessServing, Sessions: len(a.SSH.Sessions())}}
	}
	var rr ReloadReporter = a.Reloads
	if a.Report.Reload != nil {
		rr = a.Report.Reload
	}
	if r, ok := rr.LastReload(); ok {
		st.LastReload = &r
	}
	return st
}

// gateways are the cluster's live gateways with the sessions each
// gossips, or this one alone.
func (a *Gateway) gateways() []admin.GatewayInfo {
	if a.Cluster == nil {
		return []admin.GatewayInfo{{Name: a.Config.Gateway.Name, Sessions: len(a.SSH.Sessions()), Self: true}}
	}
	sessions := map[string]int{}
	for _, s := range a.Cluster.Sessions() {
		sessions[s.Gateway] += s.N
	}
	self := a.Cluster.Name()
	var out []admin.GatewayInfo
	for _, m := range a.Cluster.Members() {
		if m.Role == cluster.RoleGateway {
			out = append(out, admin.GatewayInfo{Name: m.Name, Addr: m.Addr, Sessions: sessions[m.Name], Self: m.Name == self})
		}
	}
	if !slices.ContainsFunc(out, func(g admin.GatewayInfo) bool { return g.Self }) {
		out = append(out, admin.GatewayInfo{Name: self, Addr: a.Cluster.LocalAddr(), Sessions: sessions[self], Self: true})
	}
	slices.SortFunc(out, func(x, y admin.GatewayInfo) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// drains are the draining nodes of the view, with what the drain
// reporter knows about them (deadline, message, who).
func (a *Gateway) drains(nodes []admin.NodeInfo) []admin.Drain {
	byNode := map[string]admin.Drain{}
	sessions := map[string]int{}
	for _, n := range nodes {
		sessions[n.Name] = n.Sessions
		if n.Draining {
			byNode[n.Name] = admin.Drain{Node: n.Name, Sessions: n.Sessions}
		}
	}
	if a.Report.Drains != nil {
		for _, d := range a.Report.Drains.Drains() {
			if d.Sessions == 0 {
				d.Sessions = sessions[d.Node]
			}
			byNode[d.Node] = d
		}
	}
	out := make([]admin.Drain, 0, len(byNode))
	for _, d := range byNode {
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y admin.Drain) int { return strings.Compare(x.Node, y.Node) })
	return out
}

// ReloadLog keeps the last reload's result and counts reloads by result
// (frontdoor_reloads_total). The reload code calls Record once per
// reload; the status and the metrics read it.
type ReloadLog struct {
	total *prometheus.CounterVec
	last  prometheus.Gauge // 1 if the last reload worked, 0 if it failed
	at    *prometheus.GaugeVec

	mu sync.Mutex // mu protects the following
	r  admin.Reload
	ok bool
}

func newReloadLog() *ReloadLog {
	return &ReloadLog{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_reloads_total",
			Help: "Configuration reloads by result (ok, failed: the new configuration was invalid and nothing changed)."}, []string{"result"}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_reload_last_success",
			Help: "1 if the last configuration reload worked (or none happened), 0 if it failed: the running configuration is not the file's."}),
		at: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "frontdoor_reload_last_timestamp_seconds",
			Help: "When the last configuration reload with this result happened (Unix time)."}, []string{"result"}),
	}
}

// Record notes one reload's result.
func (l *ReloadLog) Record(r admin.Reload) {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	result := "ok"
	if !r.OK {
		result = "failed"
	}
	l.total.WithLabelValues(result).Inc()
	l.at.WithLabelValues(result).Set(float64(r.At.UnixMilli()) / 1e3)
	l.last.Set(map[bool]float64{true: 1, false: 0}[r.OK])
	l.mu.Lock()
	defer l.mu.Unlock()
	l.r, l.ok = r, true
}

// LastReload is the last recorded reload (ReloadReporter).
func (l *ReloadLog) LastReload() (admin.Reload, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r, l.ok
}

func (l *ReloadLog) collectors() []prometheus.Collector {
	l.last.Set(1) // no reload yet: the configuration is the file's
	for _, r := range []string{"ok", "failed"} {
		l.total.WithLabelValues(r) // present at 0, so increase() works from the first
	}
	return []prometheus.Collector{l.total, l.last, l.at}
}

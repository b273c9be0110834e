package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the gateway's Prometheus metrics, in a registry of its own so
// that several gateways can live in one test process.
type metrics struct {
	reg             *prometheus.Registry
	connections     prometheus.Counter
	refused         *prometheus.CounterVec
	sessions        prometheus.Gauge
	sessionsTotal   *prometheus.CounterVec
	auth            *prometheus.CounterVec
	backendFailures *prometheus.CounterVec
	bytes           *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		connections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "frontdoor_connections_total", Help: "Client TCP connections accepted."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_connections_refused_total", Help: "Client connections refused before authentication, by reason (proxy_protocol, max_connections, max_startups, per_source_max_startups, per_source_rate)."}, []string{"reason"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "frontdoor_sessions", Help: "Relayed SSH connections open now."}),
		sessionsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_sessions_total", Help: "Relayed SSH connections started, by login node."}, []string{"node"}),
		auth: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_auth_attempts_total", Help: "Authentication attempts by method and result."}, []string{"method", "result"}),
		backendFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_backend_failures_total", Help: "Failed logins to login nodes, by node and stage."}, []string{"node", "stage"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_relayed_bytes_total", Help: "Bytes relayed in finished sessions (up: client to node)."}, []string{"direction"}),
	}
	m.reg.MustRegister(m.connections, m.refused, m.sessions, m.sessionsTotal, m.auth, m.backendFailures, m.bytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// unauthenticated exports the number of connections that have not
// authenticated yet.
func (m *metrics) unauthenticated(f func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "frontdoor_unauthenticated_connections", Help: "Client connections admitted that have not authenticated yet."},
		func() float64 { return float64(f()) }))
}

// gossipRefusals exports the gossip entries the cluster refused, by
// reason (a rogue or misconfigured member shows here first).
func (m *metrics) gossipRefusals(f func() map[string]uint64) {
	m.reg.MustRegister(&refusalCollector{f: f, desc: prometheus.NewDesc("frontdoor_gossip_refused_total",
		"Gossiped entries refused: unsigned or wrongly signed health, a node not in the inventory, an address or pool claim that does not match it, impossible health figures, unsealed gateway state, versions ahead of the clock.",
		[]string{"reason"}, nil)})
}

// nodeWarnings exports what the login nodes' agents warn about (a fixed
// vocabulary, e.g. sshd_penalty_not_exempt), one series per node and
// warning, for alerting.
func (m *metrics) nodeWarnings(f func() map[string][]string) {
	m.reg.MustRegister(&warningCollector{f: f, desc: prometheus.NewDesc("frontdoor_node_warning",
		"A login node's agent warns about its node (1 while it does): sshd_penalty_not_exempt (sshd >= 9.8 penalises sources and does not exempt every gateway), sshd_check_failed.",
		[]string{"node", "warning"}, nil)})
}

type warningCollector struct {
	f    func() map[string][]string
	desc *prometheus.Desc
}

func (w *warningCollector) Describe(ch chan<- *prometheus.Desc) { ch <- w.desc }
func (w *warningCollector) Collect(ch chan<- prometheus.Metric) {
	for node, ws := range w.f() {
		for _, warning := range ws {
			ch <- prometheus.MustNewConstMetric(w.desc, prometheus.GaugeValue, 1, node, warning)
		}
	}
}

type refusalCollector struct {
	f    func() map[string]uint64
	desc *prometheus.Desc
}

func (r *refusalCollector) Describe(ch chan<- *prometheus.Desc) { ch <- r.desc }
func (r *refusalCollector) Collect(ch chan<- prometheus.Metric) {
	for reason, n := range r.f() {
		ch <- prometheus.MustNewConstMetric(r.desc, prometheus.CounterValue, float64(n), reason)
	}
}

// Registry exposes the gateway's metrics for the admin HTTP server.
func (g *Gateway) Registry() *prometheus.Registry { return g.metrics.reg }

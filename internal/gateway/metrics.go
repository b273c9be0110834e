package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus metrics. They are registered by
// whoever serves them (internal/assembly), in a registry per gateway so
// that several gateways can live in one test process.
type metrics struct {
	collectors      []prometheus.Collector
	connections     prometheus.Counter
	refused         *prometheus.CounterVec
	limited         *prometheus.CounterVec
	lookupSeconds   prometheus.Histogram
	sessions        prometheus.Gauge
	sessionsTotal   *prometheus.CounterVec
	auth            *prometheus.CounterVec
	backendFailures *prometheus.CounterVec
	bytes           *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		connections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "frontdoor_connections_total", Help: "Client TCP connections accepted."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_connections_refused_total", Help: "Client connections refused before authentication, by reason (proxy_protocol, max_connections, max_startups, per_source_max_startups, per_source_rate)."}, []string{"reason"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_preauth_limited_total", Help: "Requests of unauthenticated clients refused by a limit, by reason (kex: too many key exchanges; lookup_rate, lookup_queue: directory lookups; lookup_late: a key refused unseen because the directory had not answered by key_refusal_delay)."}, []string{"reason"}),
		lookupSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "frontdoor_directory_lookup_seconds", Help: "Directory lookups for clients before proof, from the lookup gate's grant to the answer: keep gateway.key_refusal_delay above its tail.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
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
	m.collectors = []prometheus.Collector{m.connections, m.refused, m.limited, m.lookupSeconds, m.sessions, m.sessionsTotal, m.auth, m.backendFailures, m.bytes}
	return m
}

// admission exports the number of connections that have not
// authenticated yet, and of those waiting for an admission place.
func (m *metrics) admission(a *admission) {
	m.collectors = append(m.collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "frontdoor_unauthenticated_connections", Help: "Client connections admitted that have not authenticated yet."},
		func() float64 { return float64(a.unauthenticated()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "frontdoor_admission_waiting", Help: "Client connections waiting for one of the max_startups places (at most max_startups_queue)."},
			func() float64 { return float64(a.waiting()) }))
}

package discovery

import "github.com/prometheus/client_golang/prometheus"

// metrics say whether discovery is keeping up; a gateway registers them
// in its own registry (Collectors).
type metrics struct {
	lastSuccess prometheus.Gauge
	errors      *prometheus.CounterVec
	nodes       *prometheus.GaugeVec
}

// statuses are always exported (0 when absent), so a dashboard sees a
// node leave Running as one series dropping and another rising.
var statuses = []string{"Running", "Pending", "SystemUpdating", "DeepHealthCheckInProgress", "ShuttingDown", "Failure", "NotFound"}

func newMetrics() *metrics {
	m := &metrics{
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "frontdoor_discovery_last_success_timestamp_seconds",
			Help: "Unix time of the last successful HyperPod discovery refresh."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_discovery_errors_total",
			Help: "Failed discovery calls after the SDK's retries, by operation (list: the whole refresh failed and the last good list is kept; describe: one new node waits)."},
			[]string{"op"}),
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "frontdoor_discovery_nodes",
			Help: "Login nodes discovery found in the last good refresh, by HyperPod status and eligibility."},
			[]string{"status", "eligible"}),
	}
	m.errors.WithLabelValues("list")
	m.errors.WithLabelValues("describe")
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.lastSuccess, m.errors, m.nodes}
}

func (m *metrics) setNodes(nodes []Node) {
	m.nodes.Reset()
	for _, st := range statuses {
		m.nodes.WithLabelValues(st, "false")
	}
	m.nodes.WithLabelValues("Running", "true")
	for _, n := range nodes {
		el := "false"
		if n.Eligible {
			el = "true"
		}
		m.nodes.WithLabelValues(n.Status, el).Inc()
	}
}

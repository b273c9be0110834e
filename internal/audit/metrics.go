package audit

import "github.com/prometheus/client_golang/prometheus"

// metrics say whether audit events reach their destinations; a gateway
// registers them in its own registry (Logger.Collectors).
type metrics struct {
	dropped     *prometheus.CounterVec
	writeErrors *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_audit_dropped_events_total",
			Help: "Audit events a destination (file, s3) never got, by class (authenticated: sessions, admin, logins; unauthenticated: failed auth) and reason (queue_full: its writer is stalled; closed). Alert on class=authenticated."},
			[]string{"output", "class", "reason"}),
		writeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_audit_write_errors_total",
			Help: "Failed writes to the audit file (each loses the batch of events it held)."}, []string{"output"}),
	}
	for _, c := range Classes {
		m.dropped.WithLabelValues("file", c.String(), "queue_full")
	}
	m.writeErrors.WithLabelValues("file")
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.dropped, m.writeErrors}
}

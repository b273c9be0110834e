package s3sink

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// metrics say whether audit records are reaching the bucket; a gateway
// registers them in its own registry (Collectors).
type metrics struct {
	spoolBytes     prometheus.Gauge
	spoolBatches   prometheus.Gauge
	full           prometheus.Gauge
	dropped        *prometheus.CounterVec
	conflicts      prometheus.Counter
	uploads        *prometheus.CounterVec
	uploadedEvents prometheus.Counter
	lastUpload     prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		spoolBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_audit_s3_spool_bytes",
			Help: "Bytes of audit batches in the local spool, not yet in S3."}),
		spoolBatches: prometheus.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_audit_s3_spool_batches",
			Help: "Closed audit batches in the local spool waiting for upload."}),
		full: prometheus.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_audit_s3_spool_full",
			Help: "1 while the spool is full and new authenticated audit events (sessions, admin, logins) are being DROPPED; alert on it."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_audit_s3_dropped_events_total",
			Help: "Audit events that will never reach S3, by reason (spool_full, shed, write_error, truncated, marshal, closed, corrupt, conflict) and class (authenticated; unauthenticated: failed auth, shed first)."},
			[]string{"reason", "class"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "frontdoor_audit_s3_conflicts_total",
			Help: "Batches not uploaded because their key already held a different object (kept in the spool as *.conflict); investigate every one."}),
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_audit_s3_uploads_total",
			Help: "Batch uploads by result (error: retried later with backoff)."}, []string{"result"}),
		uploadedEvents: prometheus.NewCounter(prometheus.CounterOpts{Name: "frontdoor_audit_s3_uploaded_events_total",
			Help: "Audit events in batches uploaded to S3."}),
		lastUpload: prometheus.NewGauge(prometheus.GaugeOpts{Name: "frontdoor_audit_s3_last_upload_timestamp_seconds",
			Help: "Unix time of the last successful batch upload."}),
	}
	for _, r := range []string{"spool_full", "shed", "write_error", "truncated"} {
		for _, c := range audit.Classes {
			m.dropped.WithLabelValues(r, c.String())
		}
	}
	m.uploads.WithLabelValues("ok")
	m.uploads.WithLabelValues("error")
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.spoolBytes, m.spoolBatches, m.full, m.dropped, m.conflicts, m.uploads, m.uploadedEvents, m.lastUpload}
}

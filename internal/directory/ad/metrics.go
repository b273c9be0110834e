package ad

import "github.com/prometheus/client_golang/prometheus"

// metrics say whether the directory watch keeps the identity cache in step
// with AD; a gateway registers them in its own registry (Collectors).
type metrics struct {
	invalidations *prometheus.CounterVec
	flushes       *prometheus.CounterVec
	watchErrors   *prometheus.CounterVec
	watchUSN      prometheus.Gauge
	prefetched    *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		invalidations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_ad_cache_invalidations_total",
			Help: "Cached AD identities dropped because the directory changed, by cause (user_changed, user_deleted, group_changed; handover_unvouched: handed over by the previous process and not vouched for by the watch; or the cause of a whole-cache flush)."},
			[]string{"cause"}),
		flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_ad_cache_flushes_total",
			Help: "Whole-cache drops by the directory watch, by cause (watch_started, dc_changed, usn_went_back, too_many_changes, change_search_failed)."},
			[]string{"cause"}),
		watchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_ad_watch_errors_total",
			Help: "Failed directory-watch requests, by operation (read: the rootDSE's highestCommittedUSN; search: the changed entries)."},
			[]string{"op"}),
		watchUSN: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "frontdoor_ad_watch_usn",
			Help: "The watched DC's highestCommittedUSN up to which changes have reached the identity cache (it stops moving while the watch fails)."}),
		prefetched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdoor_ad_prefetch_lookups_total",
			Help: "Background lookups that keep the identity cache warm for the users the policy names (prefetch_interval), by result (ok, fresh: already cached, refused: no such or disabled account, error)."},
			[]string{"result"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.invalidations, m.flushes, m.watchErrors, m.watchUSN, m.prefetched}
}

// Collectors are the directory's Prometheus metrics, for the gateway's
// registry.
func (d *Directory) Collectors() []prometheus.Collector { return d.metrics.collectors() }

package cluster

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the cluster's metrics: the gossiped entries it refused,
// by reason (a rogue or misconfigured member shows here first), and what
// the login nodes' agents warn about (a fixed vocabulary, one series per
// node and warning, for alerting).
func (c *Cluster) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		&refusalCollector{c: c, desc: prometheus.NewDesc("frontdoor_gossip_refused_total",
			"Gossiped entries refused: unsigned or wrongly signed health, a node not in the inventory, an address or pool claim that does not match it, impossible health figures, unsealed gateway state, versions ahead of the clock.",
			[]string{"reason"}, nil)},
		&warningCollector{c: c, desc: prometheus.NewDesc("frontdoor_node_warning",
			"A login node's agent warns about its node (1 while it does): sshd_penalty_not_exempt (sshd >= 9.8 penalises sources and does not exempt every gateway), sshd_check_failed.",
			[]string{"node", "warning"}, nil)},
	}
}

type warningCollector struct {
	c    *Cluster
	desc *prometheus.Desc
}

func (w *warningCollector) Describe(ch chan<- *prometheus.Desc) { ch <- w.desc }
func (w *warningCollector) Collect(ch chan<- prometheus.Metric) {
	for node, ws := range w.c.NodeWarnings() {
		for _, warning := range ws {
			ch <- prometheus.MustNewConstMetric(w.desc, prometheus.GaugeValue, 1, node, warning)
		}
	}
}

type refusalCollector struct {
	c    *Cluster
	desc *prometheus.Desc
}

func (r *refusalCollector) Describe(ch chan<- *prometheus.Desc) { ch <- r.desc }
func (r *refusalCollector) Collect(ch chan<- prometheus.Metric) {
	for reason, n := range r.c.Refusals() {
		ch <- prometheus.MustNewConstMetric(r.desc, prometheus.CounterValue, float64(n), reason)
	}
}

package cluster

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the cluster's metrics: the gossiped entries it refused,
// by reason (a rogue or misconfigured member shows here first).
func (c *Cluster) Collectors() []prometheus.Collector {
	return []prometheus.Collector{&refusalCollector{c: c, desc: prometheus.NewDesc("frontdoor_gossip_refused_total",
		"Gossiped entries refused: unsigned or wrongly signed health, a node not in the inventory, an address or pool claim that does not match it, unsealed gateway state, versions ahead of the clock.",
		[]string{"reason"}, nil)}}
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

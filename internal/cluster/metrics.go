package cluster

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the cluster's metrics: the gossiped entries it refused,
// by reason (a rogue or misconfigured member shows here first), what the
// login nodes' agents warn about (a fixed vocabulary, one series per node
// and warning, for alerting), and how many gateways this one counts alive:
// each side of a partition counts only its own, which is how an operator
// tells a split pool from a dead gateway.
func (c *Cluster) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "frontdoor_gossip_gateways",
			Help: "Gateways this gateway counts alive in the gateways' pool, itself included (fewer than deployed: a gateway is down or the pool is split)."},
			func() float64 { return float64(len(c.Members())) }),
		&labelled{kind: prometheus.CounterValue, values: c.refusalCounts, desc: prometheus.NewDesc("frontdoor_gossip_refused_total",
			"Gossiped entries refused: unsigned or wrongly signed health, a node not in the inventory, an address or pool claim that does not match it, impossible health figures, unsealed gateway state, versions ahead of the clock, sealed state outside the replay window (clock_skew).",
			[]string{"reason"}, nil)},
		&labelled{kind: prometheus.GaugeValue, values: c.offsetSeconds, desc: prometheus.NewDesc("frontdoor_gossip_clock_offset_seconds",
			"How far a member's clock is ahead of this gateway's (negative: behind), from its last signed health or sealed message, the one-hop delay included. Beyond cluster.max_clock_skew its gateway state is refused while it is (frontdoor_gossip_refused_total{reason=\"clock_skew\"} and version_ahead).",
			[]string{"member"}, nil)},
		&warningCollector{c: c, desc: prometheus.NewDesc("frontdoor_node_warning",
			"A login node's agent warns about its node (1 while it does): sshd_penalty_not_exempt (sshd >= 9.8 penalises sources and does not exempt every gateway), sshd_check_failed.",
			[]string{"node", "warning"}, nil)},
		c.lockCollector(),
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

// labelled is one metric with one label, its values read at each scrape.
type labelled struct {
	desc   *prometheus.Desc
	kind   prometheus.ValueType
	values func() map[string]float64 // by label value
}

func (l *labelled) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }
func (l *labelled) Collect(ch chan<- prometheus.Metric) {
	for label, v := range l.values() {
		ch <- prometheus.MustNewConstMetric(l.desc, l.kind, v, label)
	}
}

// refusalCounts is Refusals as metric values.
func (c *Cluster) refusalCounts() map[string]float64 {
	out := map[string]float64{}
	for reason, n := range c.Refusals() {
		out[reason] = float64(n)
	}
	return out
}

// offsetSeconds is ClockOffsets in seconds.
func (c *Cluster) offsetSeconds() map[string]float64 {
	out := map[string]float64{}
	for member, off := range c.ClockOffsets() {
		out[member] = off.Seconds()
	}
	return out
}

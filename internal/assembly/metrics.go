package assembly

import (
	"os"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the process as a whole, for the alerts in
// deploy/prometheus/frontdoor-alerts.yml: sessions per process (an upgrade
// hands over from one process to the next, and both report), which nodes
// take logins, and the drains of the node view.

// statusCollectors are the assembly's own metrics.
func (a *Gateway) statusCollectors() []prometheus.Collector {
	pid := strconv.Itoa(os.Getpid())
	started := strconv.FormatInt(a.started.Unix(), 10)
	return append(a.Reloads.collectors(),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "frontdoor_process_sessions",
			Help:        "Relayed sessions this gateway process serves, labelled by its pid and start time (Unix seconds): during an upgrade the old process's count falls to 0 as the new one's grows.",
			ConstLabels: prometheus.Labels{"pid": pid, "start_time": started}},
			func() float64 { return float64(len(a.SSH.Sessions())) }),
		&drainCollector{a: a,
			taking:   prometheus.NewDesc("frontdoor_node_taking_logins", "1 for a login node that new logins may go to now (alive, sshd up, not draining, running), 0 otherwise.", []string{"node"}, nil),
			draining: prometheus.NewDesc("frontdoor_node_draining", "1 for a login node that takes no new sessions (drained by an admin or its agent).", []string{"node"}, nil),
			deadline: prometheus.NewDesc("frontdoor_node_drain_deadline_timestamp_seconds", "When a drained node's remaining sessions are closed (Unix time), for drains with a deadline.", []string{"node"}, nil),
		})
}

// drainCollector reports the node view's drains, and which nodes take
// logins, when scraped.
type drainCollector struct {
	a                          *Gateway
	taking, draining, deadline *prometheus.Desc
}

func (c *drainCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.taking
	ch <- c.draining
	ch <- c.deadline
}

func (c *drainCollector) Collect(ch chan<- prometheus.Metric) {
	nodes := c.a.Nodes()
	for _, n := range nodes {
		taking := n.NotTaking == "" && n.Alive && n.SSHDUp && !n.Draining
		ch <- prometheus.MustNewConstMetric(c.taking, prometheus.GaugeValue, map[bool]float64{true: 1, false: 0}[taking], n.Name)
		if n.NotTaking == "" {
			ch <- prometheus.MustNewConstMetric(c.draining, prometheus.GaugeValue, map[bool]float64{true: 1, false: 0}[n.Draining], n.Name)
		}
	}
	for _, d := range c.a.drains(nodes) {
		if !d.Deadline.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.deadline, prometheus.GaugeValue, float64(d.Deadline.Unix()), d.Node)
		}
	}
}

package assembly

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
)

// Recent refusals, by reason, for the status page. The parts already count
// what they refuse, as Prometheus counters with bounded labels: the SSH
// server (connections before authentication, failed and denied logins,
// login node failures) and the cluster (gossip entries). So the summary
// needs no hook in any of them: every refusalStep it reads those counters
// from the gateway's registry and keeps the increase, in a ring that
// covers refusalWindow. Memory is bounded by the ring's length times the
// counters' label sets (themselves bounded by their owners), and at most
// maxReasons reasons per step.

const (
	refusalWindow = 15 * time.Minute
	refusalStep   = 30 * time.Second
	maxReasons    = 64
)

// refusalCounters name the counters read, and how a sample becomes a
// reason ("" skips it).
var refusalCounters = map[string]func(labels map[string]string) string{
	"frontdoor_connections_refused_total": func(l map[string]string) string { return "connection:" + l["reason"] },
	"frontdoor_auth_attempts_total": func(l map[string]string) string {
		if l["result"] == "ok" {
			return ""
		}
		return "auth:" + l["method"] + ":" + l["result"]
	},
	"frontdoor_backend_failures_total": func(l map[string]string) string { return "backend:" + l["stage"] },
	"frontdoor_gossip_refused_total":   func(l map[string]string) string { return "gossip:" + l["reason"] },
}

// refusalTotals reads the cumulative refusal counts by reason.
func refusalTotals(g prometheus.Gatherer) map[string]float64 {
	out := map[string]float64{}
	mfs, _ := g.Gather() // a collector's error leaves the others' families
	for _, mf := range mfs {
		reason := refusalCounters[mf.GetName()]
		if reason == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if r := reason(labels); r != "" {
				out[r] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// recentRefusals is the ring of increases.
type recentRefusals struct {
	totals func() map[string]float64
	since  time.Time

	mu    sync.Mutex // mu protects the following
	last  map[string]float64
	steps []refusalStepCounts // oldest first, at most refusalWindow/refusalStep
}

type refusalStepCounts struct {
	at     time.Time
	counts map[string]int
}

func newRecentRefusals(totals func() map[string]float64, now time.Time) *recentRefusals {
	return &recentRefusals{totals: totals, since: now, last: totals()}
}

// increase is what happened since the last sample (a counter that went
// down was reset: all of its value is new).
func (r *recentRefusals) increase(now map[string]float64) map[string]int {
	out := map[string]int{}
	for reason, v := range now {
		d := v - r.last[reason]
		if d < 0 {
			d = v
		}
		if d > 0 {
			out[reason] = int(d)
		}
	}
	return capReasons(out)
}

// capReasons keeps the maxReasons largest counts and adds the rest up as
// "other".
func capReasons(m map[string]int) map[string]int {
	if len(m) <= maxReasons {
		return m
	}
	list := sortedCounts(m)
	out := map[string]int{}
	for i, rc := range list {
		if i < maxReasons-1 {
			out[rc.Reason] = rc.Count
		} else {
			out["other"] += rc.Count
		}
	}
	return out
}

// sample records the increase since the last sample.
func (r *recentRefusals) sample(now time.Time) {
	totals := r.totals()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, refusalStepCounts{at: now, counts: r.increase(totals)})
	if n := int(refusalWindow / refusalStep); len(r.steps) > n {
		r.steps = slices.Delete(r.steps, 0, len(r.steps)-n)
	}
	r.last = totals
}

// run samples every refusalStep until ctx ends.
func (r *recentRefusals) run(ctx context.Context) {
	t := time.NewTicker(refusalStep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.sample(now)
		}
	}
}

// summary is the refusals of the window up to now: the steps inside it
// and what happened since the last sample.
func (r *recentRefusals) summary(now time.Time) admin.Refusals {
	totals := r.totals()
	r.mu.Lock()
	defer r.mu.Unlock()
	sum := r.increase(totals)
	for _, s := range r.steps {
		if now.Sub(s.at) < refusalWindow {
			for reason, n := range s.counts {
				sum[reason] += n
			}
		}
	}
	out := admin.Refusals{WindowSeconds: int(refusalWindow / time.Second), Since: r.since, ByReason: sortedCounts(sum)}
	for _, rc := range out.ByReason {
		out.Total += rc.Count
	}
	return out
}

// sortedCounts lists counts highest first, then by reason.
func sortedCounts(m map[string]int) []admin.ReasonCount {
	out := make([]admin.ReasonCount, 0, len(m))
	for reason, n := range m {
		out = append(out, admin.ReasonCount{Reason: reason, Count: n})
	}
	slices.SortFunc(out, func(a, b admin.ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Reason, b.Reason))
	})
	return out
}

package assembly

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
)

// The recent refusals are the counters' increases inside the window:
// what happened before the process's summary began, or longer ago than
// the window, is not counted; a counter that went down was reset.
func TestRecentRefusals(t *testing.T) {
	totals := map[string]float64{"connection:max_startups": 5} // before the summary began
	r := newRecentRefusals(func() map[string]float64 {
		out := map[string]float64{}
		for k, v := range totals {
			out[k] = v
		}
		return out
	}, time.Unix(0, 0))
	t0 := time.Unix(1000, 0)
	want := func(now time.Time, total int, counts ...admin.ReasonCount) {
		t.Helper()
		got := r.summary(now)
		if got.Total != total || fmt.Sprint(got.ByReason) != fmt.Sprint(counts) || got.WindowSeconds != 900 {
			t.Fatalf("at +%s: %+v, want total %d %v", now.Sub(t0), got, total, counts)
		}
	}
	want(t0, 0)
	totals["connection:max_startups"], totals["auth:password:fail"] = 7, 3
	want(t0, 5, admin.ReasonCount{Reason: "auth:password:fail", Count: 3}, admin.ReasonCount{Reason: "connection:max_startups", Count: 2})
	r.sample(t0)
	totals["auth:password:fail"] = 4
	r.sample(t0.Add(refusalStep))
	want(t0.Add(refusalStep), 6, admin.ReasonCount{Reason: "auth:password:fail", Count: 4}, admin.ReasonCount{Reason: "connection:max_startups", Count: 2})
	// The first step leaves the window; the second not yet.
	want(t0.Add(refusalWindow), 1, admin.ReasonCount{Reason: "auth:password:fail", Count: 1})
	// A reset counter (a part rebuilt): its whole value is new.
	totals["auth:password:fail"] = 2
	want(t0.Add(refusalWindow), 3, admin.ReasonCount{Reason: "auth:password:fail", Count: 3})
	// The ring holds the window, no more, however long it runs.
	for i := range 1000 {
		r.sample(t0.Add(time.Duration(i+2) * refusalStep))
	}
	if n := len(r.steps); n != int(refusalWindow/refusalStep) {
		t.Fatalf("%d steps kept", n)
	}
}

// However many reasons the counters bring, a step keeps maxReasons.
func TestRecentRefusalsBounded(t *testing.T) {
	m := map[string]int{}
	for i := range 500 {
		m[fmt.Sprintf("gossip:r%03d", i)] = i + 1
	}
	c := capReasons(m)
	if len(c) != maxReasons || c["other"] == 0 || c["gossip:r499"] != 500 {
		t.Fatalf("%d reasons, other %d", len(c), c["other"])
	}
	sum := 0
	for _, n := range c {
		sum += n
	}
	if sum != 500*501/2 {
		t.Fatalf("capping lost counts: %d", sum)
	}
}

// The counters are read from a registry, by the labels their owners give.
func TestRefusalTotals(t *testing.T) {
	reg := prometheus.NewRegistry()
	auth := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_auth_attempts_total"}, []string{"method", "result"})
	be := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "frontdoor_backend_failures_total"}, []string{"node", "stage"})
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "frontdoor_connections_total"})
	reg.MustRegister(auth, be, other)
	auth.WithLabelValues("password", "fail").Add(2)
	auth.WithLabelValues("password", "ok").Add(9)
	auth.WithLabelValues("publickey", "denied").Inc()
	be.WithLabelValues("login1", "dial").Inc()
	be.WithLabelValues("login2", "dial").Inc()
	other.Add(100)
	got := fmt.Sprint(refusalTotals(reg))
	if want := "map[auth:password:fail:2 auth:publickey:denied:1 backend:dial:2]"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}

// The reload code records; the status and the metrics show it.
func TestReloadLog(t *testing.T) {
	l := newReloadLog()
	reg := prometheus.NewRegistry()
	reg.MustRegister(l.collectors()...)
	if _, ok := l.LastReload(); ok {
		t.Fatal("a last reload before any")
	}
	at := time.Unix(1700000000, 0)
	l.Record(admin.Reload{At: at, OK: false, By: "SIGHUP", Error: "gateway.yaml:3: policy.rules[0].pools: unknown pool"})
	r, ok := l.LastReload()
	if !ok || r.OK || r.By != "SIGHUP" || !r.At.Equal(at) {
		t.Fatalf("%+v %v", r, ok)
	}
	mfs, _ := reg.Gather()
	var b strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			fmt.Fprintf(&b, "%s{%s} %v\n", mf.GetName(), strings.Join(labels, ","), m.GetCounter().GetValue()+m.GetGauge().GetValue())
		}
	}
	for _, want := range []string{"frontdoor_reloads_total{result=failed} 1\n", "frontdoor_reloads_total{result=ok} 0\n",
		"frontdoor_reload_last_success{} 0\n", "frontdoor_reload_last_timestamp_seconds{result=failed} 1.7e+09\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
}

package ca

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// signSeconds is how long the CA key takes to sign one certificate: it is
// on every login's path (a KMS round trip for a remote key). It counts the
// signatures of every CA of the process: a CA is rebuilt on every reload,
// the histogram stays.
var signSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "frontdoor_user_ca_sign_seconds",
	Help:    "Time the user CA key took to sign one backend login certificate, by where the key lives (file, kms) and result (ok, error).",
	Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
}, []string{"key", "result"})

// Collectors are the CA's metrics, for the caller's registry. They may be
// registered in several registries (one per gateway in a test process).
func Collectors() []prometheus.Collector { return []prometheus.Collector{signSeconds} }

func observeSign(kind string, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	signSeconds.WithLabelValues(kind, result).Observe(d.Seconds())
}

// Package stats compares two samples of latencies: quantiles, and the
// two-sample Kolmogorov–Smirnov test of whether they come from one
// distribution. test/adversarial and authbench use it to show that the
// gateway's refusals take as long for a name that exists as for one that
// does not. No dependency on frontdoor's packages.
package stats

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Quantile is the q-quantile (0..1) of xs, nearest rank; 0 for none.
func Quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// KS is the two-sample Kolmogorov–Smirnov statistic: the largest
// difference between the empirical distribution functions of a and b
// (0: the same; 1: every value of one below every value of the other).
func KS(a, b []time.Duration) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 1
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	var i, j int
	d := 0.0
	for i < len(x) && j < len(y) {
		v := min(x[i], y[j])
		for i < len(x) && x[i] == v {
			i++
		}
		for j < len(y) && y[j] == v {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(x))-float64(j)/float64(len(y))))
	}
	return d
}

// KSCritical is the value of KS above which samples of sizes n and m come
// from different distributions at significance alpha (the asymptotic
// c(α)·√((n+m)/(n·m)), c(α) = √(−ln(α/2)/2)).
func KSCritical(n, m int, alpha float64) float64 {
	c := math.Sqrt(-math.Log(alpha/2) / 2)
	return c * math.Sqrt(float64(n+m)/float64(n*m))
}

// Summary is a sample's size and quantiles.
type Summary struct {
	N             int
	P10, P50, P90 time.Duration
	P99, Max      time.Duration
}

// Summarize describes xs.
func Summarize(xs []time.Duration) Summary {
	return Summary{N: len(xs), P10: Quantile(xs, .10), P50: Quantile(xs, .50), P90: Quantile(xs, .90),
		P99: Quantile(xs, .99), Max: Quantile(xs, 1)}
}

func (s Summary) String() string {
	r := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	return fmt.Sprintf("n=%d p10 %s p50 %s p90 %s p99 %s max %s", s.N, r(s.P10), r(s.P50), r(s.P90), r(s.P99), r(s.Max))
}

// Comparison is two samples judged against each other.
type Comparison struct {
	A, B     Summary
	D        float64 // KS statistic
	Critical float64 // at Alpha
	Alpha    float64
}

// Compare compares a and b at significance alpha.
func Compare(a, b []time.Duration, alpha float64) Comparison {
	return Comparison{A: Summarize(a), B: Summarize(b), D: KS(a, b), Critical: KSCritical(len(a), len(b), alpha), Alpha: alpha}
}

// Separate reports whether the samples differ significantly.
func (c Comparison) Separate() bool { return c.D > c.Critical }

// Interleaved takes n samples of each of two classes, alternating (so that
// a machine's load drifts over both alike), on workers goroutines at once:
// sample(worker, i) measures sample i, of class A for even i and B for
// odd. A failed sample is left out; the first error is returned with what
// was measured.
func Interleaved(n, workers int, sample func(worker, i int) (time.Duration, error)) (a, b []time.Duration, err error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				d, serr := sample(w, i)
				mu.Lock()
				switch {
				case serr != nil:
					if err == nil {
						err = fmt.Errorf("sample %d: %w", i, serr)
					}
				case i%2 == 0:
					a = append(a, d)
				default:
					b = append(b, d)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range 2 * n {
		next <- i
	}
	close(next)
	wg.Wait()
	return a, b, err
}

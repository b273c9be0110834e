package stats

import (
	"math/rand/v2"
	"testing"
	"time"
)

func sample(r *rand.Rand, n int, base, spread time.Duration) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, base+time.Duration(r.Int64N(int64(spread))))
	}
	return out
}

// The test separates a real difference and does not separate two draws
// from one distribution.
func TestKS(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	same := 0
	for range 200 {
		if Compare(sample(r, 40, 500*time.Millisecond, 30*time.Millisecond), sample(r, 40, 500*time.Millisecond, 30*time.Millisecond), 1e-3).Separate() {
			same++
		}
	}
	if same > 2 {
		t.Errorf("one distribution judged two in %d of 200 draws at alpha 0.001", same)
	}
	shifted := Compare(sample(r, 40, 500*time.Millisecond, 30*time.Millisecond), sample(r, 40, 530*time.Millisecond, 30*time.Millisecond), 1e-3)
	if !shifted.Separate() {
		t.Errorf("a shift by the whole spread not detected: %+v", shifted)
	}
	if d := KS([]time.Duration{1, 2, 3}, []time.Duration{4, 5}); d != 1 {
		t.Errorf("disjoint samples: D = %v", d)
	}
	if d := KS([]time.Duration{1, 2, 3}, []time.Duration{1, 2, 3}); d != 0 {
		t.Errorf("equal samples: D = %v", d)
	}
	if q := Quantile([]time.Duration{5, 1, 3, 2, 4}, .5); q != 3 {
		t.Errorf("median = %v", q)
	}
}

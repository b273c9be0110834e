package usage

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestParseAmount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // exact, as a fraction; "" = refused
	}{
		{"12.34", "617/50"},
		{"0", "0/1"},
		{"-0.0000000001", "-1/10000000000"},
		{"1.2E-7", "3/25000000"},
		{"+5", "5/1"},
		{".5", "1/2"},
		{"5.", "5/1"},
		{"999999999999.99", "99999999999999/100"},
		{"1000000000000", ""}, // out of range
		{"1e12", ""},
		{"1/3", ""}, // big.Rat would take it
		{"0x10", ""},
		{"NaN", ""},
		{"Inf", ""},
		{"", ""},
		{" 1", ""},
		{"1,000.00", ""},
		{"1e1000", ""},
		{"1e-99", "1/1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"},
		{"1e99999999", ""},
		{"--1", ""},
	} {
		r, err := ParseAmount(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%q: accepted as %s", tc.in, r)
		case tc.want != "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.want != "" && r.String() != tc.want:
			t.Errorf("%q = %s, want %s", tc.in, r, tc.want)
		}
	}
}

// FuzzParseAmount: whatever Cost Explorer (or a hostile endpoint, or a
// tampered cache) sends, ParseAmount never panics, and what it accepts
// is a bounded decimal that formatAmount writes back exactly and that a
// float parser reads as (nearly) the same number.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"12.34", "-0.0000000001", "1.2E-7", "1/3", "0x1p-2", "1e400", "9999999999999", ".", "-.5e+3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseAmount(s)
		if err != nil {
			return
		}
		if new(big.Rat).Abs(r).Cmp(maxAmount) >= 0 {
			t.Fatalf("%q: %s out of range", s, r)
		}
		back, err := ParseAmount(formatAmount(r))
		if err != nil || back.Cmp(r) != 0 {
			t.Fatalf("%q: formatAmount %q does not read back: %v", s, formatAmount(r), err)
		}
		fl, err := strconv.ParseFloat(s, 64)
		want, _ := r.Float64()
		if err != nil || math.Abs(fl-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Fatalf("%q: exact %v, float %v (%v)", s, want, fl, err)
		}
	})
}

func TestCents(t *testing.T) {
	for c, want := range map[Cents]string{0: "0.00", 5: "0.05", -5: "-0.05", 123456: "1234.56", -100: "-1.00"} {
		if c.String() != want {
			t.Errorf("%d: %s, want %s", int64(c), c, want)
		}
		b, _ := json.Marshal(struct{ A Cents }{c})
		if string(b) != `{"A":`+want+`}` {
			t.Errorf("%d: JSON %s", int64(c), b)
		}
	}
	for x, want := range map[float64]Cents{0.005: 1, -0.005: -1, 1.234: 123, math.NaN(): 0, 12.345000001: 1235} {
		if got := centsOf(x); got != want {
			t.Errorf("centsOf(%v) = %d, want %d", x, got, want)
		}
	}
}

// roundCents: the parts add up to the rounded sum exactly, each within a
// cent of its exact value; the remainder cents go to the largest
// remainders.
func TestRoundCents(t *testing.T) {
	third := big.NewRat(1, 3) // 0.333… three times: 1.00 = 0.34 + 0.33 + 0.33
	got := roundCents([]*big.Rat{third, third, third}, big.NewRat(1, 1))
	if got[0]+got[1]+got[2] != 100 || got[0] != 34 || got[1] != 33 {
		t.Errorf("thirds: %v", got)
	}
	// 0.005 + 0.005 = 0.01: one of them gets the cent.
	half := big.NewRat(1, 200)
	if got := roundCents([]*big.Rat{half, half}, big.NewRat(1, 100)); got[0]+got[1] != 1 {
		t.Errorf("halves: %v", got)
	}
	// Negative parts (credits) next to positive ones.
	got = roundCents([]*big.Rat{big.NewRat(-1001, 300), big.NewRat(2002, 300)}, big.NewRat(1001, 300)) // -3.336…, 6.673…
	if got[0]+got[1] != 334 || got[0] != -333 || got[1] != 667 {
		t.Errorf("credits: %v", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(12)
		xs := make([]*big.Rat, n)
		sum := new(big.Rat)
		for i := range xs {
			xs[i] = big.NewRat(rng.Int64N(2_000_000_000)-500_000_000, 1+rng.Int64N(10_000_000))
			sum.Add(sum, xs[i])
		}
		got := roundCents(xs, new(big.Rat).Set(sum))
		var tot Cents
		for i, c := range got {
			tot += c
			d := new(big.Rat).Sub(new(big.Rat).Mul(xs[i], big.NewRat(100, 1)), big.NewRat(int64(c), 1))
			if d.Abs(d).Cmp(big.NewRat(1, 1)) >= 0 {
				t.Fatalf("part %d: %s rounded to %d cents", i, xs[i].FloatString(6), c)
			}
		}
		if want := roundHalfAway(sum.Mul(sum, big.NewRat(100, 1))); int64(tot) != want {
			t.Fatalf("%v add up to %d, want %d", got, tot, want)
		}
	}
}

func TestCentsJSONRoundTrip(t *testing.T) {
	for _, c := range []Cents{0, 1, -1, 5, 100, 6908, -12345, 99_999_999_999} {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back Cents
		if err := json.Unmarshal(b, &back); err != nil || back != c {
			t.Errorf("%d: %s read back as %d (%v)", c, b, back, err)
		}
	}
	var c Cents
	if err := json.Unmarshal([]byte(`"12.50"`), &c); err != nil || c != 1250 {
		t.Errorf(`"12.50": %d, %v`, c, err)
	}
	for _, bad := range []string{`0.001`, `1e300`, `"abc"`, `true`, `"0x10"`} {
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("%s accepted as %d", bad, c)
		}
	}
}

package usage

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
)

// Money from the bill is exact: Cost Explorer writes amounts as decimal
// strings with many fractional digits ("1234.5678901234"), and the split
// of a bill between accounts must add up to the bill to the cent. Amounts
// are parsed into big.Rat, shared out exactly, and rounded to cents once,
// at the end, all together (roundCents), never summed as floats.

// Cents is an amount in hundredths of the currency unit.
type Cents int64

// String is the amount with two decimals: "-12.05".
func (c Cents) String() string {
	sign, v := "", int64(c)
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%02d", sign, v/100, v%100)
}

// MarshalJSON writes the amount as a JSON number with two decimals, exact.
func (c Cents) MarshalJSON() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalJSON reads what MarshalJSON writes (a JSON number, or a string
// holding one) exactly, through ParseAmount: a report written by one
// frontdoor reads back to the cent in another. An amount finer than a
// cent is refused rather than rounded: no report has one.
func (c *Cents) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil // encoding/json's convention: null leaves the value as it is
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	r, err := ParseAmount(s)
	if err != nil {
		return fmt.Errorf("usage: amount: %w", err)
	}
	r.Mul(r, big.NewRat(100, 1))
	if !r.IsInt() {
		return fmt.Errorf("usage: amount %q: %w (finer than a cent)", s, errAmount)
	}
	*c = Cents(r.Num().Int64())
	return nil
}

// Float is the amount in currency units (for charts and fractions only).
func (c Cents) Float() float64 { return float64(c) / 100 }

// centsOf rounds an estimate (a float amount) to cents, half away from zero.
func centsOf(x float64) Cents {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return Cents(math.Round(x * 100))
}

// maxAmount bounds an amount read from outside: a cluster's bill is far
// below a trillion, and big.Rat arithmetic stays small.
var maxAmount = big.NewRat(1_000_000_000_000, 1)

// amountRE is a plain decimal with an optional exponent, as AWS writes
// amounts ("12.5", "-0.0000001", "1.2E-7"); no fractions, hex, Inf or NaN.
var amountRE = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,2})?$`)

// errAmount is the error of an amount that is not one.
var errAmount = errors.New("not a decimal amount")

// ParseAmount reads a decimal amount exactly. It refuses anything but a
// plain decimal (optionally with an exponent) of at most 64 characters
// and below 10^12 in magnitude.
func ParseAmount(s string) (*big.Rat, error) {
	if len(s) > 64 || !amountRE.MatchString(s) {
		return nil, fmt.Errorf("%q: %w", s, errAmount)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q: %w", s, errAmount)
	}
	if new(big.Rat).Abs(r).Cmp(maxAmount) >= 0 {
		return nil, fmt.Errorf("%q: %w (out of range)", s, errAmount)
	}
	return r, nil
}

// formatAmount writes r as a plain decimal, exactly when r has a finite
// decimal expansion (every amount ParseAmount reads does: its denominator
// is 2^a·5^b and max(a, b) places suffice), else to 12 places.
func formatAmount(r *big.Rat) string {
	d := new(big.Int).Set(r.Denom())
	var twos, fives int
	five, m := big.NewInt(5), new(big.Int)
	for d.Bit(0) == 0 && twos < 1000 {
		d.Rsh(d, 1)
		twos++
	}
	for fives < 1000 {
		q, _ := new(big.Int).QuoRem(d, five, m)
		if m.Sign() != 0 {
			break
		}
		d, fives = q, fives+1
	}
	if d.Cmp(big.NewInt(1)) != 0 {
		return r.FloatString(12)
	}
	return r.FloatString(max(twos, fives))
}

// roundCents rounds exact amounts to cents so that the rounded parts add
// up to their sum rounded (half away from zero), each part within a cent
// of its exact value: every part is floored, and the cents still missing
// go one each to the parts with the largest remainders (ties: the
// earlier). sum must be the parts' exact sum (the caller knows it: the
// bill; adding a thousand shares with unlike denominators is the slow
// way to it).
func roundCents(xs []*big.Rat, sum *big.Rat) []Cents {
	out := make([]Cents, len(xs))
	rem := make([]*big.Rat, len(xs))
	var floors int64
	hundred := big.NewRat(100, 1)
	for i, x := range xs {
		c := new(big.Rat).Mul(x, hundred)
		f := floorRat(c)
		out[i] = Cents(f)
		floors += f
		rem[i] = c.Sub(c, new(big.Rat).SetInt64(f))
	}
	missing := roundHalfAway(new(big.Rat).Mul(sum, hundred)) - floors
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rem[order[a]].Cmp(rem[order[b]]) > 0 })
	for k := int64(0); k < missing && int(k) < len(order); k++ {
		out[order[k]]++
	}
	return out
}

// floorRat is ⌊r⌋ (r is bounded by maxAmount × 100: it fits an int64).
func floorRat(r *big.Rat) int64 {
	q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // Euclidean: the floor
	return q.Int64()
}

// roundHalfAway rounds r to the nearest integer, halves away from zero.
func roundHalfAway(r *big.Rat) int64 {
	a := new(big.Rat).Abs(r)
	f := floorRat(new(big.Rat).Add(a, big.NewRat(1, 2)))
	if r.Sign() < 0 {
		return -f
	}
	return f
}

// ratOf is x as an exact rational (a weight: GPU-hours, login-node hours);
// NaN, infinities and negatives count as 0.
func ratOf(x float64) *big.Rat {
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		return new(big.Rat)
	}
	return new(big.Rat).SetFloat64(x)
}

// ratCents is c as an exact amount.
func ratCents(c Cents) *big.Rat { return big.NewRat(int64(c), 100) }

package main

// Measurement helpers: distributions, polling with a deadline, the log.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"
)

func dist(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(p*float64(len(s)-1) + 0.5)
		return s[i]
	}
	return Dist{N: len(s), P50: q(0.5), P99: q(0.99), Max: s[len(s)-1]}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// poll checks cond every step until it holds or within passes.
func poll(ctx context.Context, within, step time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(step):
		}
	}
	return nil
}

func waitFor(ctx context.Context, within time.Duration, cond func() error) error {
	var last error
	err := poll(ctx, within, 20*time.Millisecond, func() bool { last = cond(); return last == nil })
	if err != nil {
		return fmt.Errorf("%w: %v", err, last)
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

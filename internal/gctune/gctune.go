// Package gctune keeps the Go garbage collector from running hundreds of
// times per second in a relay. x/crypto/ssh allocates every packet afresh
// (32 KiB in, 32 KiB out), while the live heap of a gateway is small: with
// the default GOGC=100 the heap goal sits at ~4 MiB and a 1 GiB transfer
// triggers ~500 collections and as many rounds of returning memory to the
// OS. The tuner raises GOGC so that the heap goal stays at least MinGoal
// above the live heap, and returns to GOGC=100 as the live heap grows, so
// memory stays proportional for gateways with many sessions.
package gctune

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Config is the tuner's setting.
type Config struct {
	// MinGoal is the smallest heap growth allowed between collections.
	MinGoal uint64
	// MaxPercent caps GOGC.
	MaxPercent int
	// Interval is how often the live heap is looked at.
	Interval time.Duration
}

// Default: 64 MiB of headroom, GOGC at most 2000, re-evaluated every second.
var Default = Config{MinGoal: 64 << 20, MaxPercent: 2000, Interval: time.Second}

// Percent is the GOGC value for a live heap of live bytes.
func (c Config) Percent(live uint64) int {
	if live == 0 {
		return c.MaxPercent
	}
	p := int(c.MinGoal * 100 / live)
	return min(max(p, 100), c.MaxPercent)
}

// Run adjusts GOGC until ctx ends, then restores the previous setting. It
// does nothing if the operator set GOGC explicitly (env var), which wins.
func Run(ctx context.Context, c Config, envGOGC string) {
	if envGOGC != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	prev := debug.SetGCPercent(c.Percent(0))
	defer debug.SetGCPercent(prev)
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	last := -1
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if p := c.Percent(sample[0].Value.Uint64()); p != last {
			debug.SetGCPercent(p)
			last = p
		}
	}
}

package main

// Latency: `ssh HOST true` through each path.

import (
	"context"
	"fmt"
	"log"
	"time"
)

// latency: `ssh HOST true` through each path, interleaved, default cipher.
func (b *bench) latency(ctx context.Context, r *result) error {
	ms := map[string][]float64{}
	for i := 0; i < b.o.latN; i++ {
		for j := range paths {
			p := paths[(i+j)%len(paths)]
			start := time.Now()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			out, err := b.command(cctx, cpuClient, "ssh", append(b.sshArgs(p, ""), "true")...).CombinedOutput()
			cancel()
			if err != nil {
				return fmt.Errorf("ssh true via %s: %w: %s", p, err, out)
			}
			ms[p] = append(ms[p], float64(time.Since(start).Microseconds())/1000)
		}
	}
	for _, p := range paths {
		l := latencyRow{Path: p, Runs: len(ms[p]), P50: percentile(ms[p], 50), P99: percentile(ms[p], 99)}
		l.RatioP50 = l.P50 / percentile(ms[pathDirect], 50)
		l.RatioP99 = l.P99 / percentile(ms[pathDirect], 99)
		r.Latency = append(r.Latency, l)
		log.Printf("ssh true %-9s p50 %.1f ms p99 %.1f ms ×%.2f", p, l.P50, l.P99, l.RatioP50)
	}
	return nil
}

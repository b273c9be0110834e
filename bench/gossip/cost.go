package main

import (
	"context"
	"strings"
	"syscall"
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// Cost is what the cluster spends when nothing happens but heartbeats,
// failure detection and repair: every member of the benchmark is in this
// process, so these are the whole cluster's figures.
type Cost struct {
	WindowS        float64 `json:"window_s"`
	UDPPacketsPerS float64 `json:"udp_packets_per_s"`
	UDPBytesPerS   float64 `json:"udp_bytes_per_s"`
	TCPStreamsPerS float64 `json:"tcp_streams_per_s"`
	TCPBytesPerS   float64 `json:"tcp_bytes_per_s"`
	// CPUCores is the process's user+system CPU time over the window per
	// second of it (1.0 = one core busy), signing and verifying included.
	CPUCores float64 `json:"cpu_cores"`
}

// sink collects memberlist's counters (memberlist.udp.sent counts one
// increment per packet, summing its bytes; tcp.sent per stream message).
var sink = func() *metrics.InmemSink {
	s := metrics.NewInmemSink(time.Hour, 2*time.Hour)
	cfg := metrics.DefaultConfig("bench")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics, cfg.EnableServiceLabel = false, false, false
	metrics.NewGlobal(cfg, s)
	return s
}()

// sent returns memberlist's sent counters so far: count and bytes of UDP
// packets and of TCP stream messages.
func sent() (udpN, udpB, tcpN, tcpB float64) {
	for _, iv := range sink.Data() {
		iv.RLock()
		for k, c := range iv.Counters {
			switch {
			case strings.HasSuffix(k, "memberlist.udp.sent"):
				udpN += float64(c.Count)
				udpB += c.Sum
			case strings.HasSuffix(k, "memberlist.tcp.sent"):
				tcpN += float64(c.Count)
				tcpB += c.Sum
			}
		}
		iv.RUnlock()
	}
	return
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// steadyCost measures Cost over window.
func steadyCost(ctx context.Context, window time.Duration) (Cost, error) {
	u0, ub0, t0, tb0 := sent()
	c0, start := cpuTime(), time.Now()
	select {
	case <-ctx.Done():
		return Cost{}, ctx.Err()
	case <-time.After(window):
	}
	u1, ub1, t1, tb1 := sent()
	secs := time.Since(start).Seconds()
	return Cost{WindowS: secs, UDPPacketsPerS: (u1 - u0) / secs, UDPBytesPerS: (ub1 - ub0) / secs,
		TCPStreamsPerS: (t1 - t0) / secs, TCPBytesPerS: (tb1 - tb0) / secs,
		CPUCores: (cpuTime() - c0).Seconds() / secs}, nil
}

package soak

// What the gateways look like from outside while the load runs: each
// process's resident memory, file descriptors and threads from /proc, its
// goroutines from its own /metrics, and how old the freshest health of
// each node is in its /v1/nodes. Plus the machine's load average.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/stack"
)

// Sample is one gateway at one moment.
type Sample struct {
	At         time.Time `json:"t"`
	Gateway    string    `json:"gateway"`
	PID        int       `json:"pid"`
	RSSKiB     int64     `json:"rss_kib"`
	FDs        int       `json:"fds"`
	Threads    int       `json:"threads"`
	Goroutines int       `json:"goroutines"`
	// HeapInuseKiB and NextGCKiB are the Go heap in use (live and not yet
	// collected) and the heap size the next collection is due at: the
	// gateway tunes its GC to let the heap grow 64 MiB between
	// collections (internal/gctune), which RSS follows.
	HeapInuseKiB int64 `json:"heap_inuse_kib"`
	NextGCKiB    int64 `json:"next_gc_kib"`
	// Sessions is the gateway's frontdoor_sessions gauge.
	Sessions int `json:"sessions"`
	// HealthAgeMS is, per node, how old the health this gateway routes
	// with is (now − health_at), in ms; a dead or unknown node is absent.
	HealthAgeMS map[string]int64 `json:"health_age_ms,omitempty"`
}

// MachineSample is the machine at one moment.
type MachineSample struct {
	At       time.Time `json:"t"`
	Load1    float64   `json:"load1"`
	MemAvail int64     `json:"mem_available_kib"`
	// Held is how many held sessions were open.
	Held int `json:"held"`
}

// Sampler samples every gateway of a stack at an interval.
type Sampler struct {
	st    *stack.Stack
	holds func() int

	mu      sync.Mutex // mu protects the following
	samples []Sample
	machine []MachineSample
}

// Run samples every interval until ctx ends.
func (s *Sampler) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.Once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once takes one sample of every running gateway and of the machine.
func (s *Sampler) Once(ctx context.Context) []Sample {
	var out []Sample
	for _, g := range s.st.Gateways {
		if !g.Running() {
			continue
		}
		sm, err := sampleGateway(ctx, g)
		if err != nil {
			continue // it died between the check and the sample
		}
		out = append(out, sm)
	}
	m := MachineSample{At: time.Now(), Load1: harness.Load1(), MemAvail: harness.MemAvailableKiB()}
	if s.holds != nil {
		m.Held = s.holds()
	}
	s.mu.Lock()
	s.samples = append(s.samples, out...)
	s.machine = append(s.machine, m)
	s.mu.Unlock()
	return out
}

// Samples returns the samples taken in [from, to).
func (s *Sampler) Samples(from, to time.Time) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return within(s.samples, from, to, func(sm Sample) time.Time { return sm.At }, nil)
}

// Machine returns the machine samples in [from, to).
func (s *Sampler) Machine(from, to time.Time) []MachineSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return within(s.machine, from, to, func(m MachineSample) time.Time { return m.At }, nil)
}

func sampleGateway(ctx context.Context, g *stack.Gateway) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pid := g.PID()
	sm := Sample{At: time.Now(), Gateway: g.Name, PID: pid}
	var err error
	if sm.RSSKiB, err = harness.StatusKiB(pid, "VmRSS:"); err != nil {
		return sm, err
	}
	th, _ := harness.StatusKiB(pid, "Threads:")
	sm.Threads = int(th)
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return sm, err
	}
	sm.FDs = len(fds)
	metrics, err := harness.AdminGet(ctx, g.AdminSocket, "/metrics")
	if err != nil {
		return sm, err
	}
	sm.Goroutines = int(metricValue(metrics, "go_goroutines"))
	sm.Sessions = int(metricValue(metrics, "frontdoor_sessions"))
	sm.HeapInuseKiB = int64(metricValue(metrics, "go_memstats_heap_inuse_bytes")) / 1024
	sm.NextGCKiB = int64(metricValue(metrics, "go_memstats_next_gc_bytes")) / 1024
	nodes, err := g.Nodes(ctx)
	if err != nil {
		return sm, err
	}
	sm.HealthAgeMS = map[string]int64{}
	for _, n := range nodes {
		if n.Alive && !n.HealthAt.IsZero() {
			sm.HealthAgeMS[n.Name] = time.Since(n.HealthAt).Milliseconds()
		}
	}
	return sm, nil
}

// metricValue is the value of the first sample of name (with or without
// labels) in a Prometheus text exposition; 0 if absent.
func metricValue(text, name string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // a longer name
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		return v
	}
	return 0
}

// metricSum is the sum of every sample of name whose labels contain all
// of match ("reason=\"x\"").
func metricSum(text, name string, match ...string) float64 {
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		ok := true
		for _, m := range match {
			if !strings.Contains(rest, m) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		sum += v
	}
	return sum
}

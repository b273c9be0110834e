package route

import "math"

// What a login node can physically report. A node's agent runs where root
// may be lost, so its figures are claims: the gateways refuse health outside
// these bounds (internal/cluster counts the node as lying), and Score clamps
// to them anyway, so that no figure can make a score negative or win every
// draw.
//
//   - CPUs: 1..MaxCPUs. Linux's NR_CPUS is at most 8192 (x86-64 MAXSMP;
//     arm64 allows 4096).
//   - Load averages, sessions and users: 0..MaxTasks. A load average counts
//     runnable and uninterruptible tasks, a session is an sshd process and a
//     user has at least one process, and a 64-bit kernel has at most
//     PID_MAX_LIMIT = 2^22 task IDs.
//   - Fractions (CPU utilisation, memory available, PSI pressure): 0..1.
const (
	MaxCPUs  = 8192
	MaxTasks = 1 << 22
)

// ClampCount bounds a count (sessions, users, recently routed) to
// 0..MaxTasks.
func ClampCount(n int) int { return max(0, min(n, MaxTasks)) }

// ClampCPUs bounds a CPU count to 1..MaxCPUs.
func ClampCPUs(n int) int { return max(1, min(n, MaxCPUs)) }

// clampLoad bounds a load average to 0..MaxTasks; not-a-number counts as
// the worst, so it cannot win.
func clampLoad(f float64) float64 {
	if math.IsNaN(f) {
		return MaxTasks
	}
	return max(0, min(f, MaxTasks))
}

// clamp01 bounds a fraction; not-a-number counts as 1 (the worst for
// pressure; for free memory the caller passes 1-frac, see Score).
func clamp01(f float64) float64 {
	if math.IsNaN(f) {
		return 1
	}
	return max(0, min(1, f))
}

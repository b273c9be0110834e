package main

// What /proc says about a process and the machine: RSS, available memory,
// free pids.

import (
	"os"
	"strconv"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

func rssKiB(pid int) (int64, error) { return harness.StatusKiB(pid, "VmRSS:") }

func memAvailableKiB() int64 { return harness.MemAvailableKiB() }

// pidsFree is how many more processes the kernel will create.
func pidsFree() int {
	max := 32768
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			max = v
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	used := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			used++
			// Threads take pids too.
			if t, err := os.ReadDir("/proc/" + e.Name() + "/task"); err == nil {
				used += len(t) - 1
			}
		}
	}
	return max - used
}

package main

// What /proc says about a process and the machine: RSS, available memory,
// free pids.

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func rssKiB(pid int) (int64, error) {
	return procStatusKiB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
}

func memAvailableKiB() int64 {
	v, _ := procStatusKiB("/proc/meminfo", "MemAvailable:")
	return v
}

func procStatusKiB(file, key string) (int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			return strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in %s", key, file)
}

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

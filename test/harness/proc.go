package harness

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// What /proc says about a process and the machine, for tests and
// benchmarks that watch the programs they run.

// StatusKiB is a "Key: N kB" line of /proc/PID/status (VmRSS:, Threads:
// …) as a number.
func StatusKiB(pid int, key string) (int64, error) {
	return fileKiB(fmt.Sprintf("/proc/%d/status", pid), key)
}

// MemAvailableKiB is the machine's available memory (/proc/meminfo).
func MemAvailableKiB() int64 {
	v, _ := fileKiB("/proc/meminfo", "MemAvailable:")
	return v
}

// MemTotalKiB is the machine's memory (/proc/meminfo).
func MemTotalKiB() int64 {
	v, _ := fileKiB("/proc/meminfo", "MemTotal:")
	return v
}

func fileKiB(file, key string) (int64, error) {
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

// Load1 is the machine's 1-minute load average.
func Load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}

// Descendants lists pid's descendant processes (children, theirs, …), from
// the parent field of every /proc/PID/stat.
func Descendants(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := statFields(p)
		if err != nil || len(f) < 2 {
			continue // gone meanwhile
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	for next := []int{pid}; len(next) > 0; {
		p := next[0]
		next = append(next[1:], children[p]...)
		out = append(out, children[p]...)
	}
	return out
}

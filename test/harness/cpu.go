package harness

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcessCPU is a process's user+system CPU time in seconds, from /proc.
func ProcessCPU(pid int) (float64, error) { return statCPU(pid, 11) }

// ChildrenCPU is the CPU time in seconds of a process's exited and reaped
// children: for sshd's listener, its finished sessions.
func ChildrenCPU(pid int) (float64, error) { return statCPU(pid, 13) }

// statCPU sums two consecutive clock-tick fields of /proc/PID/stat, counted
// from the field after the parenthesised command name (utime and stime are
// fields 14 and 15 of the line, 11 and 12 here; cutime and cstime follow).
func statCPU(pid, field int) (float64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if len(f) <= field+1 {
		return 0, errors.New("short /proc stat")
	}
	a, err1 := strconv.ParseFloat(f[field], 64)
	b2, err2 := strconv.ParseFloat(f[field+1], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const clkTck = 100 // USER_HZ on Linux
	return (a + b2) / clkTck, nil
}

// statFields are the fields of /proc/PID/stat after the parenthesised
// command name (which may hold spaces): state, ppid, pgrp, ….
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil, errors.New("bad /proc stat")
	}
	return strings.Fields(s[i+2:]), nil
}

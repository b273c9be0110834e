package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cpuGroup is a cgroup (v1 cpuacct, or v2) holding one process and every
// process it forks later: its CPU time counts the whole tree, including
// processes that have exited. /proc's cutime does not serve for sshd: a
// session's processes are not always reaped by their parent (a monitor
// that exits first hands its child to init), and their CPU time is then
// lost from the listener's cutime.
type cpuGroup struct {
	dir string
	v2  bool
}

func newCPUGroup(name string) (*cpuGroup, error) {
	for _, c := range []struct {
		root string
		v2   bool
	}{{"/sys/fs/cgroup/cpuacct", false}, {"/sys/fs/cgroup/unified", true}, {"/sys/fs/cgroup", true}} {
		probe := "cpuacct.usage"
		if c.v2 {
			probe = "cgroup.controllers"
		}
		if _, err := os.Stat(filepath.Join(c.root, probe)); err != nil {
			continue
		}
		dir := filepath.Join(c.root, fmt.Sprintf("relaybench-%d-%s", os.Getpid(), name))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup for %s CPU accounting: %w", name, err)
		}
		return &cpuGroup{dir: dir, v2: c.v2}, nil
	}
	// `ip netns exec` mounts a fresh /sys without the cgroup hierarchies:
	// mount cpuacct (v1) somewhere else, once.
	if cgroupMount == "" {
		dir, err := os.MkdirTemp("", "relaybench-cgroup-")
		if err != nil {
			return nil, err
		}
		if err := syscall.Mount("cgroup", dir, "cgroup", 0, "cpuacct"); err != nil {
			os.Remove(dir)
			return nil, fmt.Errorf("no cgroup hierarchy for %s CPU accounting, and mounting cpuacct failed: %w", name, err)
		}
		cgroupMount = dir
	}
	dir := filepath.Join(cgroupMount, fmt.Sprintf("relaybench-%d-%s", os.Getpid(), name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup for %s CPU accounting: %w", name, err)
	}
	return &cpuGroup{dir: dir}, nil
}

// cgroupMount is where newCPUGroup mounted cpuacct, if it had to.
var cgroupMount string

// unmountCgroup undoes newCPUGroup's mount.
func unmountCgroup() {
	if cgroupMount != "" {
		syscall.Unmount(cgroupMount, 0)
		os.Remove(cgroupMount)
	}
}

func (g *cpuGroup) add(pid int) error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// seconds is the group's CPU time so far.
func (g *cpuGroup) seconds() (float64, error) {
	if !g.v2 {
		b, err := os.ReadFile(filepath.Join(g.dir, "cpuacct.usage"))
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		return ns / 1e9, err
	}
	b, err := os.ReadFile(filepath.Join(g.dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseFloat(v, 64)
			return us / 1e6, err
		}
	}
	return 0, fmt.Errorf("no usage_usec in %s/cpu.stat", g.dir)
}

// remove moves what is left in the group back to the root and deletes it.
func (g *cpuGroup) remove() {
	if b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs")); err == nil {
		for _, p := range strings.Fields(string(b)) {
			os.WriteFile(filepath.Join(filepath.Dir(g.dir), "cgroup.procs"), []byte(p), 0o644)
		}
	}
	os.Remove(g.dir)
}

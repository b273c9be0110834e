package main

// Pinned mode (--pinned): a gateway on its own machine, modelled on two
// cores. The client and the node's sshd (with every session it forks)
// share CPU 0; each proxy (frontdoor, socat, sshpiper) gets CPU 1 to
// itself. The bench's own Go clients and bookkeeping run on CPU 0 too, on
// the client's side. Unpinned, everything shares both cores, as the
// scheduler likes.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/sys/unix"
)

// CPUs of the pinned mode.
const (
	cpuClient = 0 // the client, the node's sshd, the bench itself
	cpuProxy  = 1 // the proxy under test
)

// pinPID sets the CPU affinity of every thread of pid (children it forks
// later inherit it).
func pinPID(pid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("pin %d to CPU %d: %w", pid, cpu, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("pin thread %d of %d to CPU %d: %w", tid, pid, cpu, err)
		}
	}
	return nil
}

// command is name with args, to be started on cpu when pinned: taskset
// execs the program, so the process (and its rusage) is the program's,
// and every thread it starts inherits the CPU from the first.
func (b *bench) command(ctx context.Context, cpu int, name string, args ...string) *exec.Cmd {
	if !b.o.pinned {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "taskset", append([]string{"-c", strconv.Itoa(cpu), name}, args...)...)
}

// checkPinnable fails unless the machine has CPUs 0 and 1 and taskset.
func checkPinnable() error {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return err
	}
	if !set.IsSet(cpuClient) || !set.IsSet(cpuProxy) {
		return fmt.Errorf("--pinned needs CPUs %d and %d (this process may use %d CPUs)", cpuClient, cpuProxy, set.Count())
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return fmt.Errorf("--pinned needs taskset (util-linux): %w", err)
	}
	return nil
}

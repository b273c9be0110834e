package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestParseTrace feeds parseTrace a made-up timeline: the node's sshd
// (pid 200) forks a session (201) that execs the command (202); the
// client is 100, the proxy 300 with two threads. After the login, data
// flows; then for 2 ms the client, sshd and the command all sleep while
// the proxy runs; then data flows again.
func TestParseTrace(t *testing.T) {
	var lines []string
	at := 1000.0
	ev := func(comm string, pid, tid int, dt float64, event, args string) {
		at += dt
		lines = append(lines, fmt.Sprintf("%16s %d/%d [000] %.6f: %s: %s", comm, pid, tid, at, event, args))
	}
	io := func(comm string, pid int, op string, fd int, n int64) {
		ev(comm, pid, pid, 1e-6, "syscalls:sys_enter_"+op, fmt.Sprintf("fd: 0x%08x, buf: 0x1, count: 0x%x", fd, n))
		ret := fmt.Sprintf("0x%x", n)
		if n < 0 {
			ret = fmt.Sprintf("0x%x", uint64(n))
		}
		ev(comm, pid, pid, 1e-6, "syscalls:sys_exit_"+op, ret)
	}
	sw := func(comm string, pid int, state string, next int) {
		ev(comm, pid, pid, 1e-6, "sched:sched_switch", fmt.Sprintf("prev_comm=%s prev_pid=%d prev_prio=120 prev_state=%s ==> next_comm=x next_pid=%d next_prio=120", comm, pid, state, next))
	}
	ev(":200", 200, 200, 0, "sched:sched_process_fork", "comm=sshd pid=200 child_comm=sshd child_pid=201")
	sw(":200", 200, "S", 201)
	ev("sshd", 201, 201, 0, "sched:sched_process_fork", "comm=sshd pid=201 child_comm=sshd child_pid=202")
	io("ssh", 100, "read", 3, 1500) // the login
	for i := 0; i < 20; i++ {       // 640 KiB of data
		io("head", 202, "write", 1, 32<<10)
		io("sshd", 201, "write", 4, 32804)
		io(":300", 300, "read", 12, 65536)
		io(":300", 300, "write", 9, 32804)
		io("ssh", 100, "read", 3, 32804)
	}
	io(":300", 300, "write", 12, 36) // a window adjustment
	io(":300", 300, "read", 9, -11)  // EAGAIN
	sw("ssh", 100, "S", 301)
	sw("sshd", 201, "S", 0)
	sw("head", 202, "S", 0)
	ev(":300", 300, 301, 2e-3, "sched:sched_wakeup", "comm=ssh pid=100 prio=120 target_cpu=000")
	for i := 0; i < 4; i++ {
		io("head", 202, "write", 1, 32<<10)
		io("ssh", 100, "read", 3, 32804)
	}
	var row traceRow
	if err := parseTrace(strings.NewReader(strings.Join(lines, "\n")), 100, 200, 300, &row); err != nil {
		t.Fatal(err)
	}
	// The bulk phase starts once 256 KiB have moved (4th round), so the
	// 2 ms stall is about half of it.
	if row.EdgeAsleepProxyBusy < 0.4 || row.EdgeAsleepProxyBusy > 0.95 || row.EdgeAsleepProxyIdle != 0 || row.Stalls != 1 {
		t.Errorf("edge asleep: %.2f proxy running, %.2f proxy asleep, %d stalls", row.EdgeAsleepProxyBusy, row.EdgeAsleepProxyIdle, row.Stalls)
	}
	got := map[string]fdStats{}
	for _, f := range row.FDs {
		got[fmt.Sprintf("%s %s %d", f.Role, f.Op, f.FD)] = f
	}
	if f := got["proxy write 12"]; f.Calls != 0 {
		t.Errorf("one window adjustment listed: %+v", f) // fewer than 16 calls: left out
	}
	if f := got["proxy read 9"]; f.EAGAIN != 0 {
		t.Errorf("%+v", f)
	}
	if f := got["command write 1"]; f.Calls != 24 || f.Sizes["≤33 KiB"] != 24 {
		t.Errorf("the command's writes: %+v", f)
	}
	if f := got["sshd write 4"]; f.Calls != 20 || math.Abs(float64(f.Bytes)-20*32804) > 0 {
		t.Errorf("sshd's writes: %+v", f)
	}
	if f := got["client read 3"]; f.Calls != 25 {
		t.Errorf("the client's reads: %+v", f)
	}
	if len(row.Longest) != 1 || !strings.Contains(row.Longest[0], "stall of 2.") {
		t.Errorf("longest stalls: %q", row.Longest)
	}
}

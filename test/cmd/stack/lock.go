package main

// One stack at a time. A second stack started from the same state
// directory, or while another stack's Samba DC holds the AD address, used
// to get far enough to fail with a TLS error from the first stack's DC
// ("certificate signed by unknown authority"). Both are now refused before
// anything starts, naming the running stack's pid and state directory.
//
// The running stack holds an exclusive flock on STATE_DIR/stack.pid, which
// also holds its pid. The kernel drops the lock when the process dies, so
// the file left by a stack that crashed (or was killed) blocks nothing; only
// its stale pid stays in it until the next start rewrites it. The file is
// opened close-on-exec: the stack's children do not hold the lock.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidFileName is the lock and pid file in the state directory; running
// stacks are found by it (see runningStacks).
const pidFileName = "stack.pid"

// lockStateDir takes the state directory's lock and writes this process's
// pid into it, or says which stack already holds it. unlock empties the
// file and releases the lock; call it after every child has stopped.
func lockStateDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, pidFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("stack lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, alreadyRunning(strings.TrimSpace(string(b)), dir)
		}
		return nil, fmt.Errorf("stack lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("stack lock: %w", err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("stack lock: %w", err)
	}
	return func() {
		f.Truncate(0)
		f.Close() // releases the flock
	}, nil
}

// alreadyRunning is the one-line refusal naming the running stack.
func alreadyRunning(pid, dir string) error {
	if pid == "" {
		pid = "unknown"
	}
	return fmt.Errorf("a stack is already running: pid %s, state directory %s (its stack.json is there); "+
		"stop it first (Ctrl-C where it runs, or kill %s)", pid, dir, pid)
}

// checkADAddr refuses to start when something already answers on the AD
// address's LDAPS port, naming the stack that holds it if one is running
// (from another state directory; the same one is caught by lockStateDir).
func checkADAddr(addr string) error {
	hostport := net.JoinHostPort(addr, "636")
	c, err := net.DialTimeout("tcp", hostport, time.Second)
	if err != nil {
		return nil // nothing listens: free
	}
	c.Close()
	if others := runningStacks(); len(others) > 0 {
		o := others[0]
		return fmt.Errorf("%s already answers: %w", hostport, alreadyRunning(strconv.Itoa(o.pid), o.dir))
	}
	return fmt.Errorf("%s already answers, and no running stack holds it (a Samba DC left by a stack that was killed, "+
		"or another service): stop it, or give this stack another loopback address with --ad-addr", hostport)
}

type runningStack struct {
	pid int
	dir string
}

// runningStacks finds the other stack processes on this machine: each
// holds its state directory's stack.pid open for as long as it runs.
func runningStacks() []runningStack {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []runningStack
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
			if err == nil && filepath.Base(target) == pidFileName {
				out = append(out, runningStack{pid: pid, dir: filepath.Dir(target)})
				break
			}
		}
	}
	return out
}

package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// Process is one daemon of the stack (a gateway, an agent, the Slurm
// sync), started again with the same command line after a crash when a
// test says so: what systemd's Restart= does on a real host.
type Process struct {
	name    string
	logPath string
	args    []string
	// prepare changes the command before each start (another binary, the
	// environment, a cgroup).
	prepare func(*exec.Cmd)

	mu   sync.Mutex // mu protects the following
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
}

func newProcess(logPath string, prepare func(*exec.Cmd), name string, args ...string) *Process {
	return &Process{name: name, logPath: logPath, args: args, prepare: prepare}
}

// Start starts the process (again). It fails if it is running.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !closed(p.done) {
		return fmt.Errorf("stack: %s still runs (pid %d)", p.name, p.cmd.Process.Pid)
	}
	logf, err := os.OpenFile(p.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own copy
	cmd := exec.Command(p.name, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Never outlive the stack, even if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.prepare != nil {
		p.prepare(cmd)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

// startListening starts the process and waits until it accepts TCP
// connections on addr.
func (p *Process) startListening(ctx context.Context, addr string) error {
	if err := p.Start(); err != nil {
		return err
	}
	done := p.Done()
	return harness.WaitFor(ctx, 20*time.Second, func() error {
		if closed(done) {
			return fmt.Errorf("exited; see %s", p.logPath)
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// PID is the running process's id (the last one's after it exited).
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Done is closed when the current run has exited.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Running reports whether the process runs now.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !closed(p.done)
}

// Path is the program the process runs (before GatewayCommand changes).
func (p *Process) Path() string { return p.name }

// Log is the file the process writes its output to.
func (p *Process) Log() string { return p.logPath }

// Signal sends sig to the running process.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || closed(p.done) {
		return fmt.Errorf("stack: %s is not running", p.name)
	}
	return p.cmd.Process.Signal(sig)
}

// Kill is kill -9 (a crash: no goodbye to anyone) and waits for the exit.
func (p *Process) Kill() {
	if p.Signal(syscall.SIGKILL) == nil {
		<-p.Done()
	}
}

// Stop asks for a clean exit (SIGTERM) and kills after 10 s.
func (p *Process) Stop() {
	if p.Signal(syscall.SIGTERM) != nil {
		return
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		p.Kill()
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

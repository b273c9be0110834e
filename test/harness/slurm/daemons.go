package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness/sys"
)

// daemon is one running daemon process.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has been waited for
}

// command is how a daemon is started and how its readiness is probed.
func (s *Slurm) command(name string) (args []string, ready func(context.Context) error, err error) {
	d := s.opts.Dir
	tcp := func(port int) func(context.Context) error {
		return func(ctx context.Context) error {
			var dl net.Dialer
			c, err := dl.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return err
			}
			return c.Close()
		}
	}
	switch name {
	case Munge:
		return []string{"munged", "--foreground", "--force",
				"--key-file=" + filepath.Join(d, "munge", "munge.key"),
				"--socket=" + s.munge,
				"--pid-file=" + filepath.Join(d, "run", "munged.pid"),
				"--log-file=" + filepath.Join(d, "log", "munged.log"),
				"--seed-file=" + filepath.Join(d, "munge", "munged.seed")},
			func(ctx context.Context) error {
				_, err := s.Run(ctx, "munge", "--no-input", "--socket="+s.munge)
				return err
			}, nil
	case MariaDB:
		cnf := filepath.Join(d, "etc", "my.cnf")
		if _, err := os.Stat(filepath.Join(d, "db", "mysql")); errors.Is(err, os.ErrNotExist) {
			out, err := exec.Command("mariadb-install-db", "--defaults-file="+cnf,
				"--auth-root-authentication-method=socket", "--skip-test-db").CombinedOutput()
			logPath := filepath.Join(d, "log", "mariadb-install.log")
			_ = os.WriteFile(logPath, out, 0o600)
			if err != nil {
				return nil, nil, fmt.Errorf("slurm harness: mariadb-install-db (output in %s, server log in %s): %w: %s",
					logPath, filepath.Join(d, "log", "mariadb.log"), err, errorLines(out, 5))
			}
		}
		// --defaults-file must come first.
		return []string{"mariadbd", "--defaults-file=" + cnf}, tcp(s.opts.MySQLPort), nil
	case SlurmDBD:
		return []string{"slurmdbd", "-D"}, tcp(s.opts.DBDPort), nil
	case SlurmCtld:
		return []string{"slurmctld", "-D"}, tcp(s.opts.CtldPort), nil
	case Slurmd:
		return []string{"slurmd", "-D", "-N", s.host}, tcp(s.opts.SlurmdPort), nil
	}
	return nil, nil, fmt.Errorf("slurm harness: unknown daemon %q", name)
}

// StartDaemon starts one daemon (after StopDaemon, or during Start) and
// waits until it answers. Starting a running daemon is a no-op.
func (s *Slurm) StartDaemon(ctx context.Context, name string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("slurm harness: closed")
	}
	if s.daemons[name] != nil {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	args, ready, err := s.command(name)
	if err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = s.Env()
	cmd.Dir = s.opts.Dir
	cmd.Stdout, cmd.Stderr = s.log, s.log
	// Own process group, so a stop reaches every child; the parent-death
	// signal kills the daemon if the test binary dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("slurm harness: start %s: %w", name, err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(d.done)
	}()
	s.mu.Lock()
	s.daemons[name] = d
	s.mu.Unlock()

	err = sys.WaitFor(ctx, s.opts.ReadyTimeout, func() error {
		select {
		case <-d.done:
			return errExited
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return ready(pctx)
	})
	if err != nil {
		s.StopDaemon(name)
		return fmt.Errorf("slurm harness: %s not ready (see %s): %w", name, filepath.Join(s.opts.Dir, "log"), err)
	}
	return nil
}

var errExited = errors.New("exited during start-up")

// StopDaemon stops one daemon (SIGTERM to its process group, SIGKILL after
// 15 s) and waits until it is gone: how a test takes slurmdbd down.
func (s *Slurm) StopDaemon(name string) {
	s.mu.Lock()
	d := s.daemons[name]
	delete(s.daemons, name)
	s.mu.Unlock()
	if d == nil {
		return
	}
	pgid := d.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	_ = syscall.Kill(-pgid, syscall.SIGCONT) // a paused daemon cannot act on SIGTERM
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-d.done
}

// PauseDaemon stops daemon name with SIGSTOP: it keeps its socket, the
// kernel still accepts connections, and nothing answers, which is how a
// hung slurmctld looks to a client.
func (s *Slurm) PauseDaemon(name string) error { return s.signal(name, syscall.SIGSTOP) }

// ResumeDaemon continues a paused daemon.
func (s *Slurm) ResumeDaemon(name string) error { return s.signal(name, syscall.SIGCONT) }

func (s *Slurm) signal(name string, sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.daemons[name]
	if d == nil {
		return fmt.Errorf("slurm harness: %s is not running", name)
	}
	return syscall.Kill(-d.cmd.Process.Pid, sig)
}

// Running reports whether daemon name is running.
func (s *Slurm) Running(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.daemons[name]
	if d == nil {
		return false
	}
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// PID is the process id of daemon name, 0 when it is not running.
func (s *Slurm) PID(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.daemons[name]; d != nil {
		return d.cmd.Process.Pid
	}
	return 0
}

// Close cancels every job, stops the daemons in reverse start order and
// kills every process left with this cluster's SLURM_CONF in its
// environment (slurmstepd, job steps). It leaves Dir in place (the
// caller's temporary directory) with the logs. Safe to call twice.
func (s *Slurm) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	var errs []error
	for _, name := range startOrder {
		_ = s.ResumeDaemon(name) // a test may have left one paused
	}
	if s.Running(SlurmCtld) {
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		if err := s.CancelAll(ctx); err != nil {
			errs = append(errs, fmt.Errorf("cancel jobs: %w", err))
		}
		cancel()
	}
	for i := len(startOrder) - 1; i >= 0; i-- {
		s.StopDaemon(startOrder[i])
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if err := s.killLeftovers(); err != nil {
		errs = append(errs, err)
	}
	if s.logClose != nil {
		_ = s.logClose.Close()
	}
	return errors.Join(errs...)
}

// Leftovers lists processes (other than this one) whose environment names
// this cluster's SLURM_CONF: slurmstepd and job processes, which slurmd
// starts outside its own process group.
func (s *Slurm) Leftovers() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	want := []byte("SLURM_CONF=" + s.conf + "\x00")
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or a kernel thread
		}
		if bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...)) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

func (s *Slurm) killLeftovers() error {
	pids, err := s.Leftovers()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(pids) == 0 {
		return nil
	}
	return sys.WaitFor(context.Background(), 10*time.Second, func() error {
		left, err := s.Leftovers()
		if err != nil {
			return err
		}
		var alive []string
		for _, pid := range left {
			// A killed process that is a zombie of someone else's still
			// shows its environment; it holds nothing.
			if st, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); !zombie(st) {
				alive = append(alive, strconv.Itoa(pid))
			}
		}
		if len(alive) > 0 {
			return fmt.Errorf("processes still running: %s", strings.Join(alive, " "))
		}
		return nil
	})
}

func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// errorLines picks the lines of out that name an error (MariaDB's tools
// end with a long boilerplate text), at most n.
func errorLines(out []byte, n int) string {
	var picked []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(strings.ToLower(l), "error") && len(picked) < n {
			picked = append(picked, strings.TrimSpace(l))
		}
	}
	if len(picked) == 0 {
		return lastLines(out, n)
	}
	return strings.Join(picked, "; ")
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

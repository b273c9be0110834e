package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Terminal runs a program on a pseudo-terminal, as a user at a keyboard
// would: the program's stdin, stdout and stderr are the terminal, and the
// terminal can be resized (the program gets SIGWINCH). Output is collected
// for Expect.
type Terminal struct {
	master *os.File
	cmd    *exec.Cmd

	mu  sync.Mutex // mu protects the following
	out bytes.Buffer

	readDone chan struct{}
}

// StartTerminal starts cmd on a new terminal of rows×cols.
func StartTerminal(cmd *exec.Cmd, rows, cols int) (*Terminal, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("harness: open pty: %w", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, fmt.Errorf("harness: unlock pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("harness: pty number: %w", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("harness: open pty slave: %w", err)
	}
	defer slave.Close()
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}); err != nil {
		master.Close()
		return nil, fmt.Errorf("harness: set pty size: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// A new session whose controlling terminal is the pty (fd 0).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, fmt.Errorf("harness: start on pty: %w", err)
	}
	t := &Terminal{master: master, cmd: cmd, readDone: make(chan struct{})}
	go t.read()
	return t, nil
}

func (t *Terminal) read() {
	defer close(t.readDone)
	buf := make([]byte, 4096)
	for {
		n, err := t.master.Read(buf)
		if n > 0 {
			t.mu.Lock()
			t.out.Write(buf[:n])
			t.mu.Unlock()
		}
		if err != nil {
			return // EIO once the program closed the terminal
		}
	}
}

// Write types s.
func (t *Terminal) Write(s string) error {
	_, err := t.master.WriteString(s)
	return err
}

// Resize changes the terminal's size; the kernel sends SIGWINCH to the
// program, as a terminal emulator's window resize does.
func (t *Terminal) Resize(rows, cols int) error {
	return unix.IoctlSetWinsize(int(t.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
}

// Output is everything the program wrote so far.
func (t *Terminal) Output() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.String()
}

// Expect waits until the output contains want after offset from (a
// previous Expect's return value) and returns the offset just past it.
func (t *Terminal) Expect(ctx context.Context, from int, want string, timeout time.Duration) (int, error) {
	var end int
	err := WaitFor(ctx, timeout, func() error {
		out := t.Output()
		if from > len(out) {
			from = len(out)
		}
		if i := strings.Index(out[from:], want); i >= 0 {
			end = from + i + len(want)
			return nil
		}
		return fmt.Errorf("terminal output has no %q after offset %d; output so far: %q", want, from, out)
	})
	return end, err
}

// Wait waits for the program to exit and returns its exit code (-1 if it
// was killed), bounded by timeout.
func (t *Terminal) Wait(timeout time.Duration) (int, error) {
	done := make(chan error, 1)
	go func() { done <- t.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		t.cmd.Process.Kill()
		<-done
		return -1, fmt.Errorf("harness: program on terminal did not exit within %s; output: %q", timeout, t.Output())
	}
	// The reader sees EIO once the last holder of the terminal is gone.
	select {
	case <-t.readDone:
	case <-time.After(2 * time.Second):
	}
	t.master.Close()
	<-t.readDone
	if err == nil {
		return 0, nil
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), nil
	}
	return -1, err
}

// Close kills the program if it still runs and releases the terminal.
func (t *Terminal) Close() {
	if t.cmd.ProcessState == nil {
		t.cmd.Process.Kill()
		t.Wait(5 * time.Second)
	}
	t.master.Close()
}

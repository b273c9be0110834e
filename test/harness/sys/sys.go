// Package sys holds the harness helpers that touch only the machine
// (local Unix users, polling with a deadline), with no dependency on
// frontdoor's own packages, so that any package's tests may use them
// without an import cycle (test/harness imports the gateway, whose
// dependencies have tests too).
package sys

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// validName is a POSIX user name as the harness creates them.
var validName = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}$`)

// usersLock serialises user creation inside this process; the file lock
// below does it across processes (test packages run in parallel).
var usersLock sync.Mutex

const usersLockFile = "/run/frontdoor-harness-users.lock"

// EnsureUnixUser creates the local user name (home directory, bash) if it is
// missing, and makes sure its password field is "*": sshd with UsePAM no
// refuses accounts whose password is locked ("!"), even for certificates.
// It is idempotent and safe to call concurrently, also from several
// processes.
func EnsureUnixUser(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("harness: invalid user name %q", name)
	}
	usersLock.Lock()
	defer usersLock.Unlock()
	lf, err := os.OpenFile(usersLockFile, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("harness: lock %s: %w", usersLockFile, err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)

	if _, err := user.Lookup(name); err != nil {
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return fmt.Errorf("harness: look up user %s: %w", name, err)
		}
		if out, err := exec.Command("useradd", "-m", "-s", "/bin/bash", "-p", "*", name).CombinedOutput(); err != nil {
			return fmt.Errorf("harness: useradd %s: %v: %s", name, err, out)
		}
	}
	locked, err := passwordLocked(name)
	if err != nil {
		return err
	}
	if locked {
		if out, err := exec.Command("usermod", "-p", "*", name).CombinedOutput(); err != nil {
			return fmt.Errorf("harness: usermod %s: %v: %s", name, err, out)
		}
	}
	return nil
}

// passwordLocked reports whether name's shadow password starts with "!".
func passwordLocked(name string) (bool, error) {
	b, err := os.ReadFile("/etc/shadow")
	if err != nil {
		return false, fmt.Errorf("harness: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) >= 2 && f[0] == name {
			return strings.HasPrefix(f[1], "!"), nil
		}
	}
	return false, nil
}

// UnixIDs returns a local user's uid and gid.
func UnixIDs(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, nil
}

// WaitFor calls cond until it returns nil, ctx ends or timeout passes, with
// a short growing pause between calls. The error names the last failure, so
// a test that times out says what it was waiting for.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pause := 5 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("gave up after %s: %w", timeout, err)
		case <-t.C:
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

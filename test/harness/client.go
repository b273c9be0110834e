package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Client runs the real OpenSSH client programs against one SSH server (a
// gateway or a node), isolated from the machine's ssh configuration: no
// ~/.ssh/config, only the given known_hosts and key, no prompts.
type Client struct {
	Host       string
	Port       int
	KnownHosts string // UserKnownHostsFile; StrictHostKeyChecking=yes
	Identity   string // private key file; IdentitiesOnly=yes
	// Options are extra "-o" options ("ConnectTimeout=15"). ssh keeps the
	// first value it sees for an option, so these cannot override the
	// harness's own (StrictHostKeyChecking, BatchMode, IdentitiesOnly).
	Options []string
	// Askpass, if set, is a program printing the password (see
	// WriteAskpass): password and keyboard-interactive logins are then
	// answered by it instead of being disabled by BatchMode.
	Askpass string
	// LogLevel is ssh's LogLevel (default INFO, ssh's own default: it shows
	// the server's banner and messages such as the port allocated for
	// "-R 0:…"; ERROR hides them, as ssh -q does).
	LogLevel string
	// Env is added to the client's environment (SSH_AUTH_SOCK=…, …). The
	// rest is a minimal PATH/HOME/LANG environment: the caller's
	// SSH_AUTH_SOCK never leaks in.
	Env []string
}

// commonOptions are the "-o" options of every client program.
func (c *Client) commonOptions() []string {
	opts := []string{
		"-F", "/dev/null",
		"-o", "UserKnownHostsFile=" + c.KnownHosts,
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "ConnectTimeout=15",
	}
	if c.Askpass == "" {
		opts = append(opts, "-o", "BatchMode=yes")
	} else {
		opts = append(opts, "-o", "BatchMode=no", "-o", "NumberOfPasswordPrompts=1")
	}
	if c.LogLevel != "" {
		opts = append(opts, "-o", "LogLevel="+c.LogLevel)
	} else {
		opts = append(opts, "-o", "LogLevel=INFO")
	}
	if c.Identity != "" {
		opts = append(opts, "-o", "IdentitiesOnly=yes", "-i", c.Identity)
	} else {
		opts = append(opts, "-o", "PubkeyAuthentication=no")
	}
	for _, o := range c.Options {
		opts = append(opts, "-o", o)
	}
	return opts
}

// SSHArgs are the arguments of `ssh` logging in as login and running args
// (none: a shell), before any local options the caller adds in front of
// args. Options given in args must come before the first non-option, as
// with ssh itself: SSHArgs("alice", "-N", "-L", "…").
func (c *Client) SSHArgs(login string, args ...string) []string {
	a := c.commonOptions()
	a = append(a, "-p", strconv.Itoa(c.Port), "-l", login)
	// Split the caller's ssh options from the remote command.
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if takesValue(args[i]) && i+1 < len(args) {
			a = append(a, args[i], args[i+1])
			i += 2
			continue
		}
		a = append(a, args[i])
		i++
	}
	a = append(a, c.Host)
	return append(a, args[i:]...)
}

// takesValue reports whether a short ssh option consumes the next argument.
func takesValue(opt string) bool {
	if len(opt) != 2 {
		return false
	}
	return strings.ContainsRune("BbcDEeFIiJLlmOoPpQRSWw", rune(opt[1]))
}

// SSH returns an `ssh` command logging in as login; args are ssh options
// followed by the remote command (see SSHArgs).
func (c *Client) SSH(ctx context.Context, login string, args ...string) *exec.Cmd {
	return c.command(ctx, "ssh", c.SSHArgs(login, args...)...)
}

// SCP returns an `scp` command; remote paths are written "REMOTE:path" and
// become login@host:path. extra options ("-O" for the legacy protocol) may
// lead args.
func (c *Client) SCP(ctx context.Context, login string, args ...string) *exec.Cmd {
	a := c.commonOptions()
	a = append(a, "-P", strconv.Itoa(c.Port), "-q")
	for _, x := range args {
		if rest, ok := strings.CutPrefix(x, "REMOTE:"); ok {
			x = login + "@" + c.Host + ":" + rest
		}
		a = append(a, x)
	}
	return c.command(ctx, "scp", a...)
}

// SFTP returns an `sftp` command running the batch file (-b) as login.
func (c *Client) SFTP(ctx context.Context, login, batchFile string) *exec.Cmd {
	a := c.commonOptions()
	a = append(a, "-P", strconv.Itoa(c.Port), "-b", batchFile, login+"@"+c.Host)
	return c.command(ctx, "sftp", a...)
}

// Rsync returns an `rsync -e ssh…` command; remote paths are written
// "REMOTE:path".
func (c *Client) Rsync(ctx context.Context, login string, args ...string) *exec.Cmd {
	rsh := append([]string{"ssh"}, c.commonOptions()...)
	rsh = append(rsh, "-p", strconv.Itoa(c.Port))
	a := []string{"-e", shellJoin(rsh)}
	for _, x := range args {
		if rest, ok := strings.CutPrefix(x, "REMOTE:"); ok {
			x = login + "@" + c.Host + ":" + rest
		}
		a = append(a, x)
	}
	return c.command(ctx, "rsync", a...)
}

func (c *Client) command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}, c.Env...)
	if c.Askpass != "" {
		cmd.Env = append(cmd.Env, "SSH_ASKPASS="+c.Askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	}
	// Do not hang forever on a child that keeps our pipes open.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// RunTimeout bounds Run when the command's context has no earlier deadline.
const RunTimeout = 2 * time.Minute

// Result is what a client program did.
type Result struct {
	Stdout, Stderr []byte
	// ExitCode is the exit status, or -1 if the program did not exit
	// normally (killed, not started).
	ExitCode int
	// Err is the error from starting or waiting for the program, nil on
	// exit status 0.
	Err error
}

// String summarises a result for test failure messages.
func (r Result) String() string {
	return fmt.Sprintf("exit %d (%v)\nstdout: %s\nstderr: %s", r.ExitCode, r.Err, clip(r.Stdout), clip(r.Stderr))
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// Run runs cmd with stdin (nil: empty) and collects its output, killing it
// after RunTimeout. A Stdout
// already set on cmd is kept (Result.Stdout is then empty).
func Run(cmd *exec.Cmd, stdin io.Reader) Result {
	var stdout, stderr bytes.Buffer
	cmd.Stdin = stdin
	if cmd.Stdout == nil {
		cmd.Stdout = &stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	var err error
	if err = cmd.Start(); err == nil {
		kill := time.AfterFunc(RunTimeout, func() { cmd.Process.Kill() })
		err = cmd.Wait()
		kill.Stop()
	}
	r := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Err: err, ExitCode: -1}
	var ee *exec.ExitError
	switch {
	case err == nil:
		r.ExitCode = 0
	case errors.As(err, &ee):
		r.ExitCode = ee.ExitCode()
	}
	return r
}

// shellJoin quotes args for sh (rsync's -e is split by a shell-like parser).
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=/.:,+@") == "" {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// WriteAskpass writes an SSH_ASKPASS program into dir that prints password.
func WriteAskpass(dir, password string) (string, error) {
	path := filepath.Join(dir, "askpass-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	script := "#!/bin/sh\nprintf '%s\\n' " + shellJoin([]string{password}) + "\n"
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		return "", fmt.Errorf("harness: %w", err)
	}
	return path, nil
}

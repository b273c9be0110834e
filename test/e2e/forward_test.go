package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/proxy"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// echoServer listens on network/addr ("tcp" 127.0.0.1:0 or a "unix" path)
// and echoes every connection; it is closed when the test ends.
func echoServer(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	if network == "unix" {
		os.Chmod(addr, 0o777) // node-side users connect to it too
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln
}

// roundTrip writes a line on c and expects it echoed back.
func roundTrip(c net.Conn, msg string) error {
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading echo of %q: %w", msg, err)
	}
	if line != msg+"\n" {
		return fmt.Errorf("echo = %q, want %q", line, msg)
	}
	return nil
}

// bg is an ssh process running in the background (a forwarding).
type bg struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	stdout *syncBuffer
	done   chan struct{}
	err    error
}

// startBG starts cmd and stops it when the test ends.
func startBG(t *testing.T, cmd *exec.Cmd, stdin io.Reader) *bg {
	t.Helper()
	b := &bg{cmd: cmd, stderr: &syncBuffer{}, stdout: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, b.stdout, b.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.err = cmd.Wait(); close(b.done) }()
	t.Cleanup(b.stop)
	return b
}

func (b *bg) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

func (b *bg) stop() {
	if !b.exited() {
		b.cmd.Process.Kill()
	}
	<-b.done
}

// waitDial waits until dial succeeds while b still runs.
func (b *bg) waitDial(ctx context.Context, dial func() (net.Conn, error)) error {
	return harness.WaitFor(ctx, 45*time.Second, func() error {
		if b.exited() {
			return fmt.Errorf("ssh exited (%v): %s", b.err, b.stderr.String())
		}
		c, err := dial()
		if err != nil {
			return err
		}
		c.Close()
		return nil
	})
}

// forwardWithFreePort starts ssh with a forwarding on a free local port
// (args contain "PORT"), retrying if the port is taken meanwhile.
func forwardWithFreePort(t *testing.T, ctx context.Context, c *harness.Client, login string, args ...string) (*bg, int) {
	t.Helper()
	for range 4 {
		port, err := harness.FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		a := make([]string, len(args))
		for i, x := range args {
			a[i] = strings.ReplaceAll(x, "PORT", strconv.Itoa(port))
		}
		b := startBG(t, c.SSH(ctx, login, append([]string{"-o", "ExitOnForwardFailure=yes"}, a...)...), nil)
		err = b.waitDial(ctx, func() (net.Conn, error) { return net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second) })
		if err == nil {
			return b, port
		}
		if !strings.Contains(b.stderr.String(), "Address already in use") {
			t.Fatal(err)
		}
		b.stop()
	}
	t.Fatal("no free local port after 4 tries")
	return nil, 0
}

// TestLocalForwardTCP: ssh -L to a TCP port reachable from the node
// (direct-tcpip).
func TestLocalForwardTCP(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	echo := echoServer(t, "tcp", "127.0.0.1:0")
	local := filepath.Join(t.TempDir(), "l.sock")
	b := startBG(t, client(alice).SSH(ctx, aliceName, "-N", "-o", "ExitOnForwardFailure=yes", "-L", local+":"+echo.Addr().String()), nil)
	dial := func() (net.Conn, error) { return net.Dial("unix", local) }
	if err := b.waitDial(ctx, dial); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		c, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		if err := roundTrip(c, fmt.Sprintf("local-tcp-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLocalForwardUnixSocket: ssh -L to a Unix socket on the node
// (direct-streamlocal@openssh.com).
func TestLocalForwardUnixSocket(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	remote := filepath.Join(userDir(t, alice), "echo.sock")
	echoServer(t, "unix", remote)
	local := filepath.Join(t.TempDir(), "l.sock")
	b := startBG(t, client(alice).SSH(ctx, aliceName, "-N", "-o", "ExitOnForwardFailure=yes", "-L", local+":"+remote), nil)
	dial := func() (net.Conn, error) { return net.Dial("unix", local) }
	if err := b.waitDial(ctx, dial); err != nil {
		t.Fatal(err)
	}
	c, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(c, "local-streamlocal"); err != nil {
		t.Fatal(err)
	}
}

var allocatedPort = regexp.MustCompile(`Allocated port (\d+) for remote forward`)

// TestRemoteForward: ssh -R with a port the node allocates (tcpip-forward,
// forwarded-tcpip, the allocated port in the reply) and to a Unix socket
// on the node (streamlocal-forward, forwarded-streamlocal).
func TestRemoteForward(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	echo := echoServer(t, "tcp", "127.0.0.1:0")
	t.Run("tcp", func(t *testing.T) {
		// ssh's default LogLevel INFO prints the allocated port.
		b := startBG(t, client(alice).SSH(ctx, aliceName+"+login1", "-N", "-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:0:"+echo.Addr().String()), nil)
		var port string
		if err := harness.WaitFor(ctx, 45*time.Second, func() error {
			if m := allocatedPort.FindStringSubmatch(b.stderr.String()); m != nil {
				port = m[1]
				return nil
			}
			if b.exited() {
				return fmt.Errorf("ssh exited: %s", b.stderr.String())
			}
			return errors.New("no port allocated yet")
		}); err != nil {
			t.Fatal(err)
		}
		// The node (login1, this machine) listens on 127.0.0.1:port.
		for i := range 3 {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := roundTrip(c, fmt.Sprintf("remote-tcp-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("unix", func(t *testing.T) {
		remote := filepath.Join(userDir(t, alice), "r.sock")
		b := startBG(t, client(alice).SSH(ctx, aliceName, "-N", "-o", "ExitOnForwardFailure=yes", "-R", remote+":"+echo.Addr().String()), nil)
		dial := func() (net.Conn, error) { return net.Dial("unix", remote) }
		if err := b.waitDial(ctx, dial); err != nil {
			t.Fatal(err)
		}
		c, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		if err := roundTrip(c, "remote-streamlocal"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDynamicForwardSOCKS: ssh -D, then SOCKS5 connections through it.
func TestDynamicForwardSOCKS(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	echo := echoServer(t, "tcp", "127.0.0.1:0")
	_, port := forwardWithFreePort(t, ctx, client(alice), aliceName, "-N", "-D", "127.0.0.1:PORT")
	socks, err := proxy.SOCKS5("tcp", "127.0.0.1:"+strconv.Itoa(port), nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		c, err := socks.Dial("tcp", echo.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if err := roundTrip(c, fmt.Sprintf("socks-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestForwardingDeniedByPolicy: bob's rule grants no forwarding: -L
// channels and -R requests are refused, while his shell works.
func TestForwardingDeniedByPolicy(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	echo := echoServer(t, "tcp", "127.0.0.1:0")
	r := run(client(bob).SSH(ctx, bobName, "-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:0:"+echo.Addr().String(), "true"), nil)
	if r.ExitCode != 255 || !strings.Contains(string(r.Stderr), "remote port forwarding failed") {
		t.Fatalf("-R for bob: want refusal, got %s", r)
	}
	local := filepath.Join(t.TempDir(), "l.sock")
	b := startBG(t, client(bob).SSH(ctx, bobName, "-N", "-L", local+":"+echo.Addr().String()), nil)
	if err := b.waitDial(ctx, func() (net.Conn, error) { return net.Dial("unix", local) }); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("unix", local)
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(conn, "must-not-pass"); err == nil {
		t.Fatal("bob's -L reached the echo server despite his policy")
	}
	if err := harness.WaitFor(ctx, 30*time.Second, func() error {
		if !strings.Contains(b.stderr.String(), "administratively prohibited") {
			return fmt.Errorf("stderr: %q", b.stderr.String())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r = run(client(bob).SSH(ctx, bobName, "echo shell-ok"), nil)
	mustExit(t, r, 0)
}

// TestAgentForwarding: ssh -A; ssh-add -l on the node lists the client's
// key. Bob (no agent right) gets no agent on the node.
func TestAgentForwarding(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agent := startBG(t, exec.CommandContext(ctx, "ssh-agent", "-D", "-a", sock), nil)
	if err := agent.waitDial(ctx, func() (net.Conn, error) { return net.Dial("unix", sock) }); err != nil {
		t.Fatal(err)
	}
	for _, u := range []*harness.User{alice, bob} {
		add := exec.CommandContext(ctx, "ssh-add", u.KeyPath)
		add.Env = []string{"SSH_AUTH_SOCK=" + sock, "PATH=/usr/bin:/bin"}
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
	}
	fp := func(u *harness.User) string {
		out, err := exec.Command("ssh-keygen", "-l", "-f", u.KeyPath+".pub").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(out))[1]
	}
	c := client(alice)
	c.Env = []string{"SSH_AUTH_SOCK=" + sock}
	r := run(c.SSH(ctx, aliceName, "-A", "ssh-add -l"), nil)
	mustExit(t, r, 0)
	if !strings.Contains(string(r.Stdout), fp(alice)) || !strings.Contains(string(r.Stdout), fp(bob)) {
		t.Fatalf("ssh-add -l on the node does not list the client's keys %s, %s: %s", fp(alice), fp(bob), r)
	}
	c = client(bob)
	c.Env = []string{"SSH_AUTH_SOCK=" + sock}
	r = run(c.SSH(ctx, bobName, "-A", "ssh-add -l; echo agent=$SSH_AUTH_SOCK"), nil)
	if strings.Contains(string(r.Stdout), fp(bob)) || !strings.Contains(string(r.Stdout), "agent=\n") {
		t.Fatalf("bob got an agent on the node despite his policy: %s", r)
	}
}

// TestControlMaster: one multiplexed connection carries several sessions
// at once (OpenSSH ControlMaster), all over the same backend connection.
func TestControlMaster(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	ctl := filepath.Join(t.TempDir(), "cm.sock")
	c := client(alice)
	master := startBG(t, c.SSH(ctx, aliceName, "-N", "-o", "ControlMaster=yes", "-o", "ControlPath="+ctl), nil)
	if err := master.waitDial(ctx, func() (net.Conn, error) { return net.Dial("unix", ctl) }); err != nil {
		t.Fatal(err)
	}
	const n = 8
	results := make([]harness.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = run(c.SSH(ctx, aliceName, "-o", "ControlMaster=no", "-o", "ControlPath="+ctl,
				fmt.Sprintf(`echo "$SSH_CONNECTION"; sleep 0.3; exit %d`, i)), nil)
		}()
	}
	wg.Wait()
	var conn string
	for i, r := range results {
		mustExit(t, r, i)
		if conn == "" {
			conn = string(r.Stdout)
		}
		if string(r.Stdout) != conn {
			t.Fatalf("session %d came over another connection: %q vs %q", i, r.Stdout, conn)
		}
	}
	r := run(c.SSH(ctx, aliceName, "-o", "ControlPath="+ctl, "-O", "check"), nil)
	mustExit(t, r, 0)
	r = run(c.SSH(ctx, aliceName, "-o", "ControlPath="+ctl, "-O", "exit"), nil)
	mustExit(t, r, 0)
	select {
	case <-master.done:
	case <-time.After(15 * time.Second):
		t.Fatal("master did not exit after -O exit")
	}
}

// TestLocalForwardDestinations: -L and -D lead to the login node's own
// services (localhost, its loopback, its name) and nowhere else by
// default: a login node is not a jump host into the cluster network.
func TestLocalForwardDestinations(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	echo := echoServer(t, "tcp", "127.0.0.1:0")
	c, err := gw.DialGo(ctx, aliceName, alice)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn, err := c.Dial("tcp", echo.Addr().String())
	if err != nil {
		t.Fatalf("-L to the node's own loopback refused: %v", err)
	}
	if err := roundTrip(conn, "own-service"); err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{"192.0.2.1:80", "10.0.0.1:22", "metadata.internal:80"} {
		if conn, err := c.Dial("tcp", dest); err == nil {
			conn.Close()
			t.Fatalf("-L to %s accepted", dest)
		} else if !strings.Contains(err.Error(), "not allowed by frontdoor policy") {
			t.Fatalf("-L to %s: %v, want the gateway's refusal", dest, err)
		}
	}
}

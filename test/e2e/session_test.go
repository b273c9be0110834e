package e2e_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

func TestExecExitCodes(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	for _, code := range []int{0, 1, 42} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			r := run(client(alice).SSH(ctx, aliceName, fmt.Sprintf("echo out-%d; echo err-%d >&2; exit %d", code, code, code)), nil)
			mustExit(t, r, code)
			if got := string(r.Stdout); got != fmt.Sprintf("out-%d\n", code) {
				t.Errorf("stdout = %q", got)
			}
			// stderr stays apart from stdout (extended data relayed as such).
			if got := string(r.Stderr); got != fmt.Sprintf("err-%d\n", code) {
				t.Errorf("stderr = %q", got)
			}
		})
	}
}

// TestStdinEOF: `ssh host wc -c < file` only ends if the client's EOF
// reaches the node.
func TestStdinEOF(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	in := bytes.Repeat([]byte("0123456789abcdef"), 12345)
	r := run(client(alice).SSH(ctx, aliceName, "wc -c"), bytes.NewReader(in))
	mustExit(t, r, 0)
	if got := strings.TrimSpace(string(r.Stdout)); got != strconv.Itoa(len(in)) {
		t.Fatalf("wc -c = %q, want %d", got, len(in))
	}
	// A pipe through the node: stdin in, transformed stdout out.
	r = run(client(alice).SSH(ctx, aliceName, "tr a-z A-Z"), strings.NewReader("hello through frontdoor\n"))
	mustExit(t, r, 0)
	if got := string(r.Stdout); got != "HELLO THROUGH FRONTDOOR\n" {
		t.Fatalf("tr = %q", got)
	}
}

// TestExitSignal: a command killed by a signal ends the client exactly as it
// does against the node directly (exit-signal relayed).
func TestExitSignal(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	const cmd = "echo before; kill -TERM $$; echo after"
	via := run(client(alice).SSH(ctx, aliceName, cmd), nil)
	direct := run(directClient(alice, login1).SSH(ctx, aliceName, cmd), nil)
	if direct.ExitCode == 0 {
		t.Fatalf("direct login did not report the signal: %s", direct)
	}
	if via.ExitCode != direct.ExitCode || string(via.Stdout) != string(direct.Stdout) || string(via.Stderr) != string(direct.Stderr) {
		t.Fatalf("through the gateway:\n%s\ndirect:\n%s", via, direct)
	}
	if string(via.Stdout) != "before\n" {
		t.Fatalf("stdout = %q", via.Stdout)
	}
	t.Logf("direct and via the gateway alike: exit %d, stderr %q", via.ExitCode, via.Stderr)
	// OpenSSH's client shows exit-signal only as 255, which a lost
	// exit-signal would also give: check the signal itself with Go's client.
	c, err := gw.DialGo(ctx, aliceName, alice)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	err = s.Run("kill -TERM $$")
	if ee, ok := err.(*ssh.ExitError); !ok || ee.Signal() != "TERM" {
		t.Fatalf("want exit-signal TERM, got %#v", err)
	}
}

// TestSignalRequest: a "signal" channel request from the client reaches the
// node's process (OpenSSH's client cannot send one; Go's can).
func TestSignalRequest(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	c, err := gw.DialGo(ctx, aliceName, alice)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out syncBuffer
	s.Stdout = &out
	if err := s.Start(`trap 'echo got-usr1; exit 7' USR1; echo ready; while :; do sleep 0.05; done`); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 45*time.Second, func() error {
		if !strings.Contains(out.String(), "ready") {
			return fmt.Errorf("no ready yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Signal(ssh.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	err = s.Wait()
	ee, ok := err.(*ssh.ExitError)
	if !ok || ee.ExitStatus() != 7 {
		t.Fatalf("want exit 7 after SIGUSR1, got %v; output %q", err, out.String())
	}
}

// TestUserPlusNode: "user+node" lands on that node, seen from the node's
// own SSH_CONNECTION (the nodes share this host, but not an address).
func TestUserPlusNode(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	for _, n := range []*harness.Node{login1, login2} {
		r := run(client(alice).SSH(ctx, aliceName+"+"+n.Name(), `echo "$USER $SSH_CONNECTION"`), nil)
		mustExit(t, r, 0)
		f := strings.Fields(string(r.Stdout))
		if len(f) != 5 || f[0] != aliceName || f[3] != n.Host() || f[4] != strconv.Itoa(n.Port()) {
			t.Fatalf("%s: want user %s on %s, got %q", n.Name(), aliceName, n.Addr(), r.Stdout)
		}
	}
}

// TestEnvPassed: SendEnv variables the node accepts (AcceptEnv) arrive,
// next to the gateway's own FRONTDOOR_* variables — which a client cannot
// set or override.
func TestEnvPassed(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	c := client(alice)
	c.Env = append(c.Env, "LC_FRONTDOOR_TEST=hello-env", "FRONTDOOR_NODE=forged", "FRONTDOOR_RULE=forged")
	r := run(c.SSH(ctx, aliceName+"+login2", "-o", "SendEnv=LC_FRONTDOOR_TEST FRONTDOOR_NODE FRONTDOOR_RULE",
		`echo "[$LC_FRONTDOOR_TEST] [$FRONTDOOR_NODE] [$FRONTDOOR_POOL] [$FRONTDOOR_RULE] [${#FRONTDOOR_SESSION}]"`), nil)
	mustExit(t, r, 0)
	if got := string(r.Stdout); got != "[hello-env] [login2] [general] [everyone] [16]\n" {
		t.Fatalf("env on node = %q", got)
	}
}

// TestInteractivePTY: a login shell on a terminal; `stty size` follows the
// client's window as it is resized (window-change), and the shell's exit
// code comes back.
func TestInteractivePTY(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	term, err := harness.StartTerminal(client(alice).SSH(ctx, aliceName, "-tt"), 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	step := func(from int, input, want string) int {
		t.Helper()
		if input != "" {
			if err := term.Write(input); err != nil {
				t.Fatal(err)
			}
		}
		end, err := term.Expect(ctx, from, want, 45*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return end
	}
	// The gateway's banner comes first (interactive logins only), then
	// the login shell's prompt (Debian's skeleton .bashrc: user@host:~$).
	pos := step(0, "", "frontdoor: "+aliceName+" on login")
	pos = step(pos, "", aliceName+"@")
	// $((6*7)) is echoed as typed; only the shell's output reads 42.
	pos = step(pos, "echo marker-$((6*7))\r", "marker-42")
	pos = step(pos, "tty; stty size\r", "24 80")
	if !strings.Contains(term.Output(), "/dev/pts/") {
		t.Errorf("no pty on the node: %q", term.Output())
	}
	if err := term.Resize(40, 132); err != nil {
		t.Fatal(err)
	}
	// The resize reaches the node asynchronously: ask until it is seen.
	if err := harness.WaitFor(ctx, 45*time.Second, func() error {
		term.Write("stty size\r")
		if _, err := term.Expect(ctx, pos, "40 132", 500*time.Millisecond); err != nil {
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	step(pos, "exit 3\r", "exit")
	code, err := term.Wait(45 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Fatalf("ssh exit = %d, want 3; output %q", code, term.Output())
	}
}

// TestPTYNotGrantedWithoutRequest: plain exec has no terminal on the node.
func TestExecHasNoPTY(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	r := run(client(alice).SSH(ctx, aliceName, "tty"), nil)
	if r.ExitCode == 0 || !strings.Contains(string(r.Stdout), "not a tty") {
		t.Fatalf("want 'not a tty', got %s", r)
	}
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStderrTailNotLost: output on stderr that is still being relayed when
// stdout reaches EOF must arrive whole, and before the channel's EOF.
// (Regression test for BUGS.md #1: the relay sent EOF to the client as soon
// as stdout ended, dropping the rest of stderr.)
func TestStderrTailNotLost(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	for i := range 3 {
		r := run(client(alice).SSH(ctx, aliceName, "echo out; exec 1>&-; head -c 300000 /dev/zero | tr '\\0' e >&2"), nil)
		mustExit(t, r, 0)
		if string(r.Stdout) != "out\n" || len(r.Stderr) != 300000 {
			t.Fatalf("try %d: stdout %q, %d bytes of stderr (want 300000)", i, r.Stdout, len(r.Stderr))
		}
	}
}

// TestExitStatusSurvivesEarlyClose: a client may close a session channel as
// soon as EOF went both ways (OpenSSH's ControlMaster does); the node's
// exit-status, which sshd sends before answering that close, must still
// reach it. (Regression test for BUGS.md #2.)
func TestExitStatusSurvivesEarlyClose(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	c, err := gw.DialGo(ctx, aliceName, alice)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// 100 sessions, 4 at a time over the one connection: the loss is a
	// race, so give it chances.
	var missing atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				ok, err := exitStatusAfterEarlyClose(c, "echo hi; exit 3")
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					missing.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := missing.Load(); n > 0 {
		t.Fatalf("exit-status lost in %d of 100 sessions closed right after EOF", n)
	}
}

// exitStatusAfterEarlyClose runs cmd on a raw session channel, closes the
// channel as soon as stdout reached EOF and reports whether an exit-status
// arrived before the channel ended.
func exitStatusAfterEarlyClose(c *ssh.Client, cmd string) (bool, error) {
	ch, reqs, err := c.OpenChannel("session", nil)
	if err != nil {
		return false, err
	}
	got := make(chan bool, 1)
	go func() {
		seen := false
		for r := range reqs {
			if r.Type == "exit-status" {
				seen = true
			}
			if r.WantReply {
				r.Reply(false, nil)
			}
		}
		got <- seen
	}()
	ok, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ Command string }{cmd}))
	if err != nil || !ok {
		ch.Close()
		<-got
		// err EOF: the channel closed before the exec reply came (BUGS.md #3).
		return false, fmt.Errorf("exec request: ok=%v err=%v (reply lost, see BUGS.md #3)", ok, err)
	}
	ch.CloseWrite()
	io.Copy(io.Discard, ch)
	ch.Close()
	return <-got, nil
}

// TestSlurmGrantInSession: a rule with a Slurm grant puts it in every
// session's environment, job defaults included when the rule opts in.
func TestSlurmGrantInSession(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	r := run(client(erin).SSH(ctx, erinName,
		`echo "[$FRONTDOOR_RULE] [$FRONTDOOR_ACCOUNT] [$FRONTDOOR_PARTITION] [$FRONTDOOR_PARTITIONS] [$FRONTDOOR_QOS] [$FRONTDOOR_GPU_LIMIT] [$SBATCH_ACCOUNT] [$SBATCH_PARTITION] [$SLURM_ACCOUNT] [$SALLOC_QOS]"`), nil)
	mustExit(t, r, 0)
	want := "[gpu-lab] [gpulab] [h100] [general,h100] [fd-gpu-lab] [2] [gpulab] [h100] [gpulab] [fd-gpu-lab]\n"
	if got := string(r.Stdout); got != want {
		t.Fatalf("env on node = %q, want %q", got, want)
	}
	// A rule without a grant sets none of it.
	r = run(client(alice).SSH(ctx, aliceName, `echo "[${FRONTDOOR_ACCOUNT-unset}] [${SBATCH_ACCOUNT-unset}]"`), nil)
	mustExit(t, r, 0)
	if got := string(r.Stdout); got != "[unset] [unset]\n" {
		t.Fatalf("alice's env = %q", got)
	}
}

// TestIdleSessionClosed: an interactive session that relays nothing for the
// rule's idle_timeout is warned, then closed; typing in time keeps it.
func TestIdleSessionClosed(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	term, err := harness.StartTerminal(client(erin).SSH(ctx, erinName, "-tt"), 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	pos, err := term.Expect(ctx, 0, "Slurm: account gpulab, partitions general,h100 (default h100)", 45*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pos, err = term.Expect(ctx, pos, erinName+"@", 45*time.Second); err != nil {
		t.Fatal(err)
	}
	// Activity keeps the session: after the warning, a command a second
	// for twice the idle timeout.
	if pos, err = term.Expect(ctx, pos, "will be closed in", 2*idleTimeout); err != nil {
		t.Fatal(err)
	}
	for i := 0; time.Duration(i)*time.Second < 2*idleTimeout; i++ {
		word := fmt.Sprintf("tick-%d-done", i)
		if err := term.Write("echo " + strings.ReplaceAll(word, "-done", "-do''ne") + "\r"); err != nil {
			t.Fatal(err)
		}
		if pos, err = term.Expect(ctx, pos, word, 10*time.Second); err != nil {
			t.Fatalf("typing kept the session? %v", err)
		}
		time.Sleep(time.Second) // the user's pace, not a wait for an event
	}
	if strings.Contains(term.Output(), "closing this session") {
		t.Fatalf("an active session was closed:\n%s", term.Output())
	}
	start := time.Now()
	if _, err = term.Expect(ctx, pos, "frontdoor: closing this session: idle for", 3*idleTimeout); err != nil {
		t.Fatal(err)
	}
	// The check runs every quarter of the timeout, so the close comes
	// between 3/4 of it and a little over it after the last activity.
	if el := time.Since(start); el < idleTimeout*3/4-500*time.Millisecond {
		t.Errorf("closed %v after the last activity; idle_timeout is %v", el, idleTimeout)
	}
	code, err := term.Wait(20 * time.Second)
	if err != nil {
		t.Fatalf("session not closed: %v", err)
	}
	if code == 0 {
		t.Errorf("ssh exited 0 after an idle close")
	}
	t.Logf("closed %v after the last activity (idle_timeout %v)", time.Since(start).Round(100*time.Millisecond), idleTimeout)
}

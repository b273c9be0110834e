package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// TestKeepalivesAnswered: the client's keepalives (ServerAliveInterval)
// are answered, so an idle session is not dropped as "not responding".
func TestKeepalivesAnswered(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	c := client(alice)
	// Unanswered, these drop the connection after about 4 s.
	c.Options = []string{"ServerAliveInterval=1", "ServerAliveCountMax=3"}
	r := run(c.SSH(ctx, aliceName, "sleep 7; echo alive"), nil)
	mustExit(t, r, 0)
	if string(r.Stdout) != "alive\n" {
		t.Fatalf("stdout %q", r.Stdout)
	}
}

// TestNodeHostKeysNotAnnounced: the node's hostkeys-00@openssh.com
// announcement must not reach the client, or a client with UpdateHostKeys
// would record the node's keys under the gateway's name.
func TestNodeHostKeysNotAnnounced(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	orig, err := os.ReadFile(gw.KnownHostsFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kh, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	c := client(alice)
	c.KnownHosts = kh
	c.Options = []string{"UpdateHostKeys=yes"}
	r := run(c.SSH(ctx, aliceName, "true"), nil)
	mustExit(t, r, 0)
	// A relayed announcement would also show as a failed proof ("server
	// gave bad signature"): the gateway cannot prove the node's keys.
	if len(r.Stderr) > 0 {
		t.Errorf("unexpected client messages: %s", r.Stderr)
	}
	after, err := os.ReadFile(kh)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*harness.Node{login1, login2} {
		key := strings.Fields(n.KnownHostsLine())[2]
		if bytes.Contains(after, []byte(key)) {
			t.Fatalf("the client learned node %s's host key through the gateway:\n%s", n.Name(), after)
		}
	}
}

// TestNodeSideDies: when the node's end of a session dies, the client is
// disconnected at once, not left hanging.
func TestNodeSideDies(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	start := time.Now()
	// $PPID is the sshd process serving this session on the node.
	// (Whether "up" still gets out before sshd dies is up to the node.)
	r := run(client(alice).SSH(ctx, aliceName, "echo up; kill -KILL $PPID; sleep 30"), nil)
	if r.ExitCode != 255 {
		t.Fatalf("want the connection dropped (255), got %s", r)
	}
	if d := time.Since(start); d > 25*time.Second {
		t.Fatalf("client noticed only after %s", d)
	}
}

// TestClientSideDies: when the client dies, the gateway closes the node
// connection, so a terminal session on the node ends (sshd hangs up its
// pty) instead of being left running.
func TestClientSideDies(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	marker := fmt.Sprintf("e2e-orphan-%d", time.Now().UnixNano())
	// A process on the node that lives exactly as long as its session:
	// "exec -a" names it so that it can be found.
	b := startBG(t, client(alice).SSH(ctx, aliceName, "-tt", "echo started; exec -a "+marker+" sleep 300"), nil)
	alive := func() (bool, error) {
		out, err := exec.Command("pgrep", "-u", aliceName, "-f", marker).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
				return false, nil
			}
			return false, err
		}
		return len(bytes.TrimSpace(out)) > 0, nil
	}
	if err := harness.WaitFor(ctx, 45*time.Second, func() error {
		if ok, err := alive(); err != nil || !ok {
			return fmt.Errorf("node process not running yet (%v); ssh stdout %q", err, b.stdout.String())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.cmd.Process.Kill() // SIGKILL: the client cannot say goodbye
	<-b.done
	if err := harness.WaitFor(ctx, 45*time.Second, func() error {
		ok, err := alive()
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("%s still runs on the node", marker)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

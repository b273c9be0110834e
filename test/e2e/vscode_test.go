package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
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

// VS Code Remote-SSH runs `ssh … HOST bash`, writes its install script to
// bash's stdin, keeps stdin open for the life of the connection, and reads
// "listeningOn==PORT==" (or a socket path) from stdout. These scripts do
// what the VS Code server does: start a server on the node (socat echoing,
// here) and announce where it listens. Closing stdin ends the script, which
// stops the server. socat gets a real listen backlog (its default is 5),
// as the VS Code server has: the client opens several connections at once.

// vscodeTCPScript starts an echo server on a node port the kernel picks.
const vscodeTCPScript = `set -e
LOG=$(mktemp)
socat -d -d TCP-LISTEN:0,bind=127.0.0.1,reuseaddr,backlog=128,fork EXEC:cat </dev/null >/dev/null 2>"$LOG" &
SERVER=$!
for i in $(seq 400); do PORT=$(sed -n 's/.* listening on .*:\([0-9][0-9]*\)$/\1/p' "$LOG"); [ -n "$PORT" ] && break; sleep 0.05; done
echo "listeningOn==$PORT=="
cat >/dev/null; kill $SERVER; rm -f "$LOG"; echo "server stopped"
`

// vscodeSocketScript starts an echo server on a Unix socket under
// /run/user/UID, as recent VS Code versions do.
const vscodeSocketScript = `set -e
SOCK=%s
socat UNIX-LISTEN:$SOCK,backlog=128,fork EXEC:cat </dev/null >/dev/null 2>/dev/null &
SERVER=$!
for i in $(seq 400); do [ -S "$SOCK" ] && break; sleep 0.05; done
echo "listeningOn==$SOCK=="
cat >/dev/null; kill $SERVER; rm -f "$SOCK"; echo "server stopped"
`

var listeningOn = regexp.MustCompile(`listeningOn==(.+)==`)

// vscodeSession is `ssh -T <forwarding> -o ConnectTimeout=15 HOST bash`
// running a script; the local port of the forwarding is picked free
// ("PORT" in fwd), retrying if it was taken meanwhile.
type vscodeSession struct {
	b     *bg
	stdin io.WriteCloser
	port  int
	where string // what the script announced
}

func startVSCode(t *testing.T, ctx context.Context, fwd []string, script string) *vscodeSession {
	t.Helper()
	for range 4 {
		port, err := harness.FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"-T"}
		for _, x := range fwd {
			args = append(args, strings.ReplaceAll(x, "PORT", strconv.Itoa(port)))
		}
		// ExitOnForwardFailure only so that a taken port is retried.
		args = append(args, "-o", "ConnectTimeout=15", "-o", "ExitOnForwardFailure=yes", "bash")
		pr, pw := io.Pipe()
		b := startBG(t, client(alice).SSH(ctx, aliceName, args...), pr)
		t.Cleanup(func() { pw.Close() })
		if _, err := io.WriteString(pw, script); err != nil {
			t.Fatal(err)
		}
		var where string
		err = harness.WaitFor(ctx, 60*time.Second, func() error {
			if m := listeningOn.FindStringSubmatch(b.stdout.String()); m != nil {
				where = m[1]
				return nil
			}
			if b.exited() {
				return fmt.Errorf("ssh exited (%v): %s", b.err, b.stderr.String())
			}
			return fmt.Errorf("no listeningOn yet; stdout %q", b.stdout.String())
		})
		if err == nil {
			return &vscodeSession{b: b, stdin: pw, port: port, where: where}
		}
		if !strings.Contains(b.stderr.String(), "Address already in use") {
			t.Fatal(err)
		}
		pw.Close()
		b.stop()
	}
	t.Fatal("no free local port after 4 tries")
	return nil
}

// finish closes stdin like VS Code closing the connection and expects the
// script to stop its server and ssh to exit 0.
func (v *vscodeSession) finish(t *testing.T) {
	t.Helper()
	v.stdin.Close()
	select {
	case <-v.b.done:
	case <-time.After(45 * time.Second):
		t.Fatalf("ssh did not exit after stdin closed; stderr %q", v.b.stderr.String())
	}
	if v.b.err != nil || !strings.Contains(v.b.stdout.String(), "server stopped") {
		t.Fatalf("ssh: %v; stdout %q; stderr %q", v.b.err, v.b.stdout.String(), v.b.stderr.String())
	}
}

// concurrently runs n round trips over connections from dial; a failure
// shows v's ssh stderr.
func concurrently(t *testing.T, v *vscodeSession, n int, dial func() (net.Conn, error)) {
	t.Helper()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial()
			if err != nil {
				errs <- err
				return
			}
			errs <- roundTrip(c, fmt.Sprintf("vscode-conn-%d", i))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("%v; ssh stderr: %s", err, v.b.stderr.String())
		}
	}
}

// TestVSCodeSOCKS: `ssh -T -D PORT -o ConnectTimeout=15 HOST bash` with
// the install script on stdin, then several SOCKS connections through the
// tunnel to the server the script started on the node.
func TestVSCodeSOCKS(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	v := startVSCode(t, ctx, []string{"-D", "PORT"}, vscodeTCPScript)
	if _, err := strconv.Atoi(v.where); err != nil {
		t.Fatalf("script announced %q, not a port", v.where)
	}
	socks, err := proxy.SOCKS5("tcp", "127.0.0.1:"+strconv.Itoa(v.port), nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	concurrently(t, v, 8, func() (net.Conn, error) { return socks.Dial("tcp", "127.0.0.1:"+v.where) })
	v.finish(t)
}

// TestVSCodeUnixSocket: `ssh -T -L 127.0.0.1:P:/run/user/UID/vscode-….sock
// HOST bash`, then several connections to the forwarded socket.
func TestVSCodeUnixSocket(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	uid, gid, err := harness.UnixIDs(aliceName)
	if err != nil {
		t.Fatal(err)
	}
	runDir := fmt.Sprintf("/run/user/%d", uid)
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(runDir, uid, gid); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(runDir, fmt.Sprintf("vscode-e2e-%d.sock", time.Now().UnixNano()))
	v := startVSCode(t, ctx, []string{"-L", "127.0.0.1:PORT:" + sock}, fmt.Sprintf(vscodeSocketScript, sock))
	if v.where != sock {
		t.Fatalf("script announced %q, want %q", v.where, sock)
	}
	concurrently(t, v, 8, func() (net.Conn, error) {
		return net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(v.port), 5*time.Second)
	})
	v.finish(t)
}

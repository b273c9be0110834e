package clustere2e_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// Changing a running gateway (docs/operations.md): reload in place,
// upgrade without drops, drain on SIGTERM. Every gateway here is the real
// binary, every session a real login to a real sshd, and each test checks
// what a user would see: sessions that go on with every byte intact,
// logins that never fail, notices on the terminal.

// status is the gateway's GET /v1/status.
func (w *world) status(ctx context.Context, g *gw) (admin.Status, error) {
	var st admin.Status
	err := harness.AdminGetJSON(ctx, g.admin, "/v1/status", &st)
	return st, err
}

// self is the process that answered a status; previous the one an upgrade
// left draining, if any.
func self(st admin.Status) admin.Process { return st.Processes[0] }

func previous(st admin.Status) *admin.Process {
	if len(st.Processes) < 2 {
		return nil
	}
	return &st.Processes[1]
}

// waitStatus polls g's status until cond holds, and returns it.
func (w *world) waitStatus(ctx context.Context, g *gw, timeout time.Duration, cond func(admin.Status) error) admin.Status {
	w.t.Helper()
	var st admin.Status
	if err := harness.WaitFor(ctx, timeout, func() error {
		var err error
		if st, err = w.status(ctx, g); err != nil {
			return err
		}
		return cond(st)
	}); err != nil {
		w.t.Fatalf("%s status: %v", g.name, err)
	}
	return st
}

// adopt stops, when the test ends, a gateway process the world did not
// start (the new process of an upgrade, started by the old one).
func (w *world) adopt(pid int) {
	w.t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGINT)
		if err := harness.WaitFor(context.Background(), 15*time.Second, func() error {
			if alive(pid) {
				return fmt.Errorf("pid %d still runs", pid)
			}
			return nil
		}); err != nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// alive reports whether pid runs (a zombie, exited and not yet reaped by
// whoever inherited it, does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(after, "Z")
}

// editConfig changes g's configuration file through the real types.
func editConfig(t *testing.T, g *gw, edit func(*config.Config)) {
	t.Helper()
	cfg, err := config.Load(g.cfg)
	if err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	if _, err := harness.WriteConfig(g.cfg, cfg); err != nil {
		t.Fatal(err)
	}
}

// lineOf is the 1-based line of the first occurrence of s in the file.
func lineOf(t *testing.T, path, s string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), s)
	if i < 0 {
		t.Fatalf("%s has no %q", path, s)
	}
	return strings.Count(string(b[:i]), "\n") + 1
}

// stream is a session relaying data both ways without a pause: the client
// writes random bytes to `cat` on the node and reads them back; both ends'
// checksums must agree when it ends.
type stream struct {
	client    *ssh.Client
	sess      *ssh.Session
	stdin     io.WriteCloser
	sent, got hash.Hash
	nSent     int64
	nGot      atomic.Int64
	stop      chan struct{}
	wrote     chan error
	read      chan error
}

// startStream logs u in through g with Go's client and starts the stream,
// about 800 KiB/s each way.
func (w *world) startStream(ctx context.Context, g *gw, u *harness.User) *stream {
	w.t.Helper()
	c, err := harness.DialSSH(ctx, g.sshAddr, u.Name, keys.HostPublicKey, ssh.PublicKeys(u.Signer))
	if err != nil {
		w.t.Fatalf("stream login via %s: %v", g.name, err)
	}
	s := &stream{client: c, sent: sha256.New(), got: sha256.New(), stop: make(chan struct{}), wrote: make(chan error, 1), read: make(chan error, 1)}
	w.t.Cleanup(func() { c.Close() })
	if s.sess, err = c.NewSession(); err != nil {
		w.t.Fatal(err)
	}
	if s.stdin, err = s.sess.StdinPipe(); err != nil {
		w.t.Fatal(err)
	}
	out, err := s.sess.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := s.sess.Start("cat"); err != nil {
		w.t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := out.Read(buf)
			s.got.Write(buf[:n])
			s.nGot.Add(int64(n))
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				s.read <- err
				return
			}
		}
	}()
	go func() {
		tick := time.NewTicker(20 * time.Millisecond) // the pace of the stream
		defer tick.Stop()
		chunk := make([]byte, 16<<10)
		for {
			select {
			case <-s.stop:
				s.wrote <- s.stdin.Close()
				return
			case <-tick.C:
			}
			rand.Read(chunk)
			if _, err := s.stdin.Write(chunk); err != nil {
				s.wrote <- err
				return
			}
			s.sent.Write(chunk)
			s.nSent += int64(len(chunk))
		}
	}()
	return s
}

// flowing waits until more bytes came back than had when it was called.
func (s *stream) flowing(ctx context.Context) error {
	from := s.nGot.Load()
	return harness.WaitFor(ctx, 20*time.Second, func() error {
		if n := s.nGot.Load(); n <= from {
			return fmt.Errorf("stream stalled at %d bytes", n)
		}
		return nil
	})
}

// finish ends the stream and compares what went with what came back.
func (s *stream) finish(t *testing.T) {
	t.Helper()
	close(s.stop)
	if err := <-s.wrote; err != nil {
		t.Fatalf("stream: writing: %v", err)
	}
	select {
	case err := <-s.read:
		if err != nil {
			t.Fatalf("stream: reading: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stream: the echo did not end")
	}
	if err := s.sess.Wait(); err != nil {
		t.Fatalf("stream: cat on the node: %v", err)
	}
	if s.nSent == 0 || s.nGot.Load() != s.nSent || string(s.sent.Sum(nil)) != string(s.got.Sum(nil)) {
		t.Fatalf("stream: sent %d bytes (sha256 %x), got %d back (sha256 %x)", s.nSent, s.sent.Sum(nil), s.nGot.Load(), s.got.Sum(nil))
	}
	t.Logf("stream: %d bytes each way, checksums equal", s.nSent)
	s.client.Close()
}

// forward opens ssh -L's channel (direct-tcpip) over c to addr, a node's
// sshd, and reads its banner.
func forward(c *ssh.Client, addr string) error {
	conn, err := c.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "SSH-2.0-") {
		return fmt.Errorf("forwarded connection: %q, %v", line, err)
	}
	return nil
}

// terminal is an interactive OpenSSH session (a pty and a shell) through
// g, ready at its prompt.
func (w *world) terminal(ctx context.Context, g *gw, u *harness.User) (*harness.Terminal, int) {
	w.t.Helper()
	term, err := harness.StartTerminal(w.client(g, u).SSH(ctx, u.Name, "-tt"), 24, 80)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(term.Close)
	pos, err := term.Expect(ctx, 0, u.Name+"@", 45*time.Second)
	if err != nil {
		w.t.Fatal(err)
	}
	return term, pos
}

// loginLoop logs u in through g over and over from n clients at once,
// until stopped, counting what worked and what did not.
type loginLoop struct {
	stop chan struct{}
	wg   sync.WaitGroup
	ok   atomic.Int64
	mu   sync.Mutex // mu protects errs
	errs []error
}

func (w *world) startLoginLoop(ctx context.Context, g *gw, u *harness.User, n int) *loginLoop {
	l := &loginLoop{stop: make(chan struct{})}
	for range n {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				if _, err := w.goNode(ctx, g, u.Name, u); err != nil {
					l.mu.Lock()
					l.errs = append(l.errs, fmt.Errorf("%s: %w", time.Now().Format("15:04:05.000"), err))
					l.mu.Unlock()
				} else {
					l.ok.Add(1)
				}
			}
		})
	}
	return l
}

// reach waits until n logins worked.
func (l *loginLoop) reach(ctx context.Context, n int64) error {
	return harness.WaitFor(ctx, 60*time.Second, func() error {
		if ok := l.ok.Load(); ok < n {
			l.mu.Lock()
			defer l.mu.Unlock()
			return fmt.Errorf("%d logins worked, waiting for %d; failures: %v", ok, n, errors.Join(l.errs...))
		}
		return nil
	})
}

// end stops the loop and returns the logins that worked and the failures.
func (l *loginLoop) end() (int64, []error) {
	close(l.stop)
	l.wg.Wait()
	return l.ok.Load(), l.errs
}

// notifySocket stands in for systemd's NOTIFY_SOCKET: it records each
// datagram with the pid of its sender, which the kernel vouches for.
type notifySocket struct {
	path string
	mu   sync.Mutex // mu protects got
	got  []string   // "PID TEXT"
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	n := &notifySocket{path: t.TempDir() + "/notify"}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1) })
	go func() {
		buf, oob := make([]byte, 4096), make([]byte, 1024)
		for {
			k, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
			if err != nil {
				return
			}
			pid := -1
			if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) > 0 {
				if cred, err := syscall.ParseUnixCredentials(&msgs[0]); err == nil {
					pid = int(cred.Pid)
				}
			}
			n.mu.Lock()
			n.got = append(n.got, fmt.Sprintf("%d %s", pid, buf[:k]))
			n.mu.Unlock()
		}
	}()
	return n
}

// expect waits until pid sent text.
func (n *notifySocket) expect(t *testing.T, pid int, text string) {
	t.Helper()
	want := fmt.Sprintf("%d %s", pid, text)
	if err := harness.WaitFor(context.Background(), 10*time.Second, func() error {
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, g := range n.got {
			if g == want {
				return nil
			}
		}
		return fmt.Errorf("no %q among %q", want, n.got)
	}); err != nil {
		t.Fatal(err)
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// TestReloadInPlace: SIGHUP and `frontdoor reload` apply a new
// configuration to new logins only; an invalid file, or one that changes
// what only an upgrade can, changes nothing and says where the problem is.
// A session streaming data and an idle one go on through all of it.
func TestReloadInPlace(t *testing.T) {
	w := newWorld(t, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := w.gws[0]
	nodeSSHD := w.nodes[0].sshd.Addr()

	streaming := w.startStream(ctx, g, w.freshUser())
	idleUser := w.freshUser()
	idle := w.hold(ctx, g, idleUser.Name, idleUser)
	if err := forward(streaming.client, nodeSSHD); err != nil {
		t.Fatalf("ssh -L before the reload: %v", err)
	}

	// A policy change, by SIGHUP: no more -L.
	editConfig(t, g, func(c *config.Config) { c.Policy.Rules[0].Forwarding = []string{policy.FwdAgent} })
	if err := g.proc.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(ctx, g, 15*time.Second, func(st admin.Status) error {
		if r := st.LastReload; r == nil || r.Result != "ok" || r.By != "SIGHUP" {
			return fmt.Errorf("last reload %+v", r)
		}
		return nil
	})
	next := w.freshUser()
	c, err := harness.DialSSH(ctx, g.sshAddr, next.Name, keys.HostPublicKey, ssh.PublicKeys(next.Signer))
	if err != nil {
		t.Fatalf("login after the reload: %v", err)
	}
	defer c.Close()
	if err := forward(c, nodeSSHD); err == nil || !strings.Contains(err.Error(), "prohibited") {
		t.Fatalf("ssh -L in a login after the reload that took it away: %v", err)
	}
	if err := forward(streaming.client, nodeSSHD); err != nil {
		t.Fatalf("ssh -L in the session open before the reload (it keeps its rights): %v", err)
	}

	// An invalid file: `frontdoor reload` says where, exits 1, and
	// nothing changes.
	good, err := os.ReadFile(g.cfg)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(good), "drain_timeout:", "drain_timout:", 1)
	if err := os.WriteFile(g.cfg, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s:%d: gateway.drain_timout: ", g.cfg, lineOf(t, g.cfg, "drain_timout:"))
	r := w.cli(ctx, "reload", "--admin", g.admin)
	if r.ExitCode != 1 || !strings.Contains(string(r.Stderr), want) || !strings.Contains(string(r.Stderr), "did you mean") {
		t.Fatalf("frontdoor reload of an invalid file: %s; want exit 1 and %q", r, want)
	}
	w.waitStatus(ctx, g, 5*time.Second, func(st admin.Status) error {
		if r := st.LastReload; r == nil || r.Result != "failed" || !strings.HasPrefix(r.Error, want) || strings.Contains(r.Error, "\n") {
			return fmt.Errorf("last reload %+v", r)
		}
		return nil
	})
	metrics, err := harness.AdminGet(ctx, g.admin, "/metrics")
	for _, m := range []string{`frontdoor_reloads_total{result="failed"} 1`, `frontdoor_reloads_total{result="ok"} 1`, `frontdoor_reload_last_success 0`} {
		if err != nil || !strings.Contains(metrics, m) {
			t.Fatalf("reload metrics: no %s (%v)", m, err)
		}
	}
	c2 := w.mustLogin(ctx, g, w.freshUser())
	if err := forward(c2, nodeSSHD); err == nil {
		t.Fatal("ssh -L allowed again after an invalid reload: it changed something")
	}

	// gateway.listen changed: refused, naming the key and what to do.
	if err := os.WriteFile(g.cfg, good, 0o600); err != nil {
		t.Fatal(err)
	}
	editConfig(t, g, func(c *config.Config) { c.Gateway.Listen = freeAddr(t, "127.0.0.1") })
	r = w.cli(ctx, "reload", "--admin", g.admin)
	if r.ExitCode != 1 || !strings.Contains(string(r.Stderr), "gateway.listen: changed") || !strings.Contains(string(r.Stderr), "frontdoor upgrade") {
		t.Fatalf("frontdoor reload changing gateway.listen: %s", r)
	}
	if st, err := w.status(ctx, g); err != nil || st.LastReload.Result != "refused" {
		t.Fatalf("last reload after the refusal: %+v, %v", st.LastReload, err)
	}
	w.mustLogin(ctx, g, w.freshUser()).Close() // still on the old address

	// The sessions open from the start are intact.
	if err := streaming.flowing(ctx); err != nil {
		t.Fatal(err)
	}
	if err := idle.ping("after-the-reloads"); err != nil {
		t.Fatal(err)
	}
	streaming.finish(t)
}

// mustLogin logs u in through g with Go's client.
func (w *world) mustLogin(ctx context.Context, g *gw, u *harness.User) *ssh.Client {
	w.t.Helper()
	c, err := harness.DialSSH(ctx, g.sshAddr, u.Name, keys.HostPublicKey, ssh.PublicKeys(u.Signer))
	if err != nil {
		w.t.Fatalf("login %s via %s: %v", u.Name, g.name, err)
	}
	w.t.Cleanup(func() { c.Close() })
	return c
}

// TestUpgrade: `frontdoor upgrade` starts the installed binary in the
// gateway's place. Logins running through it all work; the old process
// keeps its sessions — a stream with every byte, an interactive one told
// what happened, the capped user's, which the other gateway counts before,
// during and after the handover — refuses a second upgrade while it has
// them, and exits with the last one.
func TestUpgrade(t *testing.T) {
	capped := cappedUser()
	notify := listenNotify(t)
	w := newWorldOpts(t, worldOpts{ownBinary: true, rules: []policy.Rule{
		{Name: "capped", Users: []string{capped.Name}, Pools: []string{"general"}, MaxSessions: 1},
		{Name: "everyone", Groups: []string{"*"}, Pools: []string{"general"}},
	}, gatewayEnv: map[string][]string{"gw1": {"NOTIFY_SOCKET=" + notify.path}}}, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g, other := w.gws[0], w.gws[1]
	before, err := w.status(ctx, g)
	if err != nil {
		t.Fatal(err)
	}

	streaming := w.startStream(ctx, g, w.freshUser())
	termUser := w.freshUser()
	term, pos := w.terminal(ctx, g, termUser)
	capSession := w.hold(ctx, g, capped.Name, capped)
	explainCap := func() error {
		out, err := harness.AdminGet(ctx, other.admin, "/v1/explain?user="+url.QueryEscape(capped.Name))
		if err != nil {
			return err
		}
		if !strings.Contains(out, "sessions 1 of 1") {
			return fmt.Errorf("%s does not count %s's session: %s", other.name, capped.Name, out)
		}
		return nil
	}
	if err := harness.WaitFor(ctx, 15*time.Second, explainCap); err != nil {
		t.Fatal(err)
	}

	// Through the upgrade: logins, and the other gateway's count.
	loop := w.startLoginLoop(ctx, g, w.freshUser(), 3)
	capStop := make(chan struct{})
	capErrs := make(chan error, 1)
	var capChecks int
	go func() {
		var bad []error
		for {
			select {
			case <-capStop:
				capErrs <- errors.Join(bad...)
				return
			case <-time.After(20 * time.Millisecond): // sampling, not waiting
			}
			capChecks++
			if err := explainCap(); err != nil {
				bad = append(bad, err)
			}
		}
	}()
	if err := loop.reach(ctx, 6); err != nil {
		t.Fatal(err)
	}
	r := w.cli(ctx, "upgrade", "--admin", g.admin)
	if r.ExitCode != 0 || !strings.Contains(string(r.Stdout), "upgraded: pid ") {
		t.Fatalf("frontdoor upgrade: %s", r)
	}
	// The old process holds the three sessions opened before, and for a
	// moment the login loop's last short ones it accepted before the new
	// process took the socket: those end by themselves.
	oldPID := self(before).PID
	var after admin.Status
	err = harness.WaitFor(ctx, 15*time.Second, func() error {
		var err error
		if after, err = w.status(ctx, g); err != nil {
			return err
		}
		if prev := previous(after); self(after).PID == oldPID || prev == nil || prev.PID != oldPID || prev.Sessions != 3 ||
			prev.State != "draining" || prev.DrainDeadline.IsZero() {
			return fmt.Errorf("after the upgrade: processes %+v (the old one was %d); want the new one, and the old one draining 3 sessions", after.Processes, oldPID)
		}
		return nil
	})
	newPID := 0
	if len(after.Processes) > 0 && self(after).PID != oldPID {
		newPID = self(after).PID
		w.adopt(newPID)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := term.Expect(ctx, pos, "frontdoor: this gateway has been upgraded: this session goes on", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	// systemd heard the first process say it was ready, and then name
	// the new process the unit's main process, as the main process.
	notify.expect(t, oldPID, "READY=1")
	notify.expect(t, oldPID, fmt.Sprintf("MAINPID=%d", newPID))
	if err := loop.reach(ctx, loop.ok.Load()+6); err != nil {
		t.Fatal(err)
	}
	logins, failed := loop.end()
	if len(failed) > 0 {
		t.Fatalf("%d of %d logins through the upgrade failed: %v", len(failed), logins+int64(len(failed)), errors.Join(failed...))
	}
	t.Logf("%d logins through the upgrade, none failed", logins)

	// One upgrade at a time.
	r = w.cli(ctx, "upgrade", "--admin", g.admin)
	if r.ExitCode != 1 || !strings.Contains(string(r.Stderr), "previous process still relays sessions") {
		t.Fatalf("a second upgrade while the first one's old process drains: %s", r)
	}

	// The old process's sessions live on, and still count.
	if err := streaming.flowing(ctx); err != nil {
		t.Fatal(err)
	}
	if err := capSession.ping("after-the-upgrade"); err != nil {
		t.Fatal(err)
	}
	if err := term.Write("echo still-he''re\r"); err != nil {
		t.Fatal(err)
	}
	if _, err := term.Expect(ctx, pos, "still-here", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	close(capStop)
	if err := <-capErrs; err != nil {
		t.Fatalf("during the handover (%d checks): %v", capChecks, err)
	}
	t.Logf("%s counted %s's session in the old process in each of %d checks through the handover", other.name, capped.Name, capChecks)
	if _, r := w.sshNode(ctx, other, capped.Name, capped); r.ExitCode == 0 {
		t.Fatalf("a second session of %s via %s while the first is in the old process: allowed", capped.Name, other.name)
	}

	// The old process exits with its last session.
	streaming.finish(t)
	capSession.stdin.Close()
	<-capSession.done
	if !alive(oldPID) {
		t.Fatal("the old process exited while a session was open")
	}
	if err := term.Write("exit\r"); err != nil {
		t.Fatal(err)
	}
	if _, err := term.Wait(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.proc.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the old process did not exit after its last session ended")
	}
	w.waitStatus(ctx, g, 10*time.Second, func(st admin.Status) error {
		if p := previous(st); p != nil {
			return fmt.Errorf("previous process still shown: %+v", p)
		}
		return nil
	})
	if err := harness.WaitFor(ctx, 15*time.Second, func() error {
		if _, r := w.sshNode(ctx, other, capped.Name, capped); r.ExitCode != 0 {
			return fmt.Errorf("%s via %s once the old process exited: %s", capped.Name, other.name, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFails: a new binary that dies at once, or never becomes
// ready, leaves the old process serving; what arrives meanwhile (another
// upgrade, a reload) is refused while the upgrade is under way.
func TestUpgradeFails(t *testing.T) {
	w := newWorldOpts(t, worldOpts{ownBinary: true, gatewayArgs: []string{"--upgrade-timeout", "4s"}}, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := w.gws[0]
	streaming := w.startStream(ctx, g, w.freshUser())
	before, err := w.status(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	real, err := os.ReadFile(g.bin)
	if err != nil {
		t.Fatal(err)
	}
	install := func(content string) {
		tmp := g.bin + ".new"
		if err := os.WriteFile(tmp, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, g.bin); err != nil {
			t.Fatal(err)
		}
	}

	for _, tt := range []struct {
		name, binary, result string
	}{
		{"dies", "#!/bin/sh\necho 'no config for you' >&2\nexit 3\n", "exited"},
		{"hangs", "#!/bin/sh\nexec sleep 600\n", "timed out"},
	} {
		install(tt.binary)
		if err := g.proc.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		if tt.name == "hangs" {
			// While it hangs, the process is upgrading: another upgrade
			// and a reload are refused.
			w.waitStatus(ctx, g, 5*time.Second, func(st admin.Status) error {
				if self(st).State != "upgrading" {
					return fmt.Errorf("state %s", self(st).State)
				}
				return nil
			})
			if r := w.cli(ctx, "upgrade", "--admin", g.admin); r.ExitCode != 1 || !strings.Contains(string(r.Stderr), "an upgrade is under way") {
				t.Fatalf("upgrade during an upgrade: %s", r)
			}
			if err := g.proc.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			w.waitStatus(ctx, g, 5*time.Second, func(st admin.Status) error {
				if r := st.LastReload; r == nil || r.Result != "refused" || !strings.Contains(r.Error, "an upgrade is under way") {
					return fmt.Errorf("SIGHUP during an upgrade: %+v", r)
				}
				return nil
			})
		}
		st := w.waitStatus(ctx, g, 30*time.Second, func(st admin.Status) error {
			if u := st.LastUpgrade; u == nil || u.Result != "failed" || self(st).State != "serving" {
				return fmt.Errorf("state %s, last upgrade %+v", self(st).State, u)
			}
			return nil
		})
		if self(st).PID != self(before).PID || !strings.Contains(st.LastUpgrade.Error, tt.result) {
			t.Fatalf("new binary that %s: pid %d (was %d), last upgrade %+v", tt.name, self(st).PID, self(before).PID, st.LastUpgrade)
		}
		// The old process serves: logins work, through the gossip it
		// never gave up or took back.
		w.mustLogin(ctx, g, w.freshUser()).Close()
	}

	// Put the real binary back: the next upgrade goes through.
	install(string(real))
	r := w.cli(ctx, "upgrade", "--admin", g.admin)
	if r.ExitCode != 0 {
		t.Fatalf("upgrade with the real binary back: %s", r)
	}
	after, err := w.status(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	w.adopt(self(after).PID)
	w.mustLogin(ctx, g, w.freshUser()).Close()
	if err := streaming.flowing(ctx); err != nil {
		t.Fatal(err)
	}
	streaming.finish(t)
}

// TestSIGTERMDrains: SIGTERM (systemctl stop) stops new logins at once
// (users reconnect through the other gateway) and lets the open sessions
// run, telling their users, until the drain timeout closes them with the
// reason; the process exits within the timeout.
func TestSIGTERMDrains(t *testing.T) {
	const drain = 12 * time.Second
	w := newWorldOpts(t, worldOpts{edit: func(c *config.Config) { c.Gateway.DrainTimeout = drain }}, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g, other := w.gws[0], w.gws[1]
	u := w.freshUser()
	term, pos := w.terminal(ctx, g, u)
	streaming := w.startStream(ctx, g, w.freshUser())

	start := time.Now()
	if err := g.proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	pos, err := term.Expect(ctx, pos, "frontdoor: this gateway is shutting down: this session goes on until it ends, or at most "+strconv.Itoa(int(drain.Seconds()))+"s", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.status(ctx, g)
	if err != nil || self(st).State != "draining" || self(st).DrainDeadline.IsZero() {
		t.Fatalf("status while draining: %+v, %v", st.Processes, err)
	}
	// Users reconnect elsewhere; the drained gateway takes nobody.
	w.mustSSH(ctx, other, u.Name, u)
	if c, err := harness.DialSSH(ctx, g.sshAddr, u.Name, keys.HostPublicKey, ssh.PublicKeys(u.Signer)); err == nil {
		c.Close()
		t.Fatal("a draining gateway took a new login")
	}
	if err := streaming.flowing(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := term.Expect(ctx, pos, "frontdoor: closing this session: gateway shutting down (drain timeout 12s)", drain+10*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.proc.done:
	case <-time.After(drain + 10*time.Second - time.Since(start)):
		t.Fatalf("the gateway still runs %s after SIGTERM (drain_timeout %s)", time.Since(start).Round(time.Millisecond), drain)
	}
	took := time.Since(start)
	if took < drain-time.Second {
		t.Fatalf("the gateway exited after %s, before its drain timeout %s, with sessions open", took, drain)
	}
	t.Logf("exited %s after SIGTERM (drain_timeout %s)", took.Round(time.Millisecond), drain)
	if code, err := term.Wait(10 * time.Second); err != nil || code == 0 {
		t.Fatalf("the interactive session after the drain: exit %d, %v", code, err)
	}
}

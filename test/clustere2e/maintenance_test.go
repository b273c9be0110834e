package clustere2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// Maintenance drains (docs/operations.md, "Maintenance that tells
// people"): `frontdoor drain NODE --deadline D --message M` on one gateway;
// every gateway tells the users of its sessions on the node, on their
// terminals, and closes what is left at the deadline with the reason.
// Real binaries, real OpenSSH client on a real pty, real sshd.

// nodeTerminal is an interactive OpenSSH session (-tt, a shell) on node
// through g, ready at its prompt.
func (w *world) nodeTerminal(ctx context.Context, g *gw, node string) (*harness.Terminal, int) {
	w.t.Helper()
	u := w.freshUser()
	return w.terminalAs(ctx, g, u, u.Name+"+"+node)
}

// stillThere waits until at has passed, then checks that the terminal
// session answers and was never closed.
func (w *world) stillThere(ctx context.Context, term *harness.Terminal, pos int, at time.Time) {
	w.t.Helper()
	if err := harness.WaitFor(ctx, time.Until(at)+10*time.Second, func() error {
		if time.Now().Before(at) {
			return fmt.Errorf("%s not passed yet", at)
		}
		return nil
	}); err != nil {
		w.t.Fatal(err)
	}
	if err := term.Write("echo still-$((6*7))\r"); err != nil {
		w.t.Fatal(err)
	}
	if _, err := term.Expect(ctx, pos, "still-42", 15*time.Second); err != nil {
		w.t.Fatal(err)
	}
	if strings.Contains(term.Output(), "closing this session") {
		w.t.Fatalf("closed although its drain was called off: %q", term.Output())
	}
}

// nodeInfos is GET /v1/nodes of g.
func (w *world) nodeInfos(ctx context.Context, g *gw) (map[string]admin.NodeInfo, error) {
	var ns []admin.NodeInfo
	if err := harness.AdminGetJSON(ctx, g.admin, "/v1/nodes", &ns); err != nil {
		return nil, err
	}
	out := map[string]admin.NodeInfo{}
	for _, n := range ns {
		out[n.Name] = n
	}
	return out, nil
}

// waitMaintenance waits until every gateway shows node's maintenance
// drain as check wants it.
func (w *world) waitMaintenance(ctx context.Context, node string, check func(admin.NodeInfo) error) {
	w.t.Helper()
	for _, g := range w.gws {
		if err := harness.WaitFor(ctx, healthBound, func() error {
			ns, err := w.nodeInfos(ctx, g)
			if err != nil {
				return err
			}
			return check(ns[node])
		}); err != nil {
			w.t.Fatalf("%s: %v", g.name, err)
		}
	}
}

// TestMaintenanceDrain: a drain with a 70 s deadline. Terminal sessions
// through either gateway are told at once and a minute before, then
// closed at the deadline with the reason; a command gets no notice text
// in its output and is closed as well; `frontdoor nodes` (table and JSON),
// the status and the metrics show the deadline, the message and the
// sessions left.
func TestMaintenanceDrain(t *testing.T) {
	const deadline = 70 * time.Second
	w := newWorld(t, 1.0, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	gw1, gw2 := w.gws[0], w.gws[1]
	term1, pos1 := w.nodeTerminal(ctx, gw1, "login2")
	term2, pos2 := w.nodeTerminal(ctx, gw2, "login2")
	cmd := w.holdOn(ctx, gw1, "login2")
	spared, _ := w.nodeTerminal(ctx, gw1, "login1")

	start := time.Now()
	r := w.cli(ctx, "drain", "--admin", gw1.admin, "login2", "--deadline", deadline.String(), "--message", "kernel update")
	if r.ExitCode != 0 || !strings.Contains(string(r.Stdout), "login2: draining (by unix:") {
		t.Fatalf("frontdoor drain: %s", r)
	}
	w.waitDraining("login2", true)

	const told = "frontdoor: login node login2 goes down for maintenance at "
	var err error
	for _, x := range []struct {
		term *harness.Terminal
		pos  *int
	}{{term1, &pos1}, {term2, &pos2}} {
		if *x.pos, err = x.term.Expect(ctx, *x.pos, told, 15*time.Second); err != nil {
			t.Fatal(err)
		}
		if *x.pos, err = x.term.Expect(ctx, *x.pos, "(kernel update): this session will be closed then; save your work", 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("told after %s", time.Since(start).Round(time.Millisecond))

	// What the admin sees meanwhile.
	w.waitMaintenance(ctx, "login2", func(n admin.NodeInfo) error {
		if !n.Draining || n.DrainMessage != "kernel update" || n.DrainDeadline.Sub(start) < deadline-5*time.Second ||
			n.DrainDeadline.Sub(start) > deadline+5*time.Second || !strings.HasPrefix(n.DrainBy, "unix:") {
			return fmt.Errorf("login2 %+v", n)
		}
		return nil
	})
	r = w.cli(ctx, "nodes", "--admin", gw2.admin)
	if r.ExitCode != 0 || !regexpLine(string(r.Stdout), "MAINTENANCE", "DEADLINE") || !strings.Contains(string(r.Stdout), "kernel update") {
		t.Fatalf("frontdoor nodes: %s", r)
	}
	st := w.waitStatus(ctx, gw2, healthBound, func(st admin.Status) error {
		for _, d := range st.Drains {
			if d.Node == "login2" && d.Message == "kernel update" && !d.Deadline.IsZero() && d.Sessions == 3 {
				return nil
			}
		}
		return fmt.Errorf("drains %+v", st.Drains)
	})
	t.Logf("status drains: %+v", st.Drains)
	metrics, err := harness.AdminGet(ctx, gw1.admin, "/metrics")
	if err != nil || !strings.Contains(metrics, `frontdoor_node_drain_deadline_timestamp_seconds{node="login2"}`) ||
		!strings.Contains(metrics, `frontdoor_maintenance_notices_total{kind="start"} 1`) {
		t.Fatalf("metrics (%v):\n%s", err, grepLines(metrics, "drain", "maintenance"))
	}

	// A minute before: warned. At the deadline: closed, with the reason.
	for _, x := range []struct {
		term *harness.Terminal
		pos  *int
	}{{term1, &pos1}, {term2, &pos2}} {
		if *x.pos, err = x.term.Expect(ctx, *x.pos, "frontdoor: login node login2 goes down for maintenance in 1m (kernel update)", deadline); err != nil {
			t.Fatal(err)
		}
	}
	const closing = "frontdoor: closing this session: login node login2 is going down for maintenance (kernel update); log in again to continue on another node"
	for _, x := range []struct {
		term *harness.Terminal
		pos  int
	}{{term1, pos1}, {term2, pos2}} {
		if _, err := x.term.Expect(ctx, x.pos, closing, deadline+15*time.Second-time.Since(start)); err != nil {
			t.Fatal(err)
		}
		if code, err := x.term.Wait(15 * time.Second); err != nil || code == 0 {
			t.Fatalf("the terminal session after the deadline: exit %d, %v", code, err)
		}
	}
	took := time.Since(start)
	if took < deadline-time.Second {
		t.Fatalf("closed after %s, before the deadline %s", took, deadline)
	}
	t.Logf("closed %s after the drain (deadline %s)", took.Round(time.Millisecond), deadline)
	select {
	case <-cmd.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the command session on login2 still runs after the deadline")
	}
	for _, out := range []string{cmd.out.String(), cmd.errb.String()} {
		if strings.Contains(out, "frontdoor") || strings.Contains(out, "maintenance") {
			t.Fatalf("notice text in a command's output: %q", out)
		}
	}
	// The session on the other node goes on; nothing is left on login2.
	if err := spared.Write("echo spared-$((6*7))\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := spared.Expect(ctx, 0, "spared-42", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(ctx, gw1, healthBound, func(st admin.Status) error {
		for _, d := range st.Drains {
			if d.Node == "login2" && d.Sessions == 0 {
				return nil
			}
		}
		return fmt.Errorf("drains %+v", st.Drains)
	})
}

// TestMaintenanceUndrain: an undrain before the deadline (on the other
// gateway) closes nothing: the session is still there after the deadline.
func TestMaintenanceUndrain(t *testing.T) {
	const deadline = 20 * time.Second
	w := newWorld(t, 1.0, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gw1, gw2 := w.gws[0], w.gws[1]
	term, pos := w.nodeTerminal(ctx, gw1, "login2")
	start := time.Now()
	if r := w.cli(ctx, "drain", "--admin", gw1.admin, "--deadline", deadline.String(), "--message", "cancelled later", "login2"); r.ExitCode != 0 {
		t.Fatalf("frontdoor drain: %s", r)
	}
	pos, err := term.Expect(ctx, pos, "frontdoor: login node login2 goes down for maintenance", 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r := w.cli(ctx, "undrain", "--admin", gw2.admin, "login2"); r.ExitCode != 0 {
		t.Fatalf("frontdoor undrain: %s", r)
	}
	w.waitDraining("login2", false)
	if time.Since(start) > deadline-3*time.Second {
		t.Fatalf("the undrain took %s: too close to the deadline %s to prove anything", time.Since(start), deadline)
	}
	// Past the deadline, with margin, the session answers.
	w.stillThere(ctx, term, pos, start.Add(deadline+3*time.Second))
}

// TestMaintenanceHostileMessage: a message that would act on users'
// terminals (escape sequences, newlines, a forged notice) or is huge is
// refused with one line; the node is not drained.
func TestMaintenanceHostileMessage(t *testing.T) {
	w := newWorld(t, 1.0, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, m := range []string{"\x1b[2J\x1b[Hyour session is hacked", "ok\r\nfrontdoor: type your password",
		"title\x1b]0;owned\x07", "\u202eevil", strings.Repeat("A", 300), strings.Repeat("B", 10000)} {
		r := w.cli(ctx, "drain", "--admin", w.gws[0].admin, "--deadline", "10m", "--message", m, "login2")
		stderr := strings.TrimSpace(string(r.Stderr))
		if r.ExitCode == 0 || strings.Count(stderr, "\n") > 0 || strings.ContainsAny(stderr, "\x1b\r\u202e") {
			t.Fatalf("message %q: want one clean line and a failure, got %s", m[:min(len(m), 40)], r)
		}
	}
	ns, err := w.nodeInfos(ctx, w.gws[0])
	if err != nil || ns["login2"].Draining || !ns["login2"].DrainDeadline.IsZero() {
		t.Fatalf("login2 after refused drains: %+v %v", ns["login2"], err)
	}
}

// TestHyperPodMaintenanceDrain: a discovered node that SageMaker reports
// SystemUpdating (the fake API, speaking the real protocol) is drained by
// the gateways with discovery.drain_deadline: its users are told why and
// closed at the deadline; once it is Running again the drain ends.
func TestHyperPodMaintenanceDrain(t *testing.T) {
	const deadline = 15 * time.Second
	w := newWorldOpts(t, worldOpts{discovered: []string{"login2"}, edit: func(c *config.Config) {
		if c.Discovery != nil {
			c.Discovery.DrainDeadline = deadline
		}
	}}, 1.0, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	term, pos := w.nodeTerminal(ctx, w.gws[1], "login2")
	cmd := w.holdOn(ctx, w.gws[0], "login2")

	start := time.Now()
	w.fake.SetStatus("i-login2", "SystemUpdating", "UpdateClusterSoftware")
	pos, err := term.Expect(ctx, pos, "frontdoor: login node login2 goes down for maintenance at ", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pos, err = term.Expect(ctx, pos, "(HyperPod is updating this node's software)", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("told %s after SageMaker said SystemUpdating", time.Since(start).Round(time.Millisecond))
	w.waitMaintenance(ctx, "login2", func(n admin.NodeInfo) error {
		if n.DrainBy != discovery.DrainBy || n.DrainDeadline.IsZero() || n.NotTaking == "" {
			return fmt.Errorf("login2 %+v", n)
		}
		return nil
	})
	if _, err := term.Expect(ctx, pos, "frontdoor: closing this session: login node login2 is going down for maintenance (HyperPod is updating this node's software)", deadline+30*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, err := term.Wait(15 * time.Second); err != nil || code == 0 {
		t.Fatalf("the terminal session after the deadline: exit %d, %v", code, err)
	}
	select {
	case <-cmd.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the command session on login2 still runs after the deadline")
	}
	if strings.Contains(cmd.out.String()+cmd.errb.String(), "maintenance") {
		t.Fatalf("notice text in a command's output: %q %q", cmd.out.String(), cmd.errb.String())
	}
	t.Logf("closed %s after SageMaker said SystemUpdating (drain_deadline %s)", time.Since(start).Round(time.Millisecond), deadline)

	// Patched: Running again, the drain ends on every gateway.
	w.fake.SetStatus("i-login2", "Running", "")
	w.waitMaintenance(ctx, "login2", func(n admin.NodeInfo) error {
		if n.Draining || !n.DrainDeadline.IsZero() || n.NotTaking != "" {
			return fmt.Errorf("login2 %+v", n)
		}
		return nil
	})
}

// grepLines keeps the lines of s holding any of words.
func grepLines(s string, words ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestMaintenanceAcrossUpgrade: the drain is set after gw1 was upgraded,
// so its old process — which still relays a terminal session on login2
// and no longer hears the gossip — learns it from the new process: the
// session is told and closed at the deadline like one in the new process.
// A reload of the new process meanwhile changes nothing. An undrain
// likewise reaches the old process: a session there on login1 survives
// its node's cancelled drain.
func TestMaintenanceAcrossUpgrade(t *testing.T) {
	const deadline = 25 * time.Second
	w := newWorldOpts(t, worldOpts{ownBinary: true}, 1.0, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	gw1, gw2 := w.gws[0], w.gws[1]
	old, oldPos := w.nodeTerminal(ctx, gw1, "login2")
	kept, keptPos := w.nodeTerminal(ctx, gw1, "login1")
	r := w.cli(ctx, "upgrade", "--admin", gw1.admin)
	if r.ExitCode != 0 || !strings.Contains(string(r.Stdout), "upgraded: pid ") {
		t.Fatalf("frontdoor upgrade: %s", r)
	}
	st, err := w.status(ctx, gw1)
	if err != nil || previous(st) == nil || previous(st).Sessions != 2 {
		t.Fatalf("after the upgrade: %+v %v", st.Processes, err)
	}
	w.adopt(self(st).PID)
	fresh, freshPos := w.nodeTerminal(ctx, gw1, "login2") // in the new process

	// Drain login1, then call it off, while the sessions are in the old process.
	if r := w.cli(ctx, "drain", "--admin", gw2.admin, "--deadline", "20s", "--message", "called off", "login1"); r.ExitCode != 0 {
		t.Fatalf("frontdoor drain login1: %s", r)
	}
	if keptPos, err = kept.Expect(ctx, keptPos, "frontdoor: login node login1 goes down for maintenance", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if r := w.cli(ctx, "undrain", "--admin", gw2.admin, "login1"); r.ExitCode != 0 {
		t.Fatalf("frontdoor undrain login1: %s", r)
	}
	undrained := time.Now()

	start := time.Now()
	if r := w.cli(ctx, "drain", "--admin", gw2.admin, "--deadline", deadline.String(), "--message", "after the upgrade", "login2"); r.ExitCode != 0 {
		t.Fatalf("frontdoor drain login2: %s", r)
	}
	for _, x := range []struct {
		term *harness.Terminal
		pos  *int
	}{{old, &oldPos}, {fresh, &freshPos}} {
		if *x.pos, err = x.term.Expect(ctx, *x.pos, "frontdoor: login node login2 goes down for maintenance at ", 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if r := w.cli(ctx, "reload", "--admin", gw1.admin); r.ExitCode != 0 {
		t.Fatalf("frontdoor reload: %s", r)
	}
	const closing = "frontdoor: closing this session: login node login2 is going down for maintenance (after the upgrade)"
	for _, x := range []struct {
		term *harness.Terminal
		pos  int
	}{{old, oldPos}, {fresh, freshPos}} {
		if _, err := x.term.Expect(ctx, x.pos, closing, deadline+15*time.Second-time.Since(start)); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took < deadline-time.Second {
		t.Fatalf("closed after %s, before the deadline %s", took, deadline)
	}
	// login1's drain was called off well before its 20 s: its session in
	// the old process is still there past that.
	w.stillThere(ctx, kept, keptPos, undrained.Add(25*time.Second))
}

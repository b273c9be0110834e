package clustere2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// deadBound is the documented promise: a dead node is out of every
// gateway's candidates within cluster.node_dead_after (4 s: its agent's
// heartbeats stopped), plus 2 s for this test's own polling of two
// gateways' admin APIs on a loaded 2-core machine.
const deadBound = 4*time.Second + 2*time.Second

// exclusion is when one gateway stopped counting a dead node.
type exclusion struct {
	gw        string
	candidate time.Duration // explain: no longer a candidate
	dead      time.Duration // /v1/nodes: alive=false
	why       string        // explain's reason
	err       error
}

// watchExclusion polls g every 50 ms from start until node is neither a
// candidate (explain) nor alive (/v1/nodes), for at most limit.
func (w *world) watchExclusion(g *gw, node string, start time.Time, limit time.Duration) exclusion {
	ex := exclusion{gw: g.name}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if ex.candidate == 0 {
			if d, err := w.explain(ctx, g, probeUser().Name); err == nil && !d.candidate[node] {
				ex.candidate, ex.why = time.Since(start), d.why[node]
			}
		}
		if ex.dead == 0 {
			if v, err := w.fetchView(ctx, g); err == nil && !v[node].Alive {
				ex.dead = time.Since(start)
			}
		}
		cancel()
		if ex.candidate != 0 && ex.dead != 0 {
			return ex
		}
		if time.Since(start) > limit {
			ex.err = fmt.Errorf("gateway %s: %s still counted %s after the crash (candidate excluded after %s, dead after %s)",
				g.name, node, limit, ex.candidate, ex.dead)
			return ex
		}
		<-t.C
	}
}

// TestDeadNodeExcluded: kill -9 one node's sshd and agent. Logins right
// after succeed on the other nodes (also for a user whose affinity is the
// dead node), and every gateway drops the dead node from its candidates
// within 10 s. Started again, the node is back in.
func TestDeadNodeExcluded(t *testing.T) {
	// login3 is the least loaded: routing prefers it until it knows better.
	w := newWorld(t, 2.0, 2.0, 0.2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := w.node("login3")
	// dana works on login3: her reconnects go there first.
	dana := w.freshUser()
	w.mustSSH(ctx, w.gws[0], dana.Name+"+login3", dana)
	if _, _, err := w.waitExplain(w.gws[1], dana.Name, affinityBound, func(d decision) error {
		if d.reason != "sticky" || d.order[0] != "login3" {
			return fmt.Errorf("want sticky to login3, got %q %v", d.reason, d.order)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	n.kill()
	crashed := time.Since(start)
	watched := make(chan exclusion, len(w.gws))
	for _, g := range w.gws {
		// Watch past the bound, so a miss reports the real time.
		go func() { watched <- w.watchExclusion(g, "login3", start, 2*deadBound) }()
	}

	// At once: dana, then fresh users through both gateways (OpenSSH, then
	// a burst). A login that tries login3 first must fall back to another
	// node rather than fail or wait out a connect timeout.
	var got []string
	login := func(g *gw, u *harness.User) {
		t0 := time.Now()
		node := w.mustSSH(ctx, g, u.Name, u)
		took := time.Since(t0)
		t.Logf("%s via %s %s after the crash: on %s in %s", u.Name, g.name, t0.Sub(start).Round(time.Millisecond), node, took.Round(time.Millisecond))
		if took > 10*time.Second {
			t.Errorf("login via %s took %s: it should fall back at once, not wait", g.name, took)
		}
		got = append(got, node)
	}
	login(w.gws[1], dana)
	for _, g := range w.gws {
		login(g, w.freshUser())
	}
	got = append(got, w.burst(ctx, 6)...)
	if c := count(got, "login3"); c > 0 {
		t.Fatalf("%d logins landed on the dead node: %v", c, got)
	}
	// Whether a login met the dead node before the cluster knew depends on
	// timing: informational.
	for _, g := range w.gws {
		evs, _ := harness.ReadAudit(filepath.Join(filepath.Dir(g.cfg), "audit.jsonl"))
		for _, e := range evs {
			if e.Type == "backend" && e.Node == "login3" && e.Result == "fail" {
				t.Logf("%s: %s tried the dead node first and fell back: %s", g.name, e.User, e.Reason)
			}
		}
	}

	var worst time.Duration
	for range w.gws {
		ex := <-watched
		if ex.err != nil {
			t.Error(ex.err)
			continue
		}
		t.Logf("%s: login3 out of the candidates %s after kill -9 (%q), not alive after %s",
			ex.gw, ex.candidate.Round(time.Millisecond), ex.why, ex.dead.Round(time.Millisecond))
		worst = max(worst, ex.candidate, ex.dead)
	}
	t.Logf("dead node excluded by every gateway after %s (kill took %s; bound %s)", worst.Round(time.Millisecond), crashed.Round(time.Millisecond), deadBound)
	if worst > deadBound {
		t.Errorf("dead node excluded after %s, want ≤ %s", worst, deadBound)
	}
	if t.Failed() {
		return
	}
	// Asked for by name, the dead node is refused with the reason.
	r := harness.Run(w.client(w.gws[0], dana).SSH(ctx, dana.Name+"+login3", "true"), nil)
	if want := "login node login3 is not available right now (not alive in cluster)"; r.ExitCode != 255 || !strings.Contains(string(r.Stderr), want) {
		t.Fatalf("%s+login3 to the dead node: want refusal %q, got %s", dana.Name, want, r)
	}

	// The node comes back (rebooted): sshd and agent as before.
	start = time.Now()
	if err := w.revive(ctx, n); err != nil {
		t.Fatal(err)
	}
	took, err := w.waitAll(15*time.Second, func(v view) error { return v.usable("login3") })
	if err != nil {
		t.Fatalf("revived node not back: %v", err)
	}
	t.Logf("revived login3 usable on every gateway %s after its start", took.Round(time.Millisecond))
	for _, g := range w.gws {
		if node := w.mustSSH(ctx, g, dana.Name+"+login3", dana); node != "login3" {
			t.Fatalf("dana+login3 via %s landed on %s", g.name, node)
		}
	}
}

// TestGatewayRestart: kill -9 a gateway and start it again. It rejoins,
// and the state it had is back: users' affinities (a session it held when
// it died, a session through the other gateway), an admin drain it had
// made, every node's health.
func TestGatewayRestart(t *testing.T) {
	w := newWorld(t, 0.5, 0.5, 0.5, 0.5)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gw1, gw2 := w.gws[0], w.gws[1]

	// alice is logged in through gw2 when it dies; bob's session through
	// gw1 ended already.
	alice, bob := w.freshUser(), w.freshUser()
	ha := w.hold(ctx, gw2, alice.Name, alice)
	bobNode := w.mustSSH(ctx, gw1, bob.Name, bob)
	homes := map[string]string{alice.Name: ha.node, bob.Name: bobNode}
	// Their nodes become the busiest: only affinity brings them back.
	for _, node := range []string{ha.node, bobNode} {
		if err := w.node(node).setLoad(40); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range []string{ha.node, bobNode} {
		w.waitLoad(node, 40)
	}
	// gw2 drains a node neither of them uses.
	var drained string
	for _, name := range w.nodeNames() {
		if name != ha.node && name != bobNode {
			drained = name
			break
		}
	}
	if r := w.cli(ctx, "drain", "--admin", gw2.admin, drained); r.ExitCode != 0 {
		t.Fatalf("frontdoor drain: %s", r)
	}
	w.waitDraining(drained, true)
	stickyOK := func(user string) func(decision) error {
		return func(d decision) error {
			if d.reason != "sticky" || d.order[0] != homes[user] {
				return fmt.Errorf("want sticky to %s, got %q %v", homes[user], d.reason, d.order)
			}
			return nil
		}
	}
	for user := range homes {
		if _, _, err := w.waitExplain(gw1, user, affinityBound, stickyOK(user)); err != nil {
			t.Fatal(err)
		}
	}

	// kill -9 gw2: alice's connection drops with it.
	gw2.proc.kill()
	killed := time.Now()
	select {
	case <-ha.done:
	case <-time.After(15 * time.Second):
		t.Fatal("alice's ssh through the killed gateway did not end")
	}
	// gw1 carries on meanwhile.
	carol := w.freshUser()
	if node := w.mustSSH(ctx, gw1, carol.Name, carol); node == drained {
		t.Fatalf("carol sent to the drained node %s", drained)
	}
	// Restart once the cluster has declared gw2 failed (a quick restart,
	// before that, is TestCrashedGatewaySessionsRelease's): gw2 must rejoin
	// as a new incarnation and get the state by push/pull.
	if err := w.waitDeclaredFailed(ctx, gw2.name); err != nil {
		t.Fatal(err)
	}

	// Restart, same configuration and addresses (systemd's Restart=).
	if err := w.restartGateway(ctx, gw2); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	t.Logf("gw2 restarted %s after kill -9", restarted.Sub(killed).Round(time.Millisecond))
	// Health of every node, and the drain it made before it died.
	took, err := w.waitView(gw2, 15*time.Second, func(v view) error {
		for _, name := range w.nodeNames() {
			if name == drained {
				if !v[name].Draining {
					return fmt.Errorf("%s: drain lost", name)
				}
				continue
			}
			if err := v.usable(name); err != nil {
				return err
			}
		}
		for _, node := range []string{ha.node, bobNode} {
			if v[node].Load1 != 40 {
				return fmt.Errorf("%s: load1 %.2f, want 40", node, v[node].Load1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("restarted gw2 lacks node state: %v", err)
	}
	t.Logf("restarted gw2 has every node's health and the drain after %s", took.Round(time.Millisecond))
	// Affinities, through explain, then real logins through gw2.
	for _, u := range []*harness.User{alice, bob} {
		if _, _, err := w.waitExplain(gw2, u.Name, 15*time.Second, stickyOK(u.Name)); err != nil {
			t.Fatalf("restarted gw2 lost %s's affinity: %v", u.Name, err)
		}
		t.Logf("restarted gw2 knows %s → %s %s after its start", u.Name, homes[u.Name], time.Since(restarted).Round(time.Millisecond))
	}
	for _, u := range []*harness.User{alice, bob} {
		if got := w.mustSSH(ctx, gw2, u.Name, u); got != homes[u.Name] {
			t.Errorf("%s: via the restarted gw2 on %s, before on %s", u.Name, got, homes[u.Name])
		}
	}
	for _, node := range w.burst(ctx, 4) {
		if node == drained {
			t.Errorf("a fresh user was sent to the drained node %s after the restart", drained)
		}
	}
}

// waitDeclaredFailed waits until a member's failure detector has declared
// member failed (memberlist logs it there; the others hear it by gossip,
// silently, within a gossip round or two).
func (w *world) waitDeclaredFailed(ctx context.Context, member string) error {
	var logs []string
	for _, g := range w.gws {
		logs = append(logs, g.log)
	}
	for _, n := range w.nodes {
		logs = append(logs, filepath.Join(filepath.Dir(n.agentCfg), "agent.log"))
	}
	return harness.WaitFor(ctx, 20*time.Second, func() error {
		for _, p := range logs {
			if strings.Contains(tail(p, 1<<20), "Marking "+member+" as failed") {
				return nil
			}
		}
		return fmt.Errorf("no member has declared %s failed", member)
	})
}

// TestAllGatewaysRestart: both gateways die (kill -9) and come back, as
// after a full outage or an all-at-once deploy. The gateways must hear the
// agents again: until they do, they know no login node and refuse every
// login. (See BUGS.md 1: with one shared pool, agents that had declared
// the gateways failed never contacted them again. Agents are in no pool
// now: they send to every gateway of their join list on every heartbeat,
// whether it was down or not.)
func TestAllGatewaysRestart(t *testing.T) {
	w := newWorld(t, 0.5, 0.5, 0.5)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for _, g := range w.gws {
		g.proc.kill()
	}
	for _, g := range w.gws {
		if err := w.restartGateway(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	// The agents' heartbeat is 1 s; 15 s is generous.
	took, err := w.waitAll(15*time.Second, func(v view) error {
		for _, n := range w.nodes {
			if err := v.usable(n.name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("restarted gateways do not find the agents again: %v", err)
	}
	t.Logf("restarted gateways see every node after %s", took.Round(time.Millisecond))
	for _, g := range w.gws {
		u := w.freshUser()
		w.mustSSH(ctx, g, u.Name, u)
	}
}

// notSticky holds once routing no longer pins the user to a node.
func notSticky(d decision) error {
	if !strings.HasPrefix(d.reason, "least-loaded") {
		return fmt.Errorf("still %q %v", d.reason, d.order)
	}
	return nil
}

// TestCrashedGatewaySessionsRelease: a session counts as live (and pins its
// user to the node regardless of sticky_for) only while it exists. When
// its gateway is killed, the session is gone: the user must become free
// once the crashed gateway is declared dead, or, when it comes straight
// back, once it disowns the sessions of its previous run.
func TestCrashedGatewaySessionsRelease(t *testing.T) {
	w := newWorldOpts(t, worldOpts{route: map[string]any{"sticky_for": "2s"}}, 0.5, 0.5, 0.5)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gw1, gw2 := w.gws[0], w.gws[1]
	live := func(user, node string) func(decision) error {
		return func(d decision) error {
			if d.reason != "sticky" || d.order[0] != node {
				return fmt.Errorf("want sticky to %s, got %q %v", node, d.reason, d.order)
			}
			return nil
		}
	}

	// Control: a session that ended normally pins its user for sticky_for.
	u := w.freshUser()
	w.mustSSH(ctx, gw1, u.Name, u)
	took, _, err := w.waitExplain(gw2, u.Name, 15*time.Second, notSticky)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ended session: %s free on gw2 after %s (sticky_for 2s)", u.Name, took.Round(time.Millisecond))

	// alice's session through gw2 dies with it; gw2 comes straight back.
	alice := w.freshUser()
	ha := w.hold(ctx, gw2, alice.Name, alice)
	if _, _, err := w.waitExplain(gw1, alice.Name, affinityBound, live(alice.Name, ha.node)); err != nil {
		t.Fatal(err)
	}
	gw2.proc.kill()
	<-ha.done
	if err := w.restartGateway(ctx, gw2); err != nil {
		t.Fatal(err)
	}
	for _, g := range w.gws {
		took, _, err := w.waitExplain(g, alice.Name, 15*time.Second, notSticky)
		if err != nil {
			t.Errorf("session lost with restarted gw2 still pins %s on %s: %v", alice.Name, g.name, err)
			continue
		}
		t.Logf("restart: %s free on %s %s after the restart", alice.Name, g.name, took.Round(time.Millisecond))
	}

	// bob's session through gw1 dies with it; gw1 stays down.
	bob := w.freshUser()
	hb := w.hold(ctx, gw1, bob.Name, bob)
	if _, _, err := w.waitExplain(gw2, bob.Name, affinityBound, live(bob.Name, hb.node)); err != nil {
		t.Fatal(err)
	}
	gw1.proc.kill()
	<-hb.done
	took, _, err = w.waitExplain(gw2, bob.Name, 15*time.Second, notSticky)
	if err != nil {
		t.Fatalf("session lost with dead gw1 still pins %s on gw2: %v", bob.Name, err)
	}
	t.Logf("crash: %s free on gw2 %s after gw1 died", bob.Name, took.Round(time.Millisecond))
}

// TestSSHDDownExcluded: the node's sshd dies but its agent lives. The
// agent's probe notices and every gateway drops the node with the reason
// "sshd not answering"; sshd back, the node is back.
func TestSSHDDownExcluded(t *testing.T) {
	w := newWorld(t, 2.0, 2.0, 0.2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := w.node("login3")
	n.sshd.Kill()
	took, err := w.waitAll(healthBound, func(v view) error {
		if v["login3"].SSHDUp || !v["login3"].Alive {
			return fmt.Errorf("login3: sshd_up=%v alive=%v, want false/true", v["login3"].SSHDUp, v["login3"].Alive)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sshd down seen by both gateways after %s", took.Round(time.Millisecond))
	for _, g := range w.gws {
		d, err := w.explain(ctx, g, probeUser().Name)
		if err != nil {
			t.Fatal(err)
		}
		if d.candidate["login3"] || d.why["login3"] != "sshd not answering" {
			t.Fatalf("%s: login3 should be no candidate because sshd is down:\n%s", g.name, d.text)
		}
	}
	if got := w.burst(ctx, 4); count(got, "login3") > 0 {
		t.Fatalf("logins sent to a node whose sshd is down: %v", got)
	}
	u := w.freshUser()
	r := harness.Run(w.client(w.gws[1], u).SSH(ctx, u.Name+"+login3", "true"), nil)
	if want := "login node login3 is not available right now (sshd not answering)"; r.ExitCode != 255 || !strings.Contains(string(r.Stderr), want) {
		t.Fatalf("%s+login3: want refusal %q, got %s", u.Name, want, r)
	}

	sshd, err := harness.StartNode(ctx, harness.NodeOptions{Name: n.name, Addr: n.host, Port: n.sshd.Port(),
		Dir: n.sshd.Dir(), UserCAPub: keys.UserCAPub})
	if err != nil {
		t.Fatal(err)
	}
	n.sshd = sshd
	w.track(nil, sshd)
	if _, err := w.waitAll(healthBound, func(v view) error { return v.usable("login3") }); err != nil {
		t.Fatal(err)
	}
	if got := w.mustSSH(ctx, w.gws[1], u.Name+"+login3", u); got != "login3" {
		t.Fatalf("%s+login3 landed on %s", u.Name, got)
	}
}

// TestUnmeasurableNodeGoesStale: the agent lives but cannot measure (its
// metrics source fails), so it publishes nothing rather than guesses; the
// node's health goes stale and routing leaves it after route.stale_after.
func TestUnmeasurableNodeGoesStale(t *testing.T) {
	const staleAfter = 3 * time.Second
	w := newWorldOpts(t, worldOpts{route: map[string]any{"stale_after": staleAfter.String()}}, 2.0, 2.0, 0.2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := w.node("login3")
	if err := os.WriteFile(n.metrics, []byte("load1: [not a number\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, g := range w.gws {
		if _, _, err := w.waitExplain(g, probeUser().Name, staleAfter+healthBound, func(d decision) error {
			if d.why["login3"] != "health stale" {
				return fmt.Errorf("login3: %q, want health stale", d.why["login3"])
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("unmeasurable login3 stale on both gateways after %s (stale_after %s)", time.Since(start).Round(time.Millisecond), staleAfter)
	if got := w.burst(ctx, 4); count(got, "login3") > 0 {
		t.Fatalf("logins sent to a node with stale health: %v", got)
	}
	if err := n.setLoad(0.2); err != nil {
		t.Fatal(err)
	}
	if _, err := w.waitAll(healthBound, func(v view) error { return v.usable("login3") }); err != nil {
		t.Fatal(err)
	}
	for _, g := range w.gws {
		if _, _, err := w.waitExplain(g, probeUser().Name, healthBound, func(d decision) error {
			if !d.candidate["login3"] {
				return fmt.Errorf("login3 no candidate: %q", d.why["login3"])
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFrozenNode: a node hangs (sshd and agent stopped with SIGSTOP, as in
// a kernel stall or swap storm): TCP connections still complete, nothing
// answers. Logins right after must not hang: the gateway gives up on the
// node after backend.connect_timeout and tries the next one. The node is
// out of every gateway's candidates within 10 s, and back once it thaws.
func TestFrozenNode(t *testing.T) {
	const connectTimeout = 5 * time.Second
	w := newWorldOpts(t, worldOpts{connectTimeout: connectTimeout}, 2.0, 2.0, 0.2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := w.node("login3")
	signal := func(sig syscall.Signal) {
		syscall.Kill(n.sshd.PID(), sig)
		n.agent.cmd.Process.Signal(sig)
	}
	// Runs before the world stops its processes: a stopped one ignores
	// SIGTERM until continued.
	t.Cleanup(func() { signal(syscall.SIGCONT) })

	start := time.Now()
	signal(syscall.SIGSTOP)
	watched := make(chan exclusion, len(w.gws))
	for _, g := range w.gws {
		go func() { watched <- w.watchExclusion(g, "login3", start, 2*deadBound) }()
	}
	for _, g := range w.gws {
		u := w.freshUser()
		t0 := time.Now()
		node := w.mustSSH(ctx, g, u.Name, u)
		took := time.Since(t0)
		t.Logf("%s via %s %s after the freeze: on %s in %s", u.Name, g.name, t0.Sub(start).Round(time.Millisecond), node, took.Round(time.Millisecond))
		if node == "login3" {
			t.Fatalf("login landed on the frozen node")
		}
		if took > connectTimeout+10*time.Second {
			t.Errorf("login via %s took %s: a frozen node should cost at most connect_timeout (%s)", g.name, took, connectTimeout)
		}
	}
	var worst time.Duration
	for range w.gws {
		ex := <-watched
		if ex.err != nil {
			t.Fatal(ex.err)
		}
		worst = max(worst, ex.candidate)
	}
	t.Logf("frozen node out of every gateway's candidates after %s (bound %s)", worst.Round(time.Millisecond), deadBound)
	if worst > deadBound {
		t.Fatalf("frozen node excluded after %s, want ≤ %s", worst, deadBound)
	}

	// It thaws: its heartbeats resume, and it is back at the first one.
	thawed := time.Now()
	signal(syscall.SIGCONT)
	if _, err := w.waitAll(20*time.Second, func(v view) error { return v.usable("login3") }); err != nil {
		t.Fatalf("thawed node not back: %v", err)
	}
	t.Logf("thawed login3 usable on every gateway after %s", time.Since(thawed).Round(time.Millisecond))
	u := w.freshUser()
	if got := w.mustSSH(ctx, w.gws[0], u.Name+"+login3", u); got != "login3" {
		t.Fatalf("%s+login3 landed on %s", u.Name, got)
	}
}

// TestNodeWithoutAgent: a listed node whose agent is gone (never
// installed, or crashed for good) stays usable while its sshd answers the
// gateways' own banner probe, scored by sessions; once sshd stops
// answering, it is out.
func TestNodeWithoutAgent(t *testing.T) {
	const staleAfter = 3 * time.Second
	w := newWorldOpts(t, worldOpts{route: map[string]any{"stale_after": staleAfter.String()}}, 1.0, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := w.node("login2")
	n.agent.kill()
	for _, g := range w.gws {
		if _, err := w.waitView(g, 30*time.Second, func(v view) error {
			if !v["login2"].NoAgent {
				return fmt.Errorf("login2 not probed yet: %+v", v["login2"])
			}
			return v.usable("login2")
		}); err != nil {
			t.Fatal(err)
		}
	}
	u := w.freshUser()
	if got := w.mustSSH(ctx, w.gws[1], u.Name+"+login2", u); got != "login2" {
		t.Fatalf("explicit login2 landed on %s", got)
	}
	n.sshd.Kill()
	for _, g := range w.gws {
		if _, err := w.waitView(g, 30*time.Second, func(v view) error {
			if v.usable("login2") == nil {
				return fmt.Errorf("login2 still usable with sshd gone")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.burst(ctx, 4); count(got, "login2") > 0 {
		t.Fatalf("logins sent to a node whose sshd is gone: %v", got)
	}
}

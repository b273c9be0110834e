package clustere2e_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster/forge"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// TestForgedDeadChangesNothing replays issue 21's attack on real gateways
// and agents: root on a login node, holding the gossip key, runs a member
// of its own that joins whatever it can and declares login2, login3 and
// both gateways dead (SWIM "dead" at the highest incarnation, so no
// rebuttal wins) twice a second, on the port agents send to and on the
// gateways' pool port. Before, the nodes showed "up (no agent: sshd
// probed)" with load 0 and took every login, and the gateways split their
// shared state. Now, for several dead-node periods: every node stays alive
// with its own signed figures, routing still follows load, and the
// sessions, the session cap, an admin drain and a ban stay what they were
// on both gateways.
func TestForgedDeadChangesNothing(t *testing.T) {
	capped := cappedUser()
	// Greedy choice (choices ≥ candidates), so that "logins go by load"
	// is exact: the least loaded node takes every login. Two wrong
	// passwords ban an account for 30 minutes, without backoff.
	w := newWorldOpts(t, worldOpts{route: map[string]any{"choices": 4},
		throttle: map[string]any{"user_failures": 2, "user_window": "30m", "base_delay": "1ms", "max_delay": "1ms"}, rules: []policy.Rule{
			{Name: "capped", Users: []string{capped.Name}, Pools: []string{"general"}, MaxSessions: 1},
			{Name: "everyone", Groups: []string{"*"}, Pools: []string{"general"}},
		}}, 0.2, 4.0, 4.0, 4.0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gw1, gw2 := w.gws[0], w.gws[1]

	// The shared state the attack must not touch: a session through gw1
	// (of the capped user, so gw2 enforces the cap on it), an admin drain
	// of login4 through gw2, and a ban of a user after two wrong passwords
	// through gw1.
	h := w.hold(ctx, gw1, capped.Name+"+login3", capped)
	if r := w.cli(ctx, "drain", "--admin", gw2.admin, "login4"); r.ExitCode != 0 {
		t.Fatalf("frontdoor drain: %s", r)
	}
	banned := w.freshUser()
	for range 2 {
		if c, err := harness.DialSSH(ctx, gw1.sshAddr, banned.Name, keys.HostPublicKey, ssh.Password("not the password")); err == nil {
			c.Close()
			t.Fatal("a wrong password was accepted")
		}
	}
	before := func() error {
		for _, g := range w.gws {
			v, err := w.fetchView(ctx, g)
			if err != nil {
				return err
			}
			for _, n := range w.nodes {
				if err := v.usable(n.name); err != nil && n.name != "login4" {
					return fmt.Errorf("%s: %w", g.name, err)
				}
				if v[n.name].NoAgent || v[n.name].Load1 != n.load1 {
					return fmt.Errorf("%s: %s %+v, want its agent's load %.1f", g.name, n.name, v[n.name], n.load1)
				}
			}
			if !v["login4"].Draining {
				return fmt.Errorf("%s: login4 not draining", g.name)
			}
			// login3's agent counts no sessions (its metrics file): what
			// gw2 shows is gw1's session, counted while gw1 is alive in
			// the gateways' pool.
			if v["login3"].Sessions < 1 {
				return fmt.Errorf("%s: login3 sessions %d, want gw1's held one", g.name, v["login3"].Sessions)
			}
		}
		out, err := harness.AdminGet(ctx, gw2.admin, "/v1/explain?user="+url.QueryEscape(capped.Name))
		if err != nil {
			return err
		}
		if !strings.Contains(out, "sessions 1 of 1") {
			return fmt.Errorf("gw2 does not count %s's session against the cap: %s", capped.Name, out)
		}
		return w.stillBanned(ctx, gw2, banned)
	}
	if err := harness.WaitFor(ctx, 30*time.Second, before); err != nil {
		t.Fatalf("before the attack: %v", err)
	}

	// The rogue: login1's gossip key (every agent holds it) and a member of
	// its own.
	key, err := base64.StdEncoding.DecodeString(w.gossipKey)
	if err != nil {
		t.Fatal(err)
	}
	rogue := rogueMember(t, "login1-rogue", w.label, key)
	joined := 0
	for _, g := range w.gws {
		if _, err := rogue.Join([]string{g.gossipAddr}); err == nil {
			joined++
		}
		poolRogue := rogueMember(t, "login1-rogue2", w.label+"/gateways", key) // the pool's label is no secret
		if _, err := poolRogue.Join([]string{g.poolAddr}); err == nil {
			t.Fatalf("a holder of the agents' key joined %s's gateway pool", g.name)
		}
		poolRogue.Shutdown()
	}
	t.Logf("the rogue joined %d gateways' agent ports (membership there means nothing); none of their pools", joined)
	stop := w.forgeDeaths(t, key, []string{"login2", "login3", gw1.name, gw2.name}, 500*time.Millisecond)
	defer stop()

	// Three dead-node periods (node_dead_after 4 s) and a push/pull
	// round: nothing moves, and logins still go by load (login1; login2
	// and login3 are loaded, login4 drained).
	start := time.Now()
	for time.Since(start) < 15*time.Second {
		if err := before(); err != nil {
			t.Fatalf("%s into the attack: %v", time.Since(start).Round(time.Millisecond), err)
		}
		if d, err := w.explain(ctx, gw2, probeUser().Name); err != nil || len(d.order) == 0 || d.order[0] != "login1" {
			t.Fatalf("routing during the attack: %v\n%s", err, d.text)
		}
	}
	if got := w.burst(ctx, 4); count(got, "login1") != len(got) {
		t.Fatalf("logins during the attack went to %v, want login1 (the least loaded) only", got)
	}
	if err := h.ping("still-here"); err != nil {
		t.Fatalf("the held session: %v", err)
	}
	// The forged packets did reach the gateways' pool port, where
	// memberlist could not decrypt them.
	for _, g := range w.gws {
		refused := false
		for _, line := range strings.Split(tail(g.log, 1<<20), "\n") {
			refused = refused || (strings.Contains(line, `"transport":"gateway_pool"`) && strings.Contains(line, "Decrypt packet failed"))
		}
		if !refused {
			t.Fatalf("%s: its gateway pool logged no undecryptable packet", g.name)
		}
	}
}

// stillBanned checks that g refuses u's password logins as banned
// cluster-wide (the audit log says why).
func (w *world) stillBanned(ctx context.Context, g *gw, u *harness.User) error {
	if c, err := harness.DialSSH(ctx, g.sshAddr, u.Name, keys.HostPublicKey, ssh.Password("not the password")); err == nil {
		c.Close()
		return errors.New("password accepted")
	}
	evs, err := harness.ReadAudit(filepath.Join(filepath.Dir(g.cfg), "audit.jsonl"))
	if err != nil {
		return err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == "auth" && evs[i].User == u.Name {
			if !strings.Contains(evs[i].Reason, "banned cluster-wide") {
				return fmt.Errorf("%s: %s's password refused for %q, not a ban", g.name, u.Name, evs[i].Reason)
			}
			return nil
		}
	}
	return fmt.Errorf("%s: no auth record of %s", g.name, u.Name)
}

// rogueMember is a bare memberlist member with the agents' key: what root
// on a login node can run.
func rogueMember(t *testing.T, name, label string, key []byte) *memberlist.Memberlist {
	t.Helper()
	ml, err := forge.NewMember(name, label, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ml.Shutdown() })
	return ml
}

// forgeDeaths sends SWIM "dead" for each victim, at the highest
// incarnation, to both ports of every gateway, every period, until the
// returned stop is called.
func (w *world) forgeDeaths(t *testing.T, key []byte, victims []string, period time.Duration) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			for _, v := range victims {
				// The agent port's label, and the gateways' pool's (no
				// secret): only the key keeps the pool's shut.
				for _, port := range []struct {
					label string
					addr  func(*gw) string
				}{{w.label, func(g *gw) string { return g.gossipAddr }}, {w.label + "/gateways", func(g *gw) string { return g.poolAddr }}} {
					pkt, err := forge.Dead(key, port.label, v, "login1", math.MaxUint32)
					if err != nil {
						t.Error(err)
						return
					}
					for _, g := range w.gws {
						if err := forge.Send(port.addr(g), pkt); err != nil {
							t.Error(err)
							return
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// TestImpossibleHealthRefused: login2's agent, its root lost, reports
// figures no machine has (negative load and sessions, a billion CPUs)
// through its real metrics source. Both gateways refuse them, count
// impossible_health, take login2 as lying (no candidate, not even by
// name, and not rescued by the banner probe) and send no login there;
// after liar_penalty with honest figures it is back. Meanwhile login1
// claims no sessions while the gateways hold one there: they count theirs.
func TestImpossibleHealthRefused(t *testing.T) {
	const penalty = 6 * time.Second
	w := newWorldOpts(t, worldOpts{cluster: map[string]any{"liar_penalty": penalty.String()}}, 1.0, 2.0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	login2 := w.node("login2")

	// login1's metrics say 0 sessions; a session through gw1 sits there.
	holder := w.freshUser()
	h := w.hold(ctx, w.gws[0], holder.Name+"+login1", holder)
	if _, err := w.waitAll(healthBound, func(v view) error {
		if v["login1"].Sessions < 1 || v["login1"].Users < 1 {
			return fmt.Errorf("login1 sessions %d users %d, want the held one counted", v["login1"].Sessions, v["login1"].Users)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	lie := "load1: -50\nload5: -50\ncpus: 1000000000\nmem_avail_frac: 1\nsessions: -100\nusers: -7\n"
	if err := os.WriteFile(login2.metrics, []byte(lie), 0o644); err != nil {
		t.Fatal(err)
	}
	lied := time.Now()
	for _, g := range w.gws {
		if err := harness.WaitFor(ctx, 15*time.Second, func() error {
			r, err := w.refusals(ctx, g)
			if err != nil {
				return err
			}
			if r["impossible_health"] == 0 {
				return fmt.Errorf("%s: refusals %v, want impossible_health", g.name, r)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := w.waitExplain(g, probeUser().Name, healthBound, func(d decision) error {
			if d.candidate["login2"] || d.why["login2"] != "agent lied about the node" {
				return fmt.Errorf("login2: candidate %v, why %q", d.candidate["login2"], d.why["login2"])
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		v, err := w.fetchView(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if n := v["login2"]; !n.Lied || n.Load1 < 0 || n.Sessions < 0 || n.NoAgent {
			t.Fatalf("%s: login2 %+v", g.name, n)
		}
	}
	t.Logf("login2 refused and out of routing on both gateways %s after it lied", time.Since(lied).Round(time.Millisecond))
	if got := w.burst(ctx, 4); count(got, "login2") > 0 {
		t.Fatalf("logins went to the lying node: %v", got)
	}
	u := w.freshUser()
	if r := harness.Run(w.client(w.gws[1], u).SSH(ctx, u.Name+"+login2", "true"), nil); r.ExitCode != 255 ||
		!strings.Contains(string(r.Stderr), "agent lied about the node") {
		t.Fatalf("%s+login2 to the lying node: %s", u.Name, r)
	}

	// Honest again: still out until liar_penalty has passed since the last
	// lie, then back.
	if err := login2.setLoad(2.0); err != nil {
		t.Fatal(err)
	}
	honest := time.Now()
	took, err := w.waitAll(penalty+15*time.Second, func(v view) error { return v.usable("login2") })
	if err != nil {
		t.Fatal(err)
	}
	if took < penalty-time.Second {
		t.Fatalf("login2 back %s after its last lie, before liar_penalty (%s)", took, penalty)
	}
	t.Logf("login2 back %s after turning honest (liar_penalty %s)", time.Since(honest).Round(time.Millisecond), penalty)
	if err := h.ping("still-here"); err != nil {
		t.Fatal(err)
	}
}

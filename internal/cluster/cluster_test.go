package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// memberlist's Shutdown does not wait for a probe in flight; that
	// goroutine ends by itself within one probe interval.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"))
}

// Test keys: 32 bytes, base64.
const (
	testKey  = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	otherKey = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="
	// testGatewayKey seals gateway state; agents never get it.
	testGatewayKey = "Z2F0ZXdheS1vbmx5LWtleS0wMTIzNDU2Nzg5YWJjZGU="
)

// testConfig is a loopback member on a free port with aggressive timings.
func testConfig(name string, join ...string) Config {
	c := DefaultConfig()
	c.Name = name
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.Join = join
	c.Label = "frontdoor-test"
	c.SecretKeys = []string{testKey}
	c.GossipInterval = 20 * time.Millisecond
	// Fast, but with room for a loaded 2-core machine running -race:
	// a false suspicion is refuted, a false death would break tests.
	c.ProbeInterval = 500 * time.Millisecond
	c.ProbeTimeout = 400 * time.Millisecond
	c.SuspicionMult = 3
	c.PushPullInterval = 300 * time.Millisecond
	c.GatewaySyncInterval = 500 * time.Millisecond
	c.RejoinInterval = 200 * time.Millisecond
	c.DeadNodeReclaim = 100 * time.Millisecond
	return c
}

func start(t *testing.T, cfg Config, role Role) *Cluster {
	t.Helper()
	return startWith(t, cfg, testOptions(t, cfg, role))
}

// testOptions gives a gateway the gateway key and the test inventory, and
// an agent a host key the inventory knows under the agent's name.
func testOptions(t *testing.T, cfg Config, role Role) Options {
	o := Options{Role: role, Meta: map[string]string{"v": "test"}}
	switch role {
	case RoleGateway:
		o.Inventory = testNodes
	case RoleAgent:
		o.HostKey = testNodes.add(t, cfg.Name)
	}
	return o
}

func startWith(t *testing.T, cfg Config, o Options) *Cluster {
	t.Helper()
	if o.Role == RoleGateway && !cfg.Insecure && len(cfg.GatewayKeys) == 0 {
		cfg.GatewayKeys = []string{testGatewayKey}
	}
	c, err := Start(t.Context(), cfg, o)
	if err != nil {
		t.Fatalf("start %s: %v", cfg.Name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Deadlines for eventually: generous, because the whole team's tests share
// two cores; eventually returns as soon as the condition holds.
const (
	waitLong  = 20 * time.Second
	waitDeath = 30 * time.Second
)

// eventually polls cond until it returns nil or the deadline passes.
func eventually(t *testing.T, within time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true within %v: %v", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func health(pool string) Health {
	return Health{Pool: pool, Addr: "127.0.1.1:22", SSHDUp: true, At: time.Now(), CPUs: 4, Load1: 1, MemAvailFrac: 0.5}
}

func TestHealthAndDeath(t *testing.T) {
	gw1 := start(t, testConfig("gw1"), RoleGateway)
	gw2 := start(t, testConfig("gw2", gw1.LocalAddr()), RoleGateway)
	n1 := start(t, testConfig("n1", gw2.LocalAddr()), RoleAgent)
	n2 := start(t, testConfig("n2", gw1.LocalAddr()), RoleAgent)
	for _, n := range []*Cluster{n1, n2} {
		if err := n.PublishHealth(health("gpu")); err != nil {
			t.Fatal(err)
		}
	}
	for _, gw := range []*Cluster{gw1, gw2} {
		eventually(t, waitLong, func() error {
			nodes := gw.Nodes()
			if len(nodes) != 2 {
				return fmt.Errorf("%s sees %d nodes", gw.Name(), len(nodes))
			}
			for _, n := range nodes {
				if !n.Alive || !n.SSHDUp || n.Pool != "gpu" || n.CPUs != 4 {
					return fmt.Errorf("%s: node %+v", gw.Name(), n)
				}
			}
			return nil
		})
	}
	if ms := gw1.Members(); len(ms) != 4 || ms[2].Role != RoleAgent || ms[0].Meta["v"] != "test" {
		t.Fatalf("members: %+v", ms)
	}

	// A health change reaches the other gateway.
	h := health("gpu")
	h.SSHDUp = false
	n1.PublishHealth(h)
	eventually(t, waitLong, func() error {
		for _, n := range gw2.Nodes() {
			if n.Name == "n1" && n.SSHDUp {
				return errors.New("n1 still up")
			}
		}
		return nil
	})

	// n2 dies without leaving: both gateways mark it not alive.
	n2.Crash()
	for _, gw := range []*Cluster{gw1, gw2} {
		eventually(t, waitDeath, func() error {
			for _, n := range gw.Nodes() {
				if n.Name == "n2" && n.Alive {
					return fmt.Errorf("%s: n2 still alive", gw.Name())
				}
			}
			return nil
		})
	}
}

func TestSessionsAffinityDrainBanSurviveRestart(t *testing.T) {
	gw1 := start(t, testConfig("gw1"), RoleGateway)
	gw2 := start(t, testConfig("gw2", gw1.LocalAddr()), RoleGateway)
	n1 := start(t, testConfig("n1", gw1.LocalAddr()), RoleAgent)
	n1.PublishHealth(health("gpu"))

	// Routing then session start on gw1, seen from gw2.
	gw1.NoteRouted("n1")
	gw1.NoteRouted("n1")
	eventually(t, waitLong, func() error {
		if ns := gw2.Nodes(); len(ns) != 1 || ns[0].RecentlyRouted != 2 {
			return fmt.Errorf("gw2 nodes %+v", ns)
		}
		return nil
	})
	end := gw1.StartSession("alice", "n1")
	eventually(t, waitLong, func() error {
		if ss := gw2.Sessions(); len(ss) != 1 || ss[0] != (Session{Gateway: "gw1", Node: "n1", User: "alice", N: 1}) {
			return fmt.Errorf("gw2 sessions %+v", ss)
		}
		if a := gw2.Affinity("alice"); a == nil || a.Node != "n1" || a.Live != 1 {
			return fmt.Errorf("gw2 affinity %+v", a)
		}
		return nil
	})
	end()
	end() // idempotent
	eventually(t, waitLong, func() error {
		a := gw2.Affinity("alice")
		if a == nil || a.Node != "n1" || a.Live != 0 || a.LastSeen.IsZero() {
			return fmt.Errorf("gw2 affinity after end %+v", a)
		}
		if ss := gw2.Sessions(); len(ss) != 0 {
			return fmt.Errorf("sessions %+v", ss)
		}
		return nil
	})

	if err := gw2.Drain("n1", true, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := gw2.Ban("user:mallory", time.Now().Add(time.Hour), "failed logins"); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		if _, ok := gw1.Banned("user:mallory"); !ok {
			return errors.New("ban not seen")
		}
		if ns := gw1.Nodes(); !ns[0].Draining {
			return errors.New("drain not seen")
		}
		return nil
	})

	// A live session on gw1 when gw1 crashes and comes back: the restarted
	// gw1 gets affinity, drain and ban back from peers, and clears the
	// session it lost.
	gw1.StartSession("bob", "n1")
	eventually(t, waitLong, func() error {
		if a := gw2.Affinity("bob"); a == nil || a.Live != 1 {
			return fmt.Errorf("bob affinity %+v", a)
		}
		return nil
	})
	gw1.Close()
	gw1b := start(t, testConfig("gw1", gw2.LocalAddr()), RoleGateway)
	eventually(t, waitLong, func() error {
		if a := gw1b.Affinity("alice"); a == nil || a.Node != "n1" {
			return fmt.Errorf("alice affinity on restarted gw1: %+v", a)
		}
		if _, ok := gw1b.Banned("user:mallory"); !ok {
			return errors.New("ban lost")
		}
		ns := gw1b.Nodes()
		if len(ns) != 1 || !ns[0].Draining {
			return fmt.Errorf("nodes on restarted gw1: %+v", ns)
		}
		for _, c := range []*Cluster{gw1b, gw2} {
			if a := c.Affinity("bob"); a == nil || a.Live != 0 || a.Node != "n1" {
				return fmt.Errorf("%s: bob's lost session not cleared: %+v", c.Name(), a)
			}
		}
		return nil
	})

	if err := gw1b.Unban("user:mallory"); err != nil {
		t.Fatal(err)
	}
	if err := gw1b.Drain("n1", false, "admin"); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		if _, ok := gw2.Banned("user:mallory"); ok {
			return errors.New("unban not seen")
		}
		if ns := gw2.Nodes(); ns[0].Draining {
			return errors.New("undrain not seen")
		}
		return nil
	})
}

func TestWrongKeyOrLabelCannotJoin(t *testing.T) {
	gw1 := start(t, testConfig("gw1"), RoleGateway)
	for name, mod := range map[string]func(*Config){
		"wrong key":   func(c *Config) { c.SecretKeys = []string{otherKey} },
		"wrong label": func(c *Config) { c.Label = "other-cluster" },
		"no label":    func(c *Config) { c.Label = "" },
		"insecure":    func(c *Config) { c.SecretKeys = nil; c.Insecure = true },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig("intruder")
			mod(&cfg)
			c := start(t, cfg, RoleAgent)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if err := c.join(ctx, []string{gw1.LocalAddr()}); err == nil {
				t.Fatal("join succeeded")
			}
			for _, m := range gw1.Members() {
				if m.Name == "intruder" {
					t.Fatal("gw1 lists the intruder")
				}
			}
			if n := len(c.Members()); n != 1 {
				t.Fatalf("intruder sees %d members", n)
			}
		})
	}
}

// TestKeyRotation follows the documented steps at runtime: add the new key
// everywhere, make it primary, drop the old one; a member that only knows
// the new key can then join.
func TestKeyRotation(t *testing.T) {
	gw1 := start(t, testConfig("gw1"), RoleGateway)
	gw2 := start(t, testConfig("gw2", gw1.LocalAddr()), RoleGateway)
	keys, _ := Config{SecretKeys: []string{otherKey}}.keys()
	newKey := keys[0]
	for _, c := range []*Cluster{gw1, gw2} {
		if err := c.Keyring().AddKey(newKey); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*Cluster{gw1, gw2} {
		if err := c.Keyring().UseKey(newKey); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := Config{SecretKeys: []string{testKey}}.keys()
	for _, c := range []*Cluster{gw1, gw2} {
		if err := c.Keyring().RemoveKey(old[0]); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig("gw3", gw1.LocalAddr())
	cfg.SecretKeys = []string{otherKey}
	gw3 := start(t, cfg, RoleGateway)
	eventually(t, waitLong, func() error {
		for _, c := range []*Cluster{gw1, gw2, gw3} {
			if n := len(c.Members()); n != 3 {
				return fmt.Errorf("%s sees %d members", c.Name(), n)
			}
		}
		return nil
	})
}

func TestStartRefusesBadConfig(t *testing.T) {
	cfg := testConfig("x")
	cfg.SecretKeys = nil
	if _, err := Start(t.Context(), cfg, Options{Role: RoleGateway}); err == nil || !strings.Contains(err.Error(), "insecure") {
		t.Fatalf("err = %v", err)
	}
}

func TestHugeMetaDoesNotPanic(t *testing.T) {
	gw1 := start(t, testConfig("gw1"), RoleGateway)
	c, err := Start(t.Context(), testConfig("big", gw1.LocalAddr()), Options{
		Role: RoleAgent, Meta: map[string]string{"junk": strings.Repeat("x", 4096)}, HostKey: testNodes.add(t, "big"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eventually(t, waitLong, func() error {
		for _, m := range gw1.Members() {
			if m.Name == "big" && m.Role == RoleAgent {
				return nil
			}
		}
		return errors.New("big not seen")
	})
}

// TestCrashedGatewaySessionsIgnored: sessions of a gateway that died are
// gone with it, but the user's affinity remains.
func TestCrashedGatewaySessionsIgnored(t *testing.T) {
	gw1 := start(t, testConfig("gw1"), RoleGateway)
	gw2 := start(t, testConfig("gw2", gw1.LocalAddr()), RoleGateway)
	n1 := start(t, testConfig("n1", gw1.LocalAddr()), RoleAgent)
	n1.PublishHealth(health("gpu"))
	gw1.StartSession("carol", "n1")
	gw1.NoteRouted("n1")
	eventually(t, waitLong, func() error {
		if a := gw2.Affinity("carol"); a == nil || a.Live != 1 {
			return fmt.Errorf("affinity %+v", a)
		}
		if ns := gw2.Nodes(); len(ns) != 1 || ns[0].RecentlyRouted != 1 || len(gw2.Sessions()) != 1 {
			return fmt.Errorf("nodes %+v", ns)
		}
		return nil
	})
	gw1.Crash()
	eventually(t, waitDeath, func() error {
		if a := gw2.Affinity("carol"); a == nil || a.Live != 0 || a.Node != "n1" {
			return fmt.Errorf("affinity %+v", a)
		}
		if ns := gw2.Nodes(); len(ns) != 1 || ns[0].RecentlyRouted != 0 || len(gw2.Sessions()) != 0 {
			return fmt.Errorf("nodes %+v", ns)
		}
		return nil
	})
}

// TestRoutedCountsUntilMeasured: a routed login counts against the node
// on every gateway until the agent publishes a measurement taken after it.
func TestRoutedCountsUntilMeasured(t *testing.T) {
	gw1 := start(t, testConfig("gw1"), RoleGateway)
	gw2 := start(t, testConfig("gw2", gw1.LocalAddr()), RoleGateway)
	n1 := start(t, testConfig("n1", gw1.LocalAddr()), RoleAgent)
	h := health("gpu")
	h.At = time.Now().Add(-time.Second)
	n1.PublishHealth(h)
	for range 3 {
		gw1.NoteRouted("n1")
	}
	gw2.NoteRouted("n1")
	for _, gw := range []*Cluster{gw1, gw2} {
		eventually(t, waitLong, func() error {
			if ns := gw.Nodes(); len(ns) != 1 || ns[0].RecentlyRouted != 4 {
				return fmt.Errorf("%s nodes %+v", gw.Name(), ns)
			}
			return nil
		})
	}
	time.Sleep(2 * time.Millisecond) // the next measurement is strictly later (ms clock)
	h.At = time.Now()
	h.Sessions = 4
	n1.PublishHealth(h)
	eventually(t, waitLong, func() error {
		if ns := gw2.Nodes(); len(ns) != 1 || ns[0].RecentlyRouted != 0 || ns[0].Sessions != 4 {
			return fmt.Errorf("nodes %+v", ns)
		}
		return nil
	})
}

// TestBroadcastsAreRelayed: memberlist sends a user broadcast to a few
// members only; the others must get it from members relaying it. Push/pull
// is slowed down so it cannot do the work instead. Each member sends an
// update 8 times to random peers, so without relaying all 7 peers would
// rarely hear (about 2 %); with relaying, missing one is about 0.1 %.
// TestRelayRules checks the rule itself deterministically.
func TestBroadcastsAreRelayed(t *testing.T) {
	cfg := func(name string, join ...string) Config {
		c := testConfig(name, join...)
		c.RetransmitMult = 8 // 8 * ceil(log10(9)) = 8 sends per member
		c.PushPullInterval = time.Minute
		return c
	}
	first := start(t, cfg("m0"), RoleGateway)
	all := []*Cluster{first}
	for i := 1; i < 8; i++ {
		all = append(all, start(t, cfg(fmt.Sprintf("m%d", i), first.LocalAddr()), RoleAgent))
	}
	eventually(t, waitLong, func() error {
		for _, c := range all {
			if n := len(c.Members()); n != len(all) {
				return fmt.Errorf("%s sees %d members", c.Name(), n)
			}
		}
		return nil
	})
	src := all[len(all)-1]
	if err := src.PublishHealth(health("gpu")); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		for _, c := range all {
			if _, ok := c.HealthOf(src.Name()); !ok {
				return fmt.Errorf("%s has not heard", c.Name())
			}
		}
		return nil
	})
}

// TestRelayRules: health learned by broadcast is queued again; gateway
// state and anything from push/pull is not.
func TestRelayRules(t *testing.T) {
	c := start(t, testConfig("solo"), RoleGateway)
	ver := uint64(time.Now().Add(30 * time.Second).UnixNano())
	h := signed(t, entry{Key: "h/n9", Ver: ver, Origin: "n9", Val: val(t, health("gpu"))})
	queued := func() int { return c.queue.NumQueued() }
	base := queued()
	c.apply([]entry{signed(t, entry{Key: "h/n8", Ver: ver, Origin: "n8", Val: h.Val})}, false, false)
	c.apply([]entry{{Key: "a/zed", Ver: ver, Origin: "gw9", Val: val(t, affinityVal{Node: "n9", Seen: time.Now()})}}, true, true)
	if n := queued(); n != base {
		t.Fatalf("queued %d, want %d", n, base)
	}
	c.apply([]entry{h}, true, false)
	if n := queued(); n != base+1 {
		t.Fatalf("health not relayed: queued %d", n)
	}
	c.apply([]entry{h}, true, false) // known: not again
	if n := queued(); n != base+1 {
		t.Fatalf("known health relayed again: queued %d", n)
	}
}

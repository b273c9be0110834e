package cluster

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
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

// testConfig is a loopback member on free ports with aggressive timings.
// join lists the gateways' agent ports (LocalAddr): what an agent sends
// to; gateways join each other with gatewayConfig.
func testConfig(name string, join ...string) Config {
	c := DefaultConfig()
	c.Name = name
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.GatewayPort = 0
	c.Join = join
	c.HeartbeatInterval = 100 * time.Millisecond
	// Room for a loaded 2-core machine running -race (seen: a heartbeat
	// 1.5 s late at load 11): a live node must not die of it.
	c.NodeDeadAfter = 3 * time.Second
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

// gatewayConfig is testConfig for a gateway joining the gateways' pool of
// peers.
func gatewayConfig(name string, peers ...*Cluster) Config {
	c := testConfig(name)
	for _, p := range peers {
		c.GatewayJoin = append(c.GatewayJoin, p.GatewayAddr())
	}
	return c
}

// agentConfig is testConfig for an agent sending to gws.
func agentConfig(name string, gws ...*Cluster) Config {
	c := testConfig(name)
	for _, g := range gws {
		c.Join = append(c.Join, g.LocalAddr())
	}
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
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	gw2 := start(t, gatewayConfig("gw2", gw1), RoleGateway)
	n1 := start(t, agentConfig("n1", gw1, gw2), RoleAgent)
	n2 := start(t, agentConfig("n2", gw1, gw2), RoleAgent)
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
	// The gateways' pool holds the gateways, and only them.
	eventually(t, waitLong, func() error {
		if ms := gw1.Members(); len(ms) != 2 || ms[1].Name != "gw2" || ms[1].Role != RoleGateway || ms[0].Meta["v"] != "test" {
			return fmt.Errorf("members: %+v", ms)
		}
		return nil
	})
	if ms := n1.Members(); len(ms) != 0 {
		t.Fatalf("an agent sees members: %+v", ms)
	}

	// A health change reaches both gateways.
	h := health("gpu")
	h.SSHDUp = false
	n1.PublishHealth(h)
	for _, gw := range []*Cluster{gw1, gw2} {
		eventually(t, waitLong, func() error {
			for _, n := range gw.Nodes() {
				if n.Name == "n1" && n.SSHDUp {
					return errors.New("n1 still up")
				}
			}
			return nil
		})
	}

	// n2 dies without a word: its heartbeats stop, and both gateways
	// mark it not alive within NodeDeadAfter.
	n2.Crash()
	crashed := time.Now()
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
	if took := time.Since(crashed); took > waitDeath {
		t.Fatalf("death noticed after %v", took)
	}
	t.Logf("dead node out of both gateways %v after the crash (node_dead_after %v)", time.Since(crashed).Round(time.Millisecond), testConfig("x").NodeDeadAfter)
}

// TestHeartbeatKeepsAlive: a node whose measurement does not change (or
// cannot be taken: the agent publishes nothing new) stays alive on its
// heartbeats, and its health's measurement time stays the old one, so
// route.stale_after still judges the figures.
func TestHeartbeatKeepsAlive(t *testing.T) {
	gw := start(t, gatewayConfig("gw1"), RoleGateway)
	n := start(t, agentConfig("n1", gw), RoleAgent)
	h := health("gpu")
	h.At = time.Now().Add(-time.Second).Truncate(time.Millisecond)
	if err := n.PublishHealth(h); err != nil {
		t.Fatal(err)
	}
	var first uint64
	eventually(t, waitLong, func() error {
		gw.mu.Lock()
		defer gw.mu.Unlock()
		if e := gw.st.live("h/n1"); e != nil {
			first = e.Ver
			return nil
		}
		return errors.New("no health yet")
	})
	// Three dead-node periods later it is still alive, on newer versions
	// of the same measurement.
	until := time.Now().Add(3 * testConfig("x").NodeDeadAfter)
	for time.Now().Before(until) {
		ns := gw.Nodes()
		if len(ns) != 1 || !ns[0].Alive {
			t.Fatalf("heartbeating node not alive: %+v", ns)
		}
		if !ns[0].HealthAt.Equal(h.At) {
			t.Fatalf("health time %v, want the measurement's %v", ns[0].HealthAt, h.At)
		}
		time.Sleep(50 * time.Millisecond) // sampling an invariant over time, not waiting for an event
	}
	gw.mu.Lock()
	last := gw.st.live("h/n1").Ver
	gw.mu.Unlock()
	if last <= first {
		t.Fatalf("no newer version after %v of heartbeats", 3*testConfig("x").NodeDeadAfter)
	}
}

// TestHealthNotRelayed: each gateway takes a node's health only from the
// node: an agent that reaches only gw1 is unknown to gw2, however long
// they gossip. (No relay also means no member can keep a dead node alive
// by replaying its last health.)
func TestHealthNotRelayed(t *testing.T) {
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	gw2 := start(t, gatewayConfig("gw2", gw1), RoleGateway)
	n := start(t, agentConfig("n1", gw1), RoleAgent)
	n.PublishHealth(health("gpu"))
	gw1.Drain("n1", true, "test") // gateway state does travel between them
	eventually(t, waitLong, func() error {
		if ns := gw1.Nodes(); len(ns) != 1 || !ns[0].Alive {
			return fmt.Errorf("gw1: %+v", ns)
		}
		gw2.mu.Lock()
		defer gw2.mu.Unlock()
		if gw2.st.live("d/n1") == nil {
			return errors.New("gw2: no drain yet")
		}
		return nil
	})
	for range 3 {
		gw2.syncGateways()
	}
	if _, ok := gw2.HealthOf("n1"); ok {
		t.Fatal("gw2 took n1's health from gw1")
	}
}

func TestSessionsAffinityDrainBanSurviveRestart(t *testing.T) {
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	gw2 := start(t, gatewayConfig("gw2", gw1), RoleGateway)
	n1 := start(t, agentConfig("n1", gw1, gw2), RoleAgent)
	n1.PublishHealth(health("gpu"))
	eventually(t, waitLong, func() error {
		for _, gw := range []*Cluster{gw1, gw2} {
			if len(gw.Nodes()) != 1 || len(gw.Members()) != 2 {
				return fmt.Errorf("%s: nodes %+v members %+v", gw.Name(), gw.Nodes(), gw.Members())
			}
		}
		return nil
	})

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
	// gw1 gets affinity, drain and ban back from gw2, and clears the
	// session it lost; the node's health comes from the node.
	gw1.StartSession("bob", "n1")
	eventually(t, waitLong, func() error {
		if a := gw2.Affinity("bob"); a == nil || a.Live != 1 {
			return fmt.Errorf("bob affinity %+v", a)
		}
		return nil
	})
	agentPort := gw1.LocalAddr()
	gw1.Close()
	cfg := gatewayConfig("gw1", gw2)
	_, port, _ := net.SplitHostPort(agentPort)
	cfg.BindPort, _ = strconv.Atoi(port) // where n1 sends
	gw1b := start(t, cfg, RoleGateway)
	eventually(t, waitLong, func() error {
		if a := gw1b.Affinity("alice"); a == nil || a.Node != "n1" {
			return fmt.Errorf("alice affinity on restarted gw1: %+v", a)
		}
		if _, ok := gw1b.Banned("user:mallory"); !ok {
			return errors.New("ban lost")
		}
		ns := gw1b.Nodes()
		if len(ns) != 1 || !ns[0].Draining || !ns[0].Alive {
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

// TestOnlyGatewaysInTheGatewaysPool: the gateways' pool refuses anyone
// without the gateway keys: an agent's key (what a login node's root
// holds), another gateway key, another label, clear text.
func TestOnlyGatewaysInTheGatewaysPool(t *testing.T) {
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	agentKeys, _ := decodeKeys("k", []string{testKey})
	gwKeys, _ := decodeKeys("k", []string{testGatewayKey})
	otherGw, _ := decodeKeys("k", []string{otherKey})
	for name, tc := range map[string]struct {
		label string
		keys  [][]byte
	}{
		"agent key, gateway label": {"frontdoor-test" + gatewayLabelSuffix, agentKeys},
		"agent key as is":          {"frontdoor-test", agentKeys},
		"other gateway key":        {"frontdoor-test" + gatewayLabelSuffix, gatewayPoolKeys(otherGw)},
		"gateway key, raw":         {"frontdoor-test" + gatewayLabelSuffix, gwKeys},
		"right key, agent label":   {"frontdoor-test", gatewayPoolKeys(gwKeys)},
		"clear text":               {"frontdoor-test" + gatewayLabelSuffix, nil},
	} {
		t.Run(name, func(t *testing.T) {
			ml := rawMember(t, "intruder", tc.label, tc.keys)
			if _, err := ml.Join([]string{gw1.GatewayAddr()}); err == nil {
				t.Fatal("join succeeded")
			}
			for _, m := range gw1.Members() {
				if m.Name == "intruder" {
					t.Fatal("gw1 lists the intruder")
				}
			}
		})
	}
	// Control: the right derived key and label get in, so the cases above
	// fail for the reason they name.
	ml := rawMember(t, "insider", "frontdoor-test"+gatewayLabelSuffix, gatewayPoolKeys(gwKeys))
	if _, err := ml.Join([]string{gw1.GatewayAddr()}); err != nil {
		t.Fatalf("control join: %v", err)
	}
}

// rawMember is a bare memberlist member on loopback: what someone holding
// keys can run without frontdoor.
func rawMember(t *testing.T, name, label string, keys [][]byte) *memberlist.Memberlist {
	t.Helper()
	return rawMemberWith(t, name, label, keys, nil)
}

// TestAgentKeyRotation follows the documented steps at runtime on the
// gateways' agent port: add the new key, make it primary, drop the old
// one; an agent that only knows the new key is then heard, and one with
// only the old key is not.
func TestAgentKeyRotation(t *testing.T) {
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	keys, _ := Config{SecretKeys: []string{otherKey}}.keys()
	newKey := keys[0]
	if err := gw1.Keyring().AddKey(newKey); err != nil {
		t.Fatal(err)
	}
	if err := gw1.Keyring().UseKey(newKey); err != nil {
		t.Fatal(err)
	}
	old, _ := Config{SecretKeys: []string{testKey}}.keys()
	if err := gw1.Keyring().RemoveKey(old[0]); err != nil {
		t.Fatal(err)
	}
	cfg := agentConfig("n-new", gw1)
	cfg.SecretKeys = []string{otherKey}
	start(t, cfg, RoleAgent).PublishHealth(health("gpu"))
	start(t, agentConfig("n-old", gw1), RoleAgent).PublishHealth(health("gpu"))
	eventually(t, waitLong, func() error {
		if _, ok := gw1.HealthOf("n-new"); !ok {
			return errors.New("agent with the new key not heard")
		}
		return nil
	})
	if _, ok := gw1.HealthOf("n-old"); ok {
		t.Fatal("agent with the removed key heard")
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	cfg := testConfig("x")
	cfg.SecretKeys = nil
	if _, err := Start(t.Context(), cfg, Options{Role: RoleGateway}); err == nil || !strings.Contains(err.Error(), "insecure") {
		t.Fatalf("err = %v", err)
	}
	cfg = testConfig("x")
	if _, err := Start(t.Context(), cfg, Options{Role: RoleAgent, HostKey: testNodes.add(t, "x")}); err == nil || !strings.Contains(err.Error(), "join") {
		t.Fatalf("agent without gateways: err = %v", err)
	}
}

func TestHugeMetaDoesNotPanic(t *testing.T) {
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	cfg := gatewayConfig("big", gw1)
	cfg.GatewayKeys = []string{testGatewayKey}
	c, err := Start(t.Context(), cfg, Options{
		Role: RoleGateway, Meta: map[string]string{"junk": strings.Repeat("x", 4096)}, Inventory: testNodes,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eventually(t, waitLong, func() error {
		for _, m := range gw1.Members() {
			if m.Name == "big" && m.Role == RoleGateway {
				return nil
			}
		}
		return errors.New("big not seen")
	})
}

// TestCrashedGatewaySessionsIgnored: sessions of a gateway that died are
// gone with it, but the user's affinity remains.
func TestCrashedGatewaySessionsIgnored(t *testing.T) {
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	gw2 := start(t, gatewayConfig("gw2", gw1), RoleGateway)
	n1 := start(t, agentConfig("n1", gw1, gw2), RoleAgent)
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
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	gw2 := start(t, gatewayConfig("gw2", gw1), RoleGateway)
	n1 := start(t, agentConfig("n1", gw1, gw2), RoleAgent)
	h := health("gpu")
	h.At = time.Now().Add(-time.Second)
	n1.PublishHealth(h)
	eventually(t, waitLong, func() error {
		if len(gw1.Members()) != 2 {
			return errors.New("gateways not joined")
		}
		return nil
	})
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

// oldGateway is a gateway of the release with one shared pool, as far as
// this one can tell: a member of the agent port's pool with the gateway
// role that sends and receives sealed gateway state there.
type oldGateway struct {
	mu  sync.Mutex
	got [][]byte // sealed messages received
}

func (d *oldGateway) NodeMeta(int) []byte { return []byte(RoleGateway) }
func (d *oldGateway) NotifyMsg(b []byte) {
	if len(b) > 0 && b[0] == msgSealed {
		d.mu.Lock()
		d.got = append(d.got, slices.Clone(b))
		d.mu.Unlock()
	}
}
func (d *oldGateway) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *oldGateway) LocalState(bool) []byte                     { return []byte("{}") }
func (d *oldGateway) MergeRemoteState([]byte, bool)              {}

func (d *oldGateway) received() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.got)
}

// TestSinglePoolCompat: during a rolling upgrade (single_pool_compat) a
// gateway of this release exchanges sealed gateway state with a gateway of
// the previous release over the old pool, and counts its sessions while
// that pool says it is alive; without the setting it takes nothing sealed
// on the agent port.
func TestSinglePoolCompat(t *testing.T) {
	cfg := gatewayConfig("gw-new")
	cfg.SinglePoolCompat = true
	gwNew := start(t, cfg, RoleGateway)
	gwStrict := start(t, gatewayConfig("gw-strict"), RoleGateway)
	agentKeys, _ := decodeKeys("k", []string{testKey})
	old := &oldGateway{}
	oldMember := rawMemberWith(t, "gw-old", "frontdoor-test", agentKeys, old)
	if _, err := oldMember.Join([]string{gwNew.LocalAddr(), gwStrict.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	seal := judge(t)
	seal.cfg.Label = "frontdoor-test"
	now := time.Now()
	msg, err := seal.sealEntries(msgSealed, []entry{
		{Key: "s/gw-old/n1/alice", Ver: uint64(now.UnixNano()), Origin: "gw-old", Val: val(t, sessionVal{N: 1})},
		{Key: "d/n1", Ver: uint64(now.UnixNano()), Origin: "gw-old", Val: val(t, drainVal{Draining: true, Until: now.Add(time.Hour)})},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, gw := range []*Cluster{gwNew, gwStrict} {
		if err := oldMember.SendToAddress(memberlist.Address{Addr: gw.LocalAddr()}, append([]byte{msgSealed}, msg...)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, waitLong, func() error {
		if ss := gwNew.Sessions(); len(ss) != 1 || ss[0].Gateway != "gw-old" {
			return fmt.Errorf("gw-new sessions %+v", ss)
		}
		if gwStrict.Refusals()[refusedSealedAgentPort] == 0 {
			return fmt.Errorf("gw-strict refusals %v", gwStrict.Refusals())
		}
		return nil
	})
	if ss := gwStrict.Sessions(); len(ss) != 0 {
		t.Fatalf("gw-strict took gateway state from the agent port: %+v", ss)
	}
	// The new gateway's writes reach the old one over the old pool.
	if err := gwNew.Drain("n2", true, "admin"); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		if old.received() == 0 {
			return errors.New("the old gateway got nothing")
		}
		return nil
	})
	// The old gateway leaves: its sessions stop counting.
	oldMember.Leave(time.Second)
	oldMember.Shutdown()
	eventually(t, waitDeath, func() error {
		if ss := gwNew.Sessions(); len(ss) != 0 {
			return fmt.Errorf("sessions of a gateway gone: %+v", ss)
		}
		return nil
	})
}

package cluster

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster/forge"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// testInventory is the gateways' inventory in these tests: every agent a
// test starts is listed at 127.0.1.1:22 in pool gpu, with the host key
// made for it.
type testInventory struct {
	mu   sync.Mutex
	keys map[string]ssh.Signer
}

var testNodes = &testInventory{keys: map[string]ssh.Signer{}}

// add returns the host key of node name, making it on first use.
func (inv *testInventory) add(t testing.TB, name string) ssh.Signer {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if s, ok := inv.keys[name]; ok {
		return s
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	inv.keys[name] = s
	return s
}

func (inv *testInventory) Node(name string) (node.Node, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if _, ok := inv.keys[name]; !ok {
		return node.Node{}, false
	}
	return node.Node{Name: name, Addr: "127.0.1.1:22", Pool: "gpu"}, true
}

func (inv *testInventory) CheckHostKey(name string, key ssh.PublicKey) error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	s, ok := inv.keys[name]
	if !ok || string(s.PublicKey().Marshal()) != string(key.Marshal()) {
		return fmt.Errorf("not %s's host key", name)
	}
	return nil
}

// signed signs a health entry with the host key of its origin.
func signed(t testing.TB, e entry) entry {
	return signedBy(t, e, e.Origin)
}

// signedBy signs a health entry with node's host key.
func signedBy(t testing.TB, e entry, node string) entry {
	c := &Cluster{hostKey: testNodes.add(t, node), log: slog.New(slog.DiscardHandler)}
	c.signHealth(&e)
	return e
}

// unlisted signs with a key of a node the inventory does not list.
func unlisted(t testing.TB, e entry) entry {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{hostKey: s, log: slog.New(slog.DiscardHandler)}
	c.signHealth(&e)
	return e
}

// judge is a gateway's admission logic without a network.
func judge(t testing.TB) *Cluster {
	cfg := DefaultConfig()
	cfg.Name = "gw1"
	keys, err := decodeKeys("gateway_keys", []string{testGatewayKey})
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSealer(keys)
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{cfg: cfg, role: RoleGateway, inv: testNodes, sealer: s, now: time.Now,
		log: slog.New(slog.DiscardHandler), st: newStore("gw1", cfg), alive: map[string]Member{},
		refusals: map[string]uint64{}, refusalLogged: map[string]time.Time{}}
}

func reasonOf(err error) string {
	var r *refusal
	if errors.As(err, &r) {
		return r.reason
	}
	return ""
}

// TestAdmit is the table of what a gateway takes from the gossip.
func TestAdmit(t *testing.T) {
	c := judge(t)
	testNodes.add(t, "login1")
	testNodes.add(t, "login2")
	now := time.Now()
	ver := uint64(now.UnixNano())
	hv := func(h Health) json.RawMessage { b, _ := json.Marshal(h); return b }
	good := Health{Pool: "gpu", Addr: "127.0.1.1:22", SSHDUp: true, At: now, CPUs: 1}
	otherAddr, otherPool := good, good
	otherAddr.Addr = "10.9.9.9:22"
	otherPool.Pool = "general"
	// Figures no node can report, each on its own.
	impossible := func(f func(*Health)) json.RawMessage { h := good; f(&h); return hv(h) }
	lie := func(f func(*Health)) entry {
		return signed(t, entry{Key: "h/login1", Ver: ver, Origin: "login1", Val: impossible(f)})
	}
	tampered := signed(t, entry{Key: "h/login1", Ver: ver, Origin: "login1", Val: hv(good)})
	tampered.Val = hv(otherPool)
	for _, tc := range []struct {
		name   string
		e      entry
		sealed bool
		want   string // refusal reason; "" = admitted
	}{
		{"own health, signed", signed(t, entry{Key: "h/login1", Ver: ver, Origin: "login1", Val: hv(good)}), false, ""},
		{"own tombstone, signed", signed(t, entry{Key: "h/login1", Ver: ver, Origin: "login1", Del: true}), false, ""},
		{"unsigned health", entry{Key: "h/login1", Ver: ver, Origin: "login1", Val: hv(good)}, false, refusedSignature},
		{"another node's health, own key", signedBy(t, entry{Key: "h/login1", Ver: ver, Origin: "login1", Val: hv(good)}, "login2"), false, refusedHostKey},
		{"another node's health, own name", signedBy(t, entry{Key: "h/login1", Ver: ver, Origin: "login2", Val: hv(good)}, "login2"), false, refusedNotOwner},
		{"tampered after signing", tampered, false, refusedSignature},
		{"unsigned tombstone of another", entry{Key: "h/login1", Ver: ver, Origin: "login1", Del: true}, false, refusedSignature},
		{"address claim", signed(t, entry{Key: "h/login1", Ver: ver, Origin: "login1", Val: hv(otherAddr)}), false, refusedAddrClaim},
		{"pool claim", signed(t, entry{Key: "h/login1", Ver: ver, Origin: "login1", Val: hv(otherPool)}), false, refusedPoolClaim},
		{"not in inventory", unlisted(t, entry{Key: "h/ghost", Ver: ver, Origin: "ghost", Val: hv(good)}), false, refusedUnknown},
		{"version from the far future", signed(t, entry{Key: "h/login1", Ver: math.MaxUint64, Origin: "login1", Val: hv(good)}), false, refusedFuture},
		{"drain in clear", entry{Key: "d/login1", Ver: ver, Origin: "login2", Val: val(t, drainVal{Draining: true})}, false, refusedUnsealed},
		{"unban in clear", entry{Key: "b/user:alice", Ver: ver, Origin: "login2", Del: true}, false, refusedUnsealed},
		{"affinity in clear", entry{Key: "a/alice", Ver: ver, Origin: "login2", Val: val(t, affinityVal{Node: "login2", Seen: now})}, false, refusedUnsealed},
		{"sessions in clear", entry{Key: "s/gw1/login2/alice", Ver: ver, Origin: "gw1", Val: val(t, sessionVal{N: 9})}, false, refusedUnsealed},
		{"sealed drain", entry{Key: "d/login1", Ver: ver, Origin: "gw2", Val: val(t, drainVal{Draining: true})}, true, ""},
		{"sealed sessions of another gateway", entry{Key: "s/gw1/login2/alice", Ver: ver, Origin: "gw2", Val: val(t, sessionVal{N: 1})}, true, refusedNotOwner},
		{"sealed, far future", entry{Key: "b/user:alice", Ver: math.MaxUint64, Origin: "gw2"}, true, refusedFuture},
		{"unknown kind", entry{Key: "x/y", Ver: ver, Origin: "gw2"}, true, refusedMalformed},
		{"control characters", entry{Key: "a/ali\x00ce", Ver: ver, Origin: "gw2"}, true, refusedMalformed},
		{"health key with a slash", signed(t, entry{Key: "h/login1/x", Ver: ver, Origin: "login1/x"}), false, refusedMalformed},
		{"no origin", entry{Key: "a/alice", Ver: ver}, true, refusedMalformed},
		{"negative load", lie(func(h *Health) { h.Load1 = -3 }), false, refusedImpossible},
		{"negative load15", lie(func(h *Health) { h.Load15 = -0.01 }), false, refusedImpossible},
		{"load beyond every task", lie(func(h *Health) { h.Load5 = 1 << 23 }), false, refusedImpossible},
		{"negative sessions", lie(func(h *Health) { h.Sessions = -1 }), false, refusedImpossible},
		{"negative users", lie(func(h *Health) { h.Users = -100 }), false, refusedImpossible},
		{"negative cap", lie(func(h *Health) { h.MaxSessions = -1 }), false, refusedImpossible},
		{"sessions beyond every task", lie(func(h *Health) { h.Sessions = 1<<22 + 1 }), false, refusedImpossible},
		{"a billion CPUs", lie(func(h *Health) { h.CPUs = 1_000_000_000 }), false, refusedImpossible},
		{"no CPUs", lie(func(h *Health) { h.CPUs = 0 }), false, refusedImpossible},
		{"negative CPUs", lie(func(h *Health) { h.CPUs = -4 }), false, refusedImpossible},
		{"more memory free than there is", lie(func(h *Health) { h.MemAvailFrac = 1.5 }), false, refusedImpossible},
		{"negative free memory", lie(func(h *Health) { h.MemAvailFrac = -0.5 }), false, refusedImpossible},
		{"pressure above 100%", lie(func(h *Health) { h.CPUPressure = 2 }), false, refusedImpossible},
		{"negative pressure", lie(func(h *Health) { h.MemPressure = -1 }), false, refusedImpossible},
		{"utilisation above 100%", lie(func(h *Health) { h.CPUUtil = 1.01 }), false, refusedImpossible},
		{"measured in the future", lie(func(h *Health) { h.At = now.Add(time.Hour) }), false, refusedImpossible},
		{"never measured", lie(func(h *Health) { h.At = time.Time{} }), false, refusedImpossible},
		{"too many warnings", lie(func(h *Health) { h.Warnings = make([]string, 9) }), false, refusedImpossible},
		{"at the bounds", lie(func(h *Health) {
			h.CPUs, h.Load1, h.Sessions, h.Users, h.MaxSessions, h.MemAvailFrac, h.CPUPressure = 8192, 1<<22, 1<<22, 0, 1<<22, 1, 1
		}), false, ""},
		{"an unknown warning is no lie", lie(func(h *Health) { h.Warnings = []string{"made up"} }), false, ""},
		{"impossible but unsigned", entry{Key: "h/login1", Ver: ver, Origin: "login1", Val: impossible(func(h *Health) { h.Load1 = -1 })}, false, refusedSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			_, err := c.admit(&e, tc.sealed, now)
			if got := reasonOf(err); got != tc.want || (tc.want == "" && err != nil) {
				t.Fatalf("admit: %v (reason %q), want %q", err, got, tc.want)
			}
		})
	}
}

// TestAgentKeepsNoGatewayState: gateway state offered to an agent is
// skipped, not stored, so a login node learns nothing of who is logged in
// where and relays nothing it cannot judge.
func TestAgentKeepsNoGatewayState(t *testing.T) {
	c := judge(t)
	c.role, c.inv, c.sealer = RoleAgent, nil, nil
	for _, k := range []string{"s/gw1/login1/alice", "a/alice", "d/login1", "b/user:alice", "r/gw1/login1"} {
		e := entry{Key: k, Ver: uint64(time.Now().UnixNano()), Origin: "gw1", Val: json.RawMessage(`{}`)}
		if skip, err := c.admit(&e, false, time.Now()); !skip || err != nil {
			t.Fatalf("%s: skip %v err %v", k, skip, err)
		}
	}
}

func TestSealer(t *testing.T) {
	keys, _ := decodeKeys("k", []string{testGatewayKey, otherKey})
	both, _ := newSealer(keys)
	first, _ := newSealer(keys[:1])
	second, _ := newSealer(keys[1:])
	msg := both.seal([]byte("state"), []byte("Slabel"))
	if p, err := first.open(msg, []byte("Slabel")); err != nil || string(p) != "state" {
		t.Fatalf("open with the sealing key: %q %v", p, err)
	}
	if _, err := second.open(msg, []byte("Slabel")); err == nil {
		t.Fatal("opened with a key that did not seal")
	}
	if _, err := first.open(msg, []byte("Sother")); err == nil {
		t.Fatal("opened under another label")
	}
	bad := append([]byte(nil), msg...)
	bad[len(bad)-1] ^= 1
	if _, err := first.open(bad, []byte("Slabel")); err == nil {
		t.Fatal("opened a tampered message")
	}
	// Rotation: a member with the new key first still opens the old one's.
	rot, _ := newSealer([][]byte{keys[1], keys[0]})
	if _, err := rot.open(msg, []byte("Slabel")); err != nil {
		t.Fatalf("rotation: %v", err)
	}
	for _, short := range [][]byte{nil, msg[:3], msg[:20]} {
		if _, err := first.open(short, []byte("Slabel")); err == nil {
			t.Fatalf("opened %d bytes", len(short))
		}
	}
}

// TestSealedReplayRefused: a sealed message is good for sealMaxAge.
func TestSealedReplayRefused(t *testing.T) {
	c := judge(t)
	msg, err := c.sealEntries(msgSealed, []entry{{Key: "d/login1", Ver: 1, Origin: "gw2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.openEntries(msgSealed, msg); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	later := time.Now().Add(sealMaxAge + time.Second)
	c.now = func() time.Time { return later }
	if _, err := c.openEntries(msgSealed, msg); err == nil || !strings.Contains(err.Error(), "replay") {
		t.Fatalf("replayed: %v", err)
	}
}

// TestRogueAgent runs a real cluster with a rogue agent: a listed node whose
// root was lost, holding the gossip key and its own host key. Nothing it
// sends changes routing, drains, bans, affinity, another node's health,
// or who is alive: not entries by any path (direct packets in clear to
// each gateway, old-style broadcasts, a push/pull), and not SWIM "dead"
// messages for a node and a gateway at the highest incarnation.
func TestRogueAgent(t *testing.T) {
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	gw2 := start(t, gatewayConfig("gw2", gw1), RoleGateway)
	honest := start(t, agentConfig("login1", gw1, gw2), RoleAgent)
	if err := honest.PublishHealth(health("gpu")); err != nil {
		t.Fatal(err)
	}
	if err := gw1.Ban("user:mallory", time.Now().Add(time.Hour), "test"); err != nil {
		t.Fatal(err)
	}
	gw1.StartSession("alice", "login1")
	gw2.StartSession("bob", "login1")
	settled := func() error {
		for _, gw := range []*Cluster{gw1, gw2} {
			ns := gw.Nodes()
			if len(ns) != 1 || ns[0].Name != "login1" || !ns[0].Alive || !ns[0].SSHDUp || ns[0].Draining || ns[0].Lied || ns[0].Sessions != 2 {
				return fmt.Errorf("%s: nodes %+v", gw.Name(), ns)
			}
			if len(gw.Members()) != 2 {
				return fmt.Errorf("%s: members %+v", gw.Name(), gw.Members())
			}
			if _, ok := gw.Banned("user:mallory"); !ok {
				return fmt.Errorf("%s: ban not spread", gw.Name())
			}
			for _, u := range []string{"alice", "bob"} {
				if a := gw.Affinity(u); a == nil || a.Node != "login1" || a.Live != 1 {
					return fmt.Errorf("%s: %s affinity %+v", gw.Name(), u, a)
				}
			}
			if ss := gw.Sessions(); len(ss) != 2 {
				return fmt.Errorf("%s: sessions %+v", gw.Name(), ss)
			}
		}
		return nil
	}
	eventually(t, waitLong, settled)

	now := time.Now()
	ver := uint64(now.Add(30 * time.Second).UnixNano())
	down := health("gpu")
	down.SSHDUp = false
	claim := health("gpu")
	claim.Addr = "10.0.0.99:22" // a GPU node's sshd, say
	forged := []entry{
		signedBy(t, entry{Key: "h/login1", Ver: ver, Origin: "login1", Val: val(t, down)}, "rogue"),
		signedBy(t, entry{Key: "h/login1", Ver: math.MaxUint64, Origin: "login1", Val: val(t, down)}, "rogue"),
		{Key: "d/login1", Ver: ver, Origin: "gw1", Val: val(t, drainVal{Draining: true})},
		{Key: "b/user:mallory", Ver: ver, Origin: "gw1", Del: true},
		{Key: "a/alice", Ver: ver, Origin: "gw1", Val: val(t, affinityVal{Node: "rogue", Seen: now})},
		{Key: "s/gw1/rogue/alice", Ver: ver, Origin: "gw1", Val: val(t, sessionVal{N: 50})},
		{Key: "s/gw1/login1/alice", Ver: ver, Origin: "gw1", Del: true},
		{Key: "s/gw2/login1/bob", Ver: ver, Origin: "gw2", Del: true},
		signed(t, entry{Key: "h/rogue", Ver: ver, Origin: "rogue", Val: val(t, claim)}),
	}
	b, _ := json.Marshal(forged)
	state, _ := json.Marshal(pushPull{Entries: forged})
	agentKeys, _ := decodeKeys("k", []string{testKey})
	rogue := rawMemberWith(t, "rogue", "frontdoor-test", agentKeys, &rogueDelegate{state: state})
	for _, gw := range []*Cluster{gw1, gw2} {
		a := memberlist.Address{Addr: gw.LocalAddr()}
		if err := rogue.SendToAddress(a, append([]byte{msgBatch}, b...)); err != nil {
			t.Fatal(err)
		}
		for _, e := range forged {
			eb, _ := json.Marshal(e)
			if err := rogue.SendToAddress(a, append([]byte{msgEntry}, eb...)); err != nil {
				t.Fatal(err)
			}
		}
		// The agent port lets any key holder in; a push/pull carries the
		// forged state.
		if _, err := rogue.Join([]string{gw.LocalAddr()}); err != nil {
			t.Fatal(err)
		}
	}
	// SWIM "dead" for the node and for a gateway, highest incarnation, on
	// both ports of both gateways, for a while.
	stopForging := make(chan struct{})
	forging := make(chan struct{})
	go func() {
		defer close(forging)
		for {
			for _, victim := range []string{"login1", "gw1", "gw2"} {
				pkt, err := forge.Dead(agentKeys[0], "frontdoor-test", victim, "rogue", math.MaxUint32)
				if err != nil {
					t.Error(err)
					return
				}
				for _, gw := range []*Cluster{gw1, gw2} {
					forge.Send(gw.LocalAddr(), pkt)
					forge.Send(gw.GatewayAddr(), pkt)
				}
			}
			select {
			case <-stopForging:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stopForging); <-forging }()

	// The gateways refuse all of it and count why.
	eventually(t, waitLong, func() error {
		for _, gw := range []*Cluster{gw1, gw2} {
			r := gw.Refusals()
			for _, reason := range []string{refusedHostKey, refusedFuture, refusedUnsealed, refusedAddrClaim} {
				if r[reason] == 0 {
					return fmt.Errorf("%s: no %s refusal yet: %v", gw.Name(), reason, r)
				}
			}
		}
		return nil
	})
	// For several dead-node periods and push/pull rounds, nothing moves.
	deadline := time.Now().Add(2 * max(testConfig("x").NodeDeadAfter, testConfig("x").PushPullInterval))
	for time.Now().Before(deadline) {
		if err := settled(); err != nil {
			t.Fatalf("the rogue changed something: %v", err)
		}
		for _, gw := range []*Cluster{gw1, gw2} {
			if _, ok := gw.HealthOf("rogue"); ok {
				t.Fatalf("%s: took the rogue's address claim", gw.Name())
			}
		}
		time.Sleep(50 * time.Millisecond) // sampling an invariant over time, not waiting for an event
	}

	// The honest node's next write still wins: the rogue's far-future
	// version was never taken anywhere that matters.
	h := health("gpu")
	h.Load1 = 3
	honest.PublishHealth(h)
	eventually(t, waitLong, func() error {
		for _, gw := range []*Cluster{gw1, gw2} {
			if got, _ := gw.HealthOf("login1"); got.Load1 != 3 {
				return fmt.Errorf("%s: load %v", gw.Name(), got.Load1)
			}
		}
		return nil
	})
	// And the agent holds no gateway state to read.
	honest.mu.Lock()
	defer honest.mu.Unlock()
	for k := range honest.st.entries {
		if !isHealth(k) {
			t.Fatalf("agent %s holds %s", honest.Name(), k)
		}
	}
}

// rogueDelegate hands memberlist a forged push/pull state.
type rogueDelegate struct{ state []byte }

func (d *rogueDelegate) NodeMeta(int) []byte                        { return []byte(RoleGateway) }
func (d *rogueDelegate) NotifyMsg([]byte)                           {}
func (d *rogueDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *rogueDelegate) LocalState(bool) []byte                     { return d.state }
func (d *rogueDelegate) MergeRemoteState([]byte, bool)              {}

// rawMemberWith is rawMember with a delegate.
func rawMemberWith(t *testing.T, name, label string, keys [][]byte, d memberlist.Delegate) *memberlist.Memberlist {
	t.Helper()
	cfg := testConfig(name)
	mc, err := cfg.memberlistConfig(0, label, keys)
	if err != nil {
		t.Fatal(err)
	}
	mc.Logger = log.New(io.Discard, "", 0)
	mc.Delegate = d
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ml.Shutdown() })
	return ml
}

func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"h/login1", "s/gw/n/u", "a/x", "r/gw/n", "b/user:alice", "x", "h/", "s/a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if checkKey(key) == nil {
			kind, rest, _ := strings.Cut(key, "/")
			if rest == "" || !strings.Contains("hsardb", kind) || len(kind) != 1 {
				t.Fatalf("accepted %q", key)
			}
		}
	})
}

// FuzzAdmit feeds arbitrary JSON entries through a gateway's judgement:
// it must never panic, and only entries signed by a listed node's key (or
// sealed) get through.
func FuzzAdmit(f *testing.F) {
	c := judge(f)
	testNodes.add(f, "login1")
	good, _ := json.Marshal(signed(f, entry{Key: "h/login1", Ver: uint64(time.Now().UnixNano()), Origin: "login1", Val: json.RawMessage(`{"p":"gpu","a":"127.0.1.1:22"}`)}))
	f.Add(good, false)
	f.Add([]byte(`{"k":"d/login1","v":1,"o":"gw2","x":{"d":true}}`), true)
	f.Add([]byte(`{"k":"h/login1","v":1,"o":"login1","pk":"AAAA","sg":"AAAA"}`), false)
	f.Fuzz(func(t *testing.T, b []byte, sealed bool) {
		var e entry
		if json.Unmarshal(b, &e) != nil {
			return
		}
		_, err := c.admit(&e, sealed, time.Now())
		if err == nil && !sealed && isHealth(e.Key) {
			pk, perr := ssh.ParsePublicKey(e.PK)
			if perr != nil || c.inv.CheckHostKey(strings.TrimPrefix(e.Key, "h/"), pk) != nil {
				t.Fatalf("admitted health without a listed host key: %s", b)
			}
		}
	})
}

// TestLiedSince: only refusals that follow a verified signature (a node's
// own key signed a false address or pool) mark the node as having lied; a
// bad signature, which anyone can send in any node's name, does not.
func TestLiedSince(t *testing.T) {
	c := judge(t)
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return at }
	c.noteRefusal(&entry{Origin: "login2"}, refuse(refusedAddrClaim, "claims another address"))
	c.noteRefusal(&entry{Origin: "login3"}, refuse(refusedPoolClaim, "claims another pool"))
	c.noteRefusal(&entry{Origin: "login1"}, refuse(refusedSignature, "forged in login1's name"))
	c.noteRefusal(&entry{Origin: "login1"}, refuse(refusedHostKey, "another key"))
	c.noteRefusal(&entry{Origin: "login4"}, refuse(refusedImpossible, "load -5"))
	c.noteRefusal(&entry{Origin: "login5"}, refuse(refusedUnknown, "not listed"))
	for node, want := range map[string]bool{"login1": false, "login2": true, "login3": true, "login4": true, "login5": false, "login9": false} {
		if got := c.LiedSince(node, at.Add(-time.Minute)); got != want {
			t.Errorf("LiedSince(%s) = %v, want %v", node, got, want)
		}
	}
	if c.LiedSince("login2", at.Add(time.Second)) {
		t.Error("LiedSince(login2) after the lie: true")
	}
}

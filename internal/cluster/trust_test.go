package cluster

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

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
	good := Health{Pool: "gpu", Addr: "127.0.1.1:22", SSHDUp: true, At: now}
	otherAddr, otherPool := good, good
	otherAddr.Addr = "10.9.9.9:22"
	otherPool.Pool = "general"
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
// sends changes routing, drains, bans, affinity or another node's health.
func TestRogueAgent(t *testing.T) {
	gw1 := start(t, testConfig("gw1"), RoleGateway)
	gw2 := start(t, testConfig("gw2", gw1.LocalAddr()), RoleGateway)
	honest := start(t, testConfig("login1", gw1.LocalAddr()), RoleAgent)
	rogue := start(t, testConfig("rogue", gw1.LocalAddr()), RoleAgent)
	if err := honest.PublishHealth(health("gpu")); err != nil {
		t.Fatal(err)
	}
	if err := gw1.Ban("user:mallory", time.Now().Add(time.Hour), "test"); err != nil {
		t.Fatal(err)
	}
	gw1.StartSession("alice", "login1")
	eventually(t, waitLong, func() error {
		for _, gw := range []*Cluster{gw1, gw2} {
			if _, ok := gw.HealthOf("login1"); !ok {
				return fmt.Errorf("%s: no login1 health", gw.Name())
			}
			if _, ok := gw.Banned("user:mallory"); !ok {
				return fmt.Errorf("%s: ban not spread", gw.Name())
			}
			if a := gw.Affinity("alice"); a == nil || a.Node != "login1" {
				return fmt.Errorf("%s: affinity %+v", gw.Name(), a)
			}
		}
		return nil
	})

	// Everything the rogue can say, by every path: direct packets in clear
	// to each gateway, broadcasts, and its push/pull state.
	now := time.Now()
	ver := uint64(now.Add(30 * time.Second).UnixNano())
	down := health("gpu")
	down.SSHDUp = false
	forged := []entry{
		signedBy(t, entry{Key: "h/login1", Ver: ver, Origin: "login1", Val: val(t, down)}, "rogue"),
		signedBy(t, entry{Key: "h/login1", Ver: math.MaxUint64, Origin: "login1", Val: val(t, down)}, "rogue"),
		{Key: "d/login1", Ver: ver, Origin: "gw1", Val: val(t, drainVal{Draining: true})},
		{Key: "b/user:mallory", Ver: ver, Origin: "gw1", Del: true},
		{Key: "a/alice", Ver: ver, Origin: "gw1", Val: val(t, affinityVal{Node: "rogue", Seen: now})},
		{Key: "s/gw1/rogue/alice", Ver: ver, Origin: "gw1", Val: val(t, sessionVal{N: 50})},
		{Key: "s/gw1/login1/alice", Ver: ver, Origin: "gw1", Del: true},
	}
	claim := health("gpu")
	claim.Addr = "10.0.0.99:22" // a GPU node's sshd, say
	rogueOwn := signed(t, entry{Key: "h/rogue", Ver: ver, Origin: "rogue", Val: val(t, claim)})
	forged = append(forged, rogueOwn)
	rogue.mu.Lock()
	for _, e := range forged {
		cp := e
		rogue.st.set(&cp)
	}
	peers := []string{gw1.cfg.Name, gw2.cfg.Name}
	rogue.mu.Unlock()
	b, _ := json.Marshal(forged)
	batch := append([]byte{msgBatch}, b...)
	for _, m := range rogue.ml.Members() {
		for _, p := range peers {
			if m.Name == p {
				if err := rogue.ml.SendReliable(m, batch); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, e := range forged {
		rogue.broadcast(e)
	}

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
	// A push/pull round later, still nothing taken.
	deadline := time.Now().Add(3 * testConfig("x").PushPullInterval)
	for time.Now().Before(deadline) {
		for _, gw := range []*Cluster{gw1, gw2} {
			h, ok := gw.HealthOf("login1")
			if !ok || !h.SSHDUp {
				t.Fatalf("%s: login1 health changed by the rogue: %+v %v", gw.Name(), h, ok)
			}
			if _, ok := gw.HealthOf("rogue"); ok {
				t.Fatalf("%s: took the rogue's address claim", gw.Name())
			}
			if _, ok := gw.Banned("user:mallory"); !ok {
				t.Fatalf("%s: ban lifted by the rogue", gw.Name())
			}
			if a := gw.Affinity("alice"); a == nil || a.Node != "login1" {
				t.Fatalf("%s: affinity %+v", gw.Name(), a)
			}
			for _, n := range gw.Nodes() {
				if n.Draining || n.Name == "rogue" {
					t.Fatalf("%s: node %+v", gw.Name(), n)
				}
			}
			for _, s := range gw.Sessions() {
				if s.Node != "login1" || s.N != 1 {
					t.Fatalf("%s: sessions %+v", gw.Name(), gw.Sessions())
				}
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
	// And the agents hold no gateway state to read.
	for _, a := range []*Cluster{honest} {
		a.mu.Lock()
		for k := range a.st.entries {
			if !epidemic(k) {
				a.mu.Unlock()
				t.Fatalf("agent %s holds %s", a.Name(), k)
			}
		}
		a.mu.Unlock()
	}
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
		if err == nil && !sealed && epidemic(e.Key) {
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
	for node, want := range map[string]bool{"login1": false, "login2": true, "login3": true, "login9": false} {
		if got := c.LiedSince(node, at.Add(-time.Minute)); got != want {
			t.Errorf("LiedSince(%s) = %v, want %v", node, got, want)
		}
	}
	if c.LiedSince("login2", at.Add(time.Second)) {
		t.Error("LiedSince(login2) after the lie: true")
	}
}

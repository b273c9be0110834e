package cluster

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func val(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMerge(t *testing.T) {
	cfg := DefaultConfig()
	type step struct {
		in          entry
		wantChanged bool
		wantAnswer  bool
	}
	tests := []struct {
		name  string
		local []entry // pre-existing, taken as merged from peers
		steps []step
		// want describes the entry for key "a/alice" (or the owned key)
		// after all steps: version, origin, deleted.
		key        string
		wantVer    uint64
		wantOrigin string
		wantDel    bool
		wantAbsent bool
	}{
		{name: "new key taken",
			steps: []step{{in: entry{Key: "d/n1", Ver: 5, Origin: "gw1", Val: val(t, drainVal{Draining: true})}, wantChanged: true}},
			key:   "d/n1", wantVer: 5, wantOrigin: "gw1"},
		{name: "newer version wins",
			local: []entry{{Key: "d/n1", Ver: 5, Origin: "gw1", Val: val(t, drainVal{})}},
			steps: []step{{in: entry{Key: "d/n1", Ver: 6, Origin: "gw2", Val: val(t, drainVal{})}, wantChanged: true}},
			key:   "d/n1", wantVer: 6, wantOrigin: "gw2"},
		{name: "older version ignored",
			local: []entry{{Key: "d/n1", Ver: 5, Origin: "gw1", Val: val(t, drainVal{})}},
			steps: []step{{in: entry{Key: "d/n1", Ver: 4, Origin: "gw9", Val: val(t, drainVal{})}}},
			key:   "d/n1", wantVer: 5, wantOrigin: "gw1"},
		{name: "same version: higher origin wins, in any order",
			steps: []step{
				{in: entry{Key: "d/n1", Ver: 5, Origin: "gw2", Val: val(t, drainVal{})}, wantChanged: true},
				{in: entry{Key: "d/n1", Ver: 5, Origin: "gw1", Val: val(t, drainVal{})}},
			},
			key: "d/n1", wantVer: 5, wantOrigin: "gw2"},
		{name: "duplicate is not a change",
			local: []entry{{Key: "d/n1", Ver: 5, Origin: "gw1", Val: val(t, drainVal{})}},
			steps: []step{{in: entry{Key: "d/n1", Ver: 5, Origin: "gw1", Val: val(t, drainVal{})}}},
			key:   "d/n1", wantVer: 5, wantOrigin: "gw1"},
		{name: "newer tombstone deletes",
			local: []entry{{Key: "b/user:eve", Ver: 5, Origin: "gw1", Val: val(t, banVal{Until: t0.Add(time.Hour)})}},
			steps: []step{{in: entry{Key: "b/user:eve", Ver: 6, Origin: "gw1", Del: true}, wantChanged: true}},
			key:   "b/user:eve", wantVer: 6, wantOrigin: "gw1", wantDel: true},
		{name: "older value cannot resurrect a tombstone",
			local: []entry{{Key: "b/user:eve", Ver: 6, Origin: "gw1", Del: true}},
			steps: []step{{in: entry{Key: "b/user:eve", Ver: 5, Origin: "gw2", Val: val(t, banVal{Until: t0.Add(time.Hour)})}}},
			key:   "b/user:eve", wantVer: 6, wantOrigin: "gw1", wantDel: true},
		{name: "expired affinity refused",
			steps: []step{{in: entry{Key: "a/alice", Ver: 9, Origin: "gw1", Val: val(t, affinityVal{Node: "n1", Seen: t0.Add(-48 * time.Hour)})}}},
			key:   "a/alice", wantAbsent: true},
		{name: "expired ban refused",
			steps: []step{{in: entry{Key: "b/addr:1.2.3.4", Ver: 9, Origin: "gw1", Val: val(t, banVal{Until: t0.Add(-time.Second)})}}},
			key:   "b/addr:1.2.3.4", wantAbsent: true},
		{name: "ghost of own session is refuted with a tombstone",
			steps: []step{{in: entry{Key: "s/me/n1/alice", Ver: 100, Origin: "me", Val: val(t, sessionVal{N: 2})}, wantAnswer: true}},
			key:   "s/me/n1/alice", wantVer: uint64(t0.UnixNano()) + 0, wantOrigin: "me", wantDel: true},
		{name: "ghost of own health is refuted keeping our value",
			local: []entry{{Key: "h/me", Ver: 50, Origin: "me", Val: val(t, Health{Pool: "gpu"})}},
			steps: []step{{in: entry{Key: "h/me", Ver: 60, Origin: "me", Val: val(t, Health{Pool: "old"})}, wantAnswer: true}},
			key:   "h/me", wantOrigin: "me"},
		{name: "others' owned keys merge normally",
			steps: []step{{in: entry{Key: "s/gw2/n1/alice", Ver: 100, Origin: "gw2", Val: val(t, sessionVal{N: 1})}, wantChanged: true}},
			key:   "s/gw2/n1/alice", wantVer: 100, wantOrigin: "gw2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore("me", cfg)
			for _, e := range tt.local {
				e.recv = t0
				cp := e
				s.set(&cp)
				s.clock = max(s.clock, e.Ver)
			}
			for i, st := range tt.steps {
				ch, ans := s.merge(st.in, t0)
				if ch != st.wantChanged || (len(ans) > 0) != st.wantAnswer {
					t.Fatalf("step %d: changed=%v answers=%d, want %v/%v", i, ch, len(ans), st.wantChanged, st.wantAnswer)
				}
				for _, a := range ans {
					if a.Ver <= st.in.Ver {
						t.Fatalf("answer version %d not above ghost %d", a.Ver, st.in.Ver)
					}
				}
			}
			got := s.entries[tt.key]
			if tt.wantAbsent {
				if got != nil {
					t.Fatalf("entry present: %+v", got)
				}
				return
			}
			if got == nil {
				t.Fatal("entry missing")
			}
			if tt.wantVer != 0 && got.Ver != tt.wantVer {
				t.Errorf("ver = %d, want %d", got.Ver, tt.wantVer)
			}
			if got.Origin != tt.wantOrigin || got.Del != tt.wantDel {
				t.Errorf("got origin=%s del=%v, want %s/%v", got.Origin, got.Del, tt.wantOrigin, tt.wantDel)
			}
			if tt.key == "h/me" && !strings.Contains(string(got.Val), `"gpu"`) {
				t.Errorf("own health replaced by ghost: %s", got.Val)
			}
		})
	}
}

// TestMergeConverges: the same entries merged in different orders give the
// same state.
func TestMergeConverges(t *testing.T) {
	in := []entry{
		{Key: "d/n1", Ver: 3, Origin: "gw1", Val: val(t, drainVal{Draining: true})},
		{Key: "d/n1", Ver: 3, Origin: "gw3", Val: val(t, drainVal{})},
		{Key: "d/n1", Ver: 2, Origin: "gw2", Val: val(t, drainVal{Draining: true})},
		{Key: "a/bob", Ver: 7, Origin: "gw2", Del: true},
		{Key: "a/bob", Ver: 6, Origin: "gw1", Val: val(t, affinityVal{Node: "n2", Seen: t0})},
	}
	fwd, rev := newStore("x", DefaultConfig()), newStore("y", DefaultConfig())
	for i := range in {
		fwd.merge(in[i], t0)
		rev.merge(in[len(in)-1-i], t0)
	}
	for _, k := range []string{"d/n1", "a/bob"} {
		a, b := fwd.entries[k], rev.entries[k]
		if a.Ver != b.Ver || a.Origin != b.Origin || a.Del != b.Del || string(a.Val) != string(b.Val) {
			t.Errorf("%s diverged: %+v vs %+v", k, a, b)
		}
	}
	if e := fwd.entries["d/n1"]; e.Origin != "gw3" {
		t.Errorf("d/n1 winner %s, want gw3", e.Origin)
	}
}

func TestClockAndGC(t *testing.T) {
	cfg := DefaultConfig()
	s := newStore("me", cfg)
	// A peer far ahead: our next write must still beat it.
	s.merge(entry{Key: "d/n1", Ver: uint64(t0.Add(time.Hour).UnixNano()), Origin: "gw2", Val: val(t, drainVal{Draining: true})}, t0)
	e, err := s.put("d/n1", drainVal{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if e.Ver <= uint64(t0.Add(time.Hour).UnixNano()) {
		t.Fatal("local write did not advance past the seen clock")
	}
	if _, err := s.put("b/k", nil, t0); err != nil {
		t.Fatal(err)
	}
	s.put("a/alice", affinityVal{Node: "n1", Seen: t0}, t0)
	s.put("h/me", Health{}, t0)
	s.merge(entry{Key: "s/gone/n1/alice", Ver: 1, Origin: "gone", Val: val(t, sessionVal{N: 1})}, t0)
	s.merge(entry{Key: "s/gw2/n1/alice", Ver: 1, Origin: "gw2", Val: val(t, sessionVal{N: 1})}, t0)
	alive := func(m string) bool { return m == "gw2" }
	s.gc(t0.Add(cfg.TombstoneTTL/2), alive)
	if s.entries["s/gone/n1/alice"] == nil {
		t.Fatal("gc dropped a dead gateway's session too early")
	}
	if s.entries["b/k"] == nil || s.entries["a/alice"] == nil || s.entries["h/me"] == nil {
		t.Fatal("gc dropped entries too early")
	}
	s.gc(t0.Add(cfg.AffinityTTL+time.Minute), alive)
	if s.entries["s/gw2/n1/alice"] == nil {
		t.Error("gc dropped a live gateway's session")
	}
	for _, k := range []string{"b/k", "a/alice", "h/me", "s/gone/n1/alice"} {
		if s.entries[k] != nil {
			t.Errorf("gc kept %s", k)
		}
	}
	if s.entries["d/n1"] == nil {
		t.Error("gc dropped a live drain")
	}
}

func TestOwner(t *testing.T) {
	for key, want := range map[string]string{
		"h/login1": "login1", "s/gw1/login1/alice": "gw1", "r/gw2/login1": "gw2",
		"a/alice": "", "d/login1": "", "b/user:x": "",
	} {
		if got := owner(key); got != want {
			t.Errorf("owner(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestMetaGuard(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	small := encodeMeta(RoleAgent, map[string]string{"pool": "gpu"}, 512, log)
	if role, m := decodeMeta(small); role != RoleAgent || m["pool"] != "gpu" {
		t.Fatalf("round trip: %q %v", role, m)
	}
	big := encodeMeta(RoleAgent, map[string]string{"pool": strings.Repeat("x", 600)}, 512, log)
	if len(big) > 512 {
		t.Fatalf("meta %d bytes over the limit", len(big))
	}
	if role, _ := decodeMeta(big); role != RoleAgent {
		t.Fatalf("role lost: %q", role)
	}
	if got := encodeMeta(Role(strings.Repeat("r", 600)), nil, 512, log); len(got) > 512 {
		t.Fatalf("huge role not dropped: %d bytes", len(got))
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Name = "gw1"
	ok.Insecure = true
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"no name":         func(c *Config) { c.Name = "" },
		"no key":          func(c *Config) { c.Insecure = false },
		"key and insec":   func(c *Config) { c.SecretKeys = []string{testKey} },
		"bad key":         func(c *Config) { c.Insecure = false; c.SecretKeys = []string{"c2hvcnQ="} },
		"bad base64":      func(c *Config) { c.Insecure = false; c.SecretKeys = []string{"!!"} },
		"bad bind":        func(c *Config) { c.BindAddr = "localhost" },
		"bad join":        func(c *Config) { c.Join = []string{"nohostport"} },
		"long label":      func(c *Config) { c.Label = strings.Repeat("l", 300) },
		"zero interval":   func(c *Config) { c.GossipInterval = 0 },
		"zero suspicion":  func(c *Config) { c.SuspicionMult = 0 },
		"bad advertise":   func(c *Config) { c.AdvertiseAddr = "host" },
		"port range":      func(c *Config) { c.BindPort = 70000 },
		"zero routed win": func(c *Config) { c.RoutedWindow = 0 },
	} {
		c := ok
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPack(t *testing.T) {
	var es []entry
	for i := range 100 {
		es = append(es, entry{Key: fmt.Sprintf("a/user%03d", i), Ver: uint64(i), Origin: "gw1", Val: val(t, affinityVal{Node: "n1", Seen: t0})})
	}
	es = append(es, entry{Key: "a/huge", Val: val(t, strings.Repeat("x", 2000))})
	pkts := pack(es, maxPacket)
	got := 0
	for _, p := range pkts {
		if len(p) > maxPacket || p[0] != msgBatch {
			t.Fatalf("packet of %d bytes, tag %q", len(p), p[0])
		}
		var dec []entry
		if err := json.Unmarshal(p[1:], &dec); err != nil {
			t.Fatal(err)
		}
		got += len(dec)
	}
	if got != 100 || len(pkts) < 2 {
		t.Fatalf("%d entries in %d packets, want 100 in several", got, len(pkts))
	}
	if pack(nil, maxPacket) != nil {
		t.Fatal("empty pack not nil")
	}
}

func TestIsHealth(t *testing.T) {
	if !isHealth("h/n1") || isHealth("s/gw/n/u") || isHealth("a/u") || isHealth("hx/n") {
		t.Fatal("health classification wrong")
	}
}

// checkIndexes recomputes the store's indexes from its entries.
func checkIndexes(t *testing.T, s *store) {
	t.Helper()
	n := 0
	for k, e := range s.entries {
		kind, _, _ := strings.Cut(k, "/")
		inKind := s.byKind[kind][k] == e
		if inKind == e.Del {
			t.Fatalf("byKind wrong for %s (deleted %v)", k, e.Del)
		}
		if !e.Del {
			n++
		}
		if kind == kindSession {
			_, _, user, _ := splitSessionKey(k)
			if (s.userSess[user][k] == e) == e.Del {
				t.Fatalf("userSess wrong for %s", k)
			}
		}
	}
	total := 0
	for _, m := range s.byKind {
		total += len(m)
	}
	if total != n {
		t.Fatalf("byKind holds %d entries, want %d", total, n)
	}
}

func TestIndexes(t *testing.T) {
	s := newStore("me", DefaultConfig())
	s.put("s/me/n1/alice", sessionVal{N: 1}, t0)
	s.put("a/alice", affinityVal{Node: "n1", Seen: t0}, t0)
	s.merge(entry{Key: "s/gw2/n1/alice", Ver: 1, Origin: "gw2", Val: val(t, sessionVal{N: 2})}, t0)
	s.merge(entry{Key: "h/n1", Ver: 1, Origin: "n1", Val: val(t, Health{})}, t0)
	checkIndexes(t, s)
	if len(s.userSess["alice"]) != 2 {
		t.Fatalf("alice sessions %v", s.userSess["alice"])
	}
	s.put("s/me/n1/alice", nil, t0)
	s.merge(entry{Key: "s/gw2/n1/alice", Ver: uint64(t0.UnixNano()) + 10, Origin: "gw2", Del: true}, t0)
	checkIndexes(t, s)
	if len(s.userSess) != 0 {
		t.Fatalf("userSess not emptied: %v", s.userSess)
	}
	if v, ok := decode[Health](s.entries["h/n1"]); !ok || s.entries["h/n1"].dec == nil {
		t.Fatalf("decode cache: %v %v", v, ok)
	}
	s.gc(t0.Add(48*time.Hour), func(string) bool { return false })
	checkIndexes(t, s)
	if len(s.entries) != 0 {
		t.Fatalf("left after gc: %d", len(s.entries))
	}
}

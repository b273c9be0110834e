package ad

// The identity cache handed from one process to the next (handover.go),
// against the real Samba DC: what comes over is served as the old process
// would have served it, the watch drops what changed since, and a blob
// that does not validate changes nothing.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// handedSettled waits until d's watch has vouched for (or dropped) what d
// imported.
func handedSettled(t *testing.T, d *Directory) {
	t.Helper()
	within(t, "", time.Now(), 10*time.Second, func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.handed != nil {
			return fmt.Errorf("the watch has not vouched for the imported identities yet")
		}
		return nil
	})
}

// editBlob decodes an export, lets f change it and encodes it again.
func editBlob(t *testing.T, blob []byte, f func(*handover)) []byte {
	t.Helper()
	var h handover
	if err := json.Unmarshal(blob, &h); err != nil {
		t.Fatal(err)
	}
	f(&h)
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHandoverRoundTrip: the new process serves a handed-over identity
// from its cache (same FetchedAt, keys, groups, UPN alias) with its DC
// hanging, so without any lookup; password hashes stay behind; the watch
// vouches for the identities on the same DC and keeps them.
func TestHandoverRoundTrip(t *testing.T) {
	old := watchedDir(t, nil)
	alice := mustCache(t, old, "alice")
	frank := mustCache(t, old, "frank")
	if _, err := old.VerifyPassword(ctxT(t), "alice", pw("alice")); err != nil {
		t.Fatal(err)
	}
	if e := old.cache.get(Name{Account: "alice"}); e == nil || e.pwHash == "" {
		t.Fatal("the old process cached no password hash: the test proves nothing about it")
	}
	settle(t, old) // the export's USN is past the bind's own writes
	blob := old.ExportCache()
	if strings.Contains(string(blob), "argon2") {
		t.Fatal("the export carries a password hash")
	}

	// A new process whose DC hangs: any lookup would cost the timeout.
	hung := newDir(t, func(c *Config) { c.URLs = []string{hangingDC(t)}; c.CachePasswords = true })
	n, err := hung.ImportCache(blob)
	if err != nil || n < 2 {
		t.Fatalf("import: %d, %v", n, err)
	}
	start := time.Now()
	got, err := hung.Lookup(ctxT(t), "alice")
	if took := time.Since(start); err != nil || took > testTimeout/2 {
		t.Fatalf("lookup of a handed-over identity with the DC hanging: %v after %v", err, took)
	}
	if !got.FetchedAt.Equal(alice.FetchedAt) || !slices.Equal(got.Groups, alice.Groups) ||
		!slices.Equal(got.GroupDNs, alice.GroupDNs) || len(got.Keys) != 1 || !hasKey(got, keys["alice"]) ||
		got.UID != alice.UID || got.UIDSet != alice.UIDSet || got.Source != "ad" {
		t.Errorf("handed over %+v; the old process had %+v", got, alice)
	}
	if id, err := hung.Lookup(ctxT(t), "f.smith@hpc.example.edu"); err != nil || !id.FetchedAt.Equal(frank.FetchedAt) {
		t.Errorf("lookup by UPN: %+v, %v", id, err)
	}
	if id, ok := hung.Stale("alice"); !ok || !id.Cached {
		t.Errorf("Stale: %+v, %v", id, ok)
	}
	if e := hung.cache.get(Name{Account: "alice"}); e == nil || e.pwHash != "" {
		t.Errorf("a password hash came over: %+v", e)
	}
	if _, err := hung.ImportCache(blob); err == nil {
		t.Error("a second import was taken")
	}

	// Against the same DC: the watch vouches, and keeps them.
	fresh := newDir(t, func(c *Config) { c.CacheTTL, c.OfflineMaxAge, c.WatchInterval = time.Hour, time.Hour, watchInterval })
	waitWatched(t, fresh)
	if n, err := fresh.ImportCache(blob); err != nil || n < 2 {
		t.Fatalf("import: %d, %v", n, err)
	}
	handedSettled(t, fresh)
	settle(t, fresh)
	if e := fresh.cache.get(Name{Account: "alice"}); e == nil || !e.id.FetchedAt.Equal(alice.FetchedAt) {
		t.Errorf("the watch dropped an unchanged handed-over identity: %+v", e)
	}
	if c := counter(fresh, "invalidations", causeHandover); c != 0 {
		t.Errorf("%v handed-over identities dropped on the same DC", c)
	}
}

// TestHandoverWatchRule: a change committed after the old process's last
// watch round drops the handed-over identity in the new process (whether
// the new process's watch had its baseline before the import or not); a
// handover from another DC, or from a watch that had read no USN, is
// dropped whole at the first round.
func TestHandoverWatchRule(t *testing.T) {
	old := watchedDir(t, nil)
	dis, keep := watchUser(t, "hdis", "nlp-lab"), watchUser(t, "hkeep")
	mustCache(t, old, dis)
	mustCache(t, old, keep)
	settle(t, old)
	old.Close() // its watch stops: the change below is after its last round
	blob := old.ExportCache()
	tool(t, "user", "disable", dis)

	for _, baselined := range []bool{true, false} {
		t.Run(fmt.Sprintf("baselined=%v", baselined), func(t *testing.T) {
			d := newDir(t, func(c *Config) { c.CacheTTL, c.OfflineMaxAge, c.WatchInterval = time.Hour, time.Hour, watchInterval })
			if baselined {
				waitWatched(t, d) // after the change: its own baseline is past it
			}
			if n, err := d.ImportCache(blob); err != nil || n != 2 {
				t.Fatalf("import: %d, %v", n, err)
			}
			within(t, "disabled account refused after the handover", time.Now(), 10*time.Second,
				refused(d, dis, directory.ErrAccountDisabled, "ad: account disabled"))
			handedSettled(t, d)
			if e := d.cache.get(Name{Account: keep}); e == nil || !e.handed {
				t.Errorf("the unchanged identity was dropped: %+v", e)
			}
		})
	}

	for _, tc := range []struct {
		name string
		edit func(*handover)
	}{
		{"another DC", func(h *handover) {
			h.DC = "CN=NTDS Settings,CN=OTHERDC,CN=Servers,CN=Default-First-Site-Name,CN=Sites,CN=Configuration," + dc.BaseDN()
		}},
		{"no USN", func(h *handover) { h.DC, h.USN = "", 0 }},
		{"USN ahead of the DC", func(h *handover) { h.USN += 1 << 40 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDir(t, func(c *Config) { c.CacheTTL, c.OfflineMaxAge, c.WatchInterval = time.Hour, time.Hour, watchInterval })
			waitWatched(t, d)
			if n, err := d.ImportCache(editBlob(t, blob, tc.edit)); err != nil || n != 2 {
				t.Fatalf("import: %d, %v", n, err)
			}
			handedSettled(t, d)
			if e := d.cache.get(Name{Account: keep}); e != nil {
				t.Errorf("kept an identity the watch cannot vouch for: %+v", e)
			}
			if c := counter(d, "invalidations", causeHandover); c != 2 {
				t.Errorf("frontdoor_ad_cache_invalidations_total{cause=%q} = %v, want 2", causeHandover, c)
			}
		})
	}
}

// TestHandoverAges: FetchedAt and accountExpires come over as they were,
// so cache_ttl and offline_max_age run on: an identity past cache_ttl is
// looked up afresh yet served stale meanwhile; one past offline_max_age
// or expired is not taken. An identity the new process has is not
// replaced.
func TestHandoverAges(t *testing.T) {
	old := watchedDir(t, nil)
	alice := mustCache(t, old, "alice")
	mustCache(t, old, "frank")
	gone := watchUser(t, "hgone")
	mustCache(t, old, gone)
	now := time.Now()
	blob := editBlob(t, old.ExportCache(), func(h *handover) {
		for i := range h.Entries {
			switch h.Entries[i].Name {
			case "alice": // stale: past cache_ttl (1m), within offline_max_age (1h)
				h.Entries[i].FetchedAt = now.Add(-10 * time.Minute)
			case "frank": // too old to serve even offline
				h.Entries[i].FetchedAt = now.Add(-2 * time.Hour)
			case gone: // accountExpires passed
				h.Entries[i].Expires = now.Add(-time.Second)
			}
		}
	})
	d := newDir(t, func(c *Config) { c.CacheTTL, c.OfflineMaxAge = time.Minute, time.Hour })
	waitWatched(t, d)
	own := mustCache(t, d, "erin")
	blob = editBlob(t, blob, func(h *handover) { // erin as an older entry
		e := h.Entries[0]
		e.Name, e.UPN, e.FetchedAt, e.Expires = "erin", "", now.Add(-30*time.Minute), time.Time{}
		h.Entries = append(h.Entries, e)
	})
	if n, err := d.ImportCache(blob); err != nil || n != 1 {
		t.Fatalf("import: %d, %v (want alice only)", n, err)
	}
	if id, ok := d.Stale("alice"); !ok || !id.FetchedAt.Equal(now.Add(-10*time.Minute)) {
		t.Errorf("stale alice: %+v, %v", id, ok)
	}
	if _, ok := d.Stale("frank"); ok {
		t.Error("an identity past offline_max_age came over")
	}
	if _, ok := d.Stale(gone); ok {
		t.Error("an expired account came over")
	}
	if e := d.cache.get(Name{Account: "erin"}); e == nil || !e.id.FetchedAt.Equal(own.FetchedAt) || e.handed {
		t.Errorf("the import replaced the new process's own identity: %+v", e)
	}
	id, err := d.Lookup(ctxT(t), "alice") // stale: looked up afresh
	if err != nil || !id.FetchedAt.After(alice.FetchedAt) {
		t.Errorf("a handed-over identity past cache_ttl was served without a lookup: %+v, %v", id, err)
	}
}

// TestHandoverHostile: a blob with anything wrong in it is refused whole
// and leaves the cache as it was.
func TestHandoverHostile(t *testing.T) {
	old := watchedDir(t, nil)
	mustCache(t, old, "alice")
	mustCache(t, old, "frank")
	good := old.ExportCache()
	entry := func(f func(*handoverEntry)) func(*handover) {
		return func(h *handover) { f(&h.Entries[len(h.Entries)-1]) }
	}
	for _, tc := range []struct {
		name string
		blob []byte
		mut  func(*Config)
	}{
		{name: "not JSON", blob: []byte(`{"v":1,"entries":[`)},
		{name: "trailing data", blob: append(append([]byte{}, good...), []byte(`{"v":1}`)...)},
		{name: "too big", blob: append(append([]byte{}, good...), make([]byte, MaxHandover)...)},
		{name: "another format", blob: editBlob(t, good, func(h *handover) { h.V = 2 })},
		{name: "another base_dn", blob: editBlob(t, good, func(h *handover) { h.BaseDN = "DC=evil,DC=example" })},
		{name: "another key attribute", blob: editBlob(t, good, func(h *handover) { h.KeyAttr = KeyAltSecurityIdentities })},
		{name: "USN without a DC", blob: editBlob(t, good, func(h *handover) { h.DC, h.USN = "", 7 })},
		{name: "name with a filter", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.Name = "*)(uid=*" }))},
		{name: "name upper-case", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.Name = strings.ToUpper(e.Name) }))},
		{name: "name as a UPN", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.Name = e.Name + "@" + dc.UPNSuffix() }))},
		{name: "UPN of another suffix", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.UPN = "x@evil.example" }))},
		{name: "DN outside base_dn", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.DN = "CN=x,DC=evil,DC=example" }))},
		{name: "DN unparseable", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.DN = "CN" }))},
		{name: "groups without DNs", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.Groups = append(e.Groups, "root") }))},
		{name: "too many groups", blob: editBlob(t, good, entry(func(e *handoverEntry) {
			for range maxHOGroups + 1 {
				e.Groups, e.GroupDNs, e.GroupGUIDs = append(e.Groups, "g"), append(e.GroupDNs, "CN=g"), append(e.GroupGUIDs, []byte("g"))
			}
		}))},
		{name: "bad key", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.Keys = []string{"ssh-ed25519 AAAAnot-base64"} }))},
		{name: "key with options", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.Keys = []string{`command="sh" ` + e.Keys[0]} }))},
		{name: "fetched in the future", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.FetchedAt = time.Now().Add(time.Hour) }))},
		{name: "never fetched", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.FetchedAt = time.Time{} }))},
		{name: "no GUID", blob: editBlob(t, good, entry(func(e *handoverEntry) { e.GUID = nil }))},
		{name: "a name twice", blob: editBlob(t, good, func(h *handover) { h.Entries = append(h.Entries, h.Entries[0]) })},
		{name: "more than max_cache_entries", blob: good, mut: func(c *Config) { c.MaxCacheEntries = 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDir(t, tc.mut)
			before := d.cache.len()
			if n, err := d.ImportCache(tc.blob); err == nil || n != 0 {
				t.Errorf("took %d identities, err %v", n, err)
			}
			if d.cache.len() != before || d.handed != nil {
				t.Errorf("a refused blob changed the cache: %d entries, was %d", d.cache.len(), before)
			}
			// The refusal does not use the import up.
			if tc.mut != nil {
				return
			}
			if n, err := d.ImportCache(good); err != nil || n != 2 {
				t.Errorf("the good blob after a refused one: %d, %v", n, err)
			}
		})
	}
}

// FuzzParseHandover: whatever blob a previous process (or anyone who can
// write to the handover socket) sends, what an import would take is only
// identities that parse as AD's answers would: canonical account names,
// DNs under base_dn, groups with a DN and GUID each, keys without options,
// nothing fetched in the future, each name and UPN once; and never more
// than max_cache_entries.
func FuzzParseHandover(f *testing.F) {
	cfg := DefaultConfig()
	cfg.URLs, cfg.BaseDN, cfg.BindDN, cfg.BindPassword = []string{"ldaps://127.0.2.254:636"}, "DC=hpc,DC=example,DC=edu", "CN=svc", "x"
	cfg.InsecureNoTLS, cfg.Domain, cfg.MaxCacheEntries = true, "HPC", 50
	cfg.Derive()
	d := &Directory{cfg: cfg, now: time.Now, log: testLoggerB()}
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE1BmvsoOFl2gd6Q5yzxmTgq9Wuk6lqM2m2UEHm9ZHVH"
	good := handover{V: handoverFormat, BaseDN: cfg.BaseDN, Domain: cfg.Domain, KeyAttr: cfg.KeyAttribute, DC: "CN=NTDS Settings,CN=DC1", USN: 4711,
		Entries: []handoverEntry{{Name: "alice", DN: "CN=alice,CN=Users,DC=hpc,DC=example,DC=edu", UPN: "alice@hpc.example.edu",
			Groups: []string{"nlp-lab"}, GroupDNs: []string{"CN=nlp-lab,CN=Users,DC=hpc,DC=example,DC=edu"}, GroupGUIDs: [][]byte{[]byte("0123456789abcdef")},
			GUID: []byte("fedcba9876543210"), Keys: []string{key}, UID: 10001, UIDSet: true, GID: 100,
			FetchedAt: time.Now().Add(-time.Minute), Fingerprint: "fp", PwdLastSet: "1"}}}
	b, _ := json.Marshal(good)
	if entries, _, err := d.parseHandover(b); err != nil || len(entries) != 1 {
		f.Fatalf("the good seed: %d entries, %v", len(entries), err)
	}
	f.Add(b)
	f.Add([]byte(`{"v":1,"base_dn":"DC=hpc,DC=example,DC=edu","domain":"HPC","key_attr":"sshPublicKey","entries":[]}`))
	f.Add([]byte(`{"v":1,"entries":[{"name":"*)(uid=*"}]}`))
	f.Fuzz(func(t *testing.T, blob []byte) {
		entries, hv, err := d.parseHandover(blob)
		if err != nil {
			if entries != nil || hv != (handedVersion{}) {
				t.Fatalf("refused, yet returned %d entries and %+v", len(entries), hv)
			}
			return
		}
		if len(entries) > cfg.MaxCacheEntries {
			t.Fatalf("%d entries, more than max_cache_entries", len(entries))
		}
		names, upns := map[string]bool{}, map[string]bool{}
		for _, e := range entries {
			n, err := ParseName(e.id.Name, cfg.Domain, cfg.UPNSuffixes)
			if err != nil || n.Account != e.id.Name || n.UPN != "" || names[e.id.Name] {
				t.Fatalf("took name %q", e.id.Name)
			}
			names[e.id.Name] = true
			if e.upn != "" {
				if u, err := ParseName(e.upn, cfg.Domain, cfg.UPNSuffixes); err != nil || u.UPN != e.upn || upns[e.upn] {
					t.Fatalf("took UPN %q", e.upn)
				}
				upns[e.upn] = true
			}
			if !dnWithin(e.dn, cfg.BaseDN) || len(e.id.GroupDNs) != len(e.id.Groups) || len(e.groupGUIDs) != len(e.id.Groups) ||
				e.id.FetchedAt.After(time.Now().Add(handoverSkew)) || !e.handed || e.pwHash != "" || e.id.Cached {
				t.Fatalf("took %+v", e)
			}
		}
	})
}

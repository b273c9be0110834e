package ad

import (
	"slices"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// The directory of these tests, as the cache sees it:
//
//	gpu-users (G1) ⊃ nlp-lab (G2) ∋ alice
//	vision-lab (G3) ∋ bob
//	ml (G4) ∋ carol                 (ml not nested anywhere)
//	domain users (G0): everyone's primary group
const (
	dnGPU    = "CN=gpu-users,OU=Groups,DC=hpc,DC=example,DC=edu"
	dnNLP    = "CN=nlp-lab,OU=Groups,DC=hpc,DC=example,DC=edu"
	dnVision = "CN=vision-lab,OU=Groups,DC=hpc,DC=example,DC=edu"
	dnML     = "CN=ml,OU=Groups,DC=hpc,DC=example,DC=edu"
	dnDU     = "CN=Domain Users,CN=Users,DC=hpc,DC=example,DC=edu"
)

type grp struct{ name, dn, guid string }

var (
	gGPU    = grp{"gpu-users", dnGPU, "G1"}
	gNLP    = grp{"nlp-lab", dnNLP, "G2"}
	gVision = grp{"vision-lab", dnVision, "G3"}
	gML     = grp{"ml", dnML, "G4"}
	gDU     = grp{"domain users", dnDU, "G0"}
)

// cached builds a cache entry the way fetch does (groups sorted by name).
func cached(name, guid string, groups ...grp) *entry {
	slices.SortFunc(groups, func(a, b grp) int {
		if a.name < b.name {
			return -1
		}
		return 1
	})
	e := &entry{id: directory.Identity{Name: name}, dn: "CN=" + name + ",OU=People,DC=hpc,DC=example,DC=edu",
		guid: guid, fingerprint: "fp-" + name}
	for _, g := range groups {
		e.id.Groups = append(e.id.Groups, g.name)
		e.id.GroupDNs = append(e.id.GroupDNs, g.dn)
		e.groupGUIDs = append(e.groupGUIDs, g.guid)
	}
	return e
}

func userChange(e *entry, fp string) change {
	return change{dn: e.dn, guid: e.guid, account: e.id.Name, fingerprint: fp}
}

func groupChange(g grp) change { return change{group: true, dn: g.dn, guid: g.guid, account: g.name} }

func TestChangeSetAffected(t *testing.T) {
	alice := cached("alice", "A", gGPU, gNLP, gDU)
	bob := cached("bob", "B", gVision, gDU)
	carol := cached("carol", "C", gML, gDU)
	all := []*entry{alice, bob, carol}
	mem := func(es ...*entry) []member {
		var ms []member
		for _, e := range es {
			ms = append(ms, member{guid: e.guid, account: e.id.Name})
		}
		return ms
	}
	tests := []struct {
		name    string
		changes []change
		members map[int][]member
		want    map[string]string // account → cause
	}{
		{"nothing changed", nil, nil, map[string]string{}},
		{"a user attribute nobody reads (lastLogonTimestamp): same fingerprint",
			[]change{userChange(alice, alice.fingerprint)}, nil, map[string]string{}},
		{"user disabled, locked, expired, key or password changed: new fingerprint",
			[]change{userChange(alice, "fp-other")}, nil, map[string]string{"alice": causeUser}},
		{"user deleted: a tombstone, matched by GUID (its DN is mangled)",
			[]change{{deleted: true, guid: "B", dn: "CN=bob\\0ADEL:x,CN=Deleted Objects,DC=hpc,DC=example,DC=edu", account: "bob"}},
			nil, map[string]string{"bob": causeUserDeleted}},
		{"user renamed and moved: matched by GUID",
			[]change{{guid: "A", dn: "CN=alice2,OU=Elsewhere,DC=hpc,DC=example,DC=edu", account: "alice2", fingerprint: "fp-alice2"}},
			nil, map[string]string{"alice": causeUser}},
		{"another account created under a cached name: matched by name",
			[]change{{guid: "Z", dn: "CN=carol,OU=New,DC=hpc,DC=example,DC=edu", account: "carol", fingerprint: "fp-new"}},
			nil, map[string]string{"carol": causeUser}},
		{"member removed: bob left vision-lab",
			[]change{groupChange(gVision)}, map[int][]member{}, map[string]string{"bob": causeGroup}},
		{"member added: carol joined vision-lab, bob stays",
			[]change{groupChange(gVision)}, map[int][]member{0: mem(bob, carol)}, map[string]string{"carol": causeGroup}},
		{"nested group removed: nlp-lab left gpu-users, alice with it",
			[]change{groupChange(gGPU)}, map[int][]member{}, map[string]string{"alice": causeGroup}},
		{"nested group added: ml joined gpu-users, carol with it; alice stays",
			[]change{groupChange(gGPU)}, map[int][]member{0: mem(alice, carol)}, map[string]string{"carol": causeGroup}},
		{"inner group changed, outer unchanged: alice left nlp-lab",
			[]change{groupChange(gNLP)}, map[int][]member{}, map[string]string{"alice": causeGroup}},
		{"group renamed: its members' group names are stale",
			[]change{{group: true, dn: dnVision, guid: "G3", account: "vision"}}, map[int][]member{0: mem(bob)},
			map[string]string{"bob": causeGroup}},
		{"group moved: found by GUID, DN differs",
			[]change{{group: true, dn: "CN=vision-lab,OU=Old,DC=hpc,DC=example,DC=edu", guid: "G3", account: "vision-lab"}},
			map[int][]member{0: mem(bob)}, map[string]string{"bob": causeGroup}},
		{"group deleted: a tombstone, by GUID",
			[]change{{group: true, deleted: true, dn: "CN=ml\\0ADEL:y,CN=Deleted Objects,DC=hpc,DC=example,DC=edu", guid: "G4", account: "ml"}},
			nil, map[string]string{"carol": causeGroup}},
		{"group changed, no GUID read: matched by DN (case-insensitive)",
			[]change{{group: true, dn: "cn=Vision-Lab,ou=groups,dc=hpc,dc=example,dc=edu", account: "vision-lab"}},
			map[int][]member{}, map[string]string{"bob": causeGroup}},
		{"member known by name only",
			[]change{groupChange(gML)}, map[int][]member{0: {{account: "carol"}, {account: "bob"}}},
			map[string]string{"bob": causeGroup}},
		{"a group nobody cached lists, without cached members",
			[]change{groupChange(grp{"other", "CN=other,OU=Groups,DC=hpc,DC=example,DC=edu", "G9"})},
			map[int][]member{0: {{guid: "Q", account: "quentin"}}}, map[string]string{}},
		{"primary group changed: its members are not listed in member, so all of them go (safe)",
			[]change{groupChange(gDU)}, map[int][]member{},
			map[string]string{"alice": causeGroup, "bob": causeGroup, "carol": causeGroup}},
		{"several at once",
			[]change{userChange(bob, "fp-x"), groupChange(gML), userChange(alice, alice.fingerprint)},
			map[int][]member{1: mem(carol)}, map[string]string{"bob": causeUser}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := newChangeSet(tc.changes, tc.members)
			got := map[string]string{}
			for _, e := range all {
				if c := cs.affected(e); c != "" {
					got[e.id.Name] = c
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("affected %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("affected %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestChangeOf(t *testing.T) {
	user := ldap.NewEntry("CN=Alice,CN=Users,DC=x", map[string][]string{
		"objectClass": {"top", "person", "organizationalPerson", "user"}, "sAMAccountName": {"Alice"},
		"userPrincipalName": {"Alice@X.example"}, "objectGUID": {"A"}, "userAccountControl": {"512"}})
	c := changeOf(user, KeySSHPublicKey)
	if c.group || c.deleted || c.account != "alice" || c.upn != "alice@x.example" || c.guid != "A" || c.fingerprint == "" {
		t.Errorf("user: %+v", c)
	}
	if c.fingerprint != fingerprint(user, KeySSHPublicKey) {
		t.Error("a change's fingerprint differs from the one fetch computes")
	}
	disabled := ldap.NewEntry(user.DN, map[string][]string{
		"objectClass": {"top", "person", "organizationalPerson", "user"}, "sAMAccountName": {"Alice"},
		"userPrincipalName": {"Alice@X.example"}, "objectGUID": {"A"}, "userAccountControl": {"514"}})
	if changeOf(disabled, KeySSHPublicKey).fingerprint == c.fingerprint {
		t.Error("disabling did not change the fingerprint")
	}
	withKey := ldap.NewEntry(user.DN, map[string][]string{
		"objectClass": {"user"}, "sAMAccountName": {"Alice"}, "userPrincipalName": {"Alice@X.example"},
		"objectGUID": {"A"}, "userAccountControl": {"512"}, KeySSHPublicKey: {"ssh-ed25519 AAAA"}})
	if fingerprint(withKey, KeySSHPublicKey) == c.fingerprint {
		t.Error("a new key did not change the fingerprint")
	}
	if fingerprint(withKey, KeyAltSecurityIdentities) == fingerprint(withKey, KeySSHPublicKey) {
		t.Error("the key attribute is not part of the fingerprint")
	}
	group := ldap.NewEntry("CN=G,DC=x", map[string][]string{"objectClass": {"top", "Group"}, "sAMAccountName": {"G"}})
	if g := changeOf(group, KeySSHPublicKey); !g.group || g.deleted || g.account != "g" || g.fingerprint != "" {
		t.Errorf("group: %+v", g)
	}
	tomb := ldap.NewEntry("CN=bob\\0ADEL:1,CN=Deleted Objects,DC=x", map[string][]string{
		"objectClass": {"top", "person", "organizationalPerson", "user"}, "isDeleted": {"TRUE"}, "objectGUID": {"B"}})
	if d := changeOf(tomb, KeySSHPublicKey); !d.deleted || d.group || d.guid != "B" {
		t.Errorf("tombstone: %+v", d)
	}
}

// TestFingerprintUnambiguous: values are length-prefixed, so moving a
// byte from one attribute to the next changes the fingerprint.
func TestFingerprintUnambiguous(t *testing.T) {
	a := ldap.NewEntry("CN=x", map[string][]string{"sAMAccountName": {"ab"}, "userPrincipalName": {"c"}})
	b := ldap.NewEntry("CN=x", map[string][]string{"sAMAccountName": {"a"}, "userPrincipalName": {"bc"}})
	c := ldap.NewEntry("CN=x", map[string][]string{"sAMAccountName": {"a", "b"}, "userPrincipalName": {"c"}})
	if fingerprint(a, KeySSHPublicKey) == fingerprint(b, KeySSHPublicKey) || fingerprint(a, KeySSHPublicKey) == fingerprint(c, KeySSHPublicKey) {
		t.Error("fingerprints collide")
	}
}

func TestNewChangeSetNames(t *testing.T) {
	cs := newChangeSet([]change{{account: "alice", upn: "a.smith@x"}, {group: true, account: "g"}}, nil)
	if !cs.accounts["alice"] || !cs.upns["a.smith@x"] || !cs.accounts["g"] {
		t.Errorf("accounts %v upns %v", cs.accounts, cs.upns)
	}
}

// TestCacheInvalidate: the watch's drops, and a lookup that read AD before
// them storing nothing after them.
func TestCacheInvalidate(t *testing.T) {
	c := newCache(10)
	now := time.Now()
	alice, bob := cached("alice", "A", gNLP), cached("bob", "B", gVision)
	alice.upn = "a.smith@x"
	gen := c.generation()
	if !c.put(alice, now, gen) || !c.put(bob, now, gen) {
		t.Fatal("put refused")
	}
	inFlight := c.generation() // a lookup starts asking AD for carol
	dropped := c.invalidate(func(e *entry) string {
		if e.id.Name == "alice" {
			return causeUser
		}
		return ""
	})
	if dropped[causeUser] != 1 || len(dropped) != 1 {
		t.Errorf("dropped %v", dropped)
	}
	if c.get(Name{Account: "alice"}) != nil || c.get(Name{Account: "x", UPN: "a.smith@x"}) != nil {
		t.Error("alice (or her UPN alias) still cached")
	}
	if c.get(Name{Account: "bob"}) == nil {
		t.Error("bob was dropped")
	}
	if c.put(cached("carol", "C", gML), now, inFlight) {
		t.Error("an answer read before the invalidation was stored after it")
	}
	if !c.put(cached("carol", "C", gML), now, c.generation()) {
		t.Error("an answer read after the invalidation was not stored")
	}
	gen = c.generation()
	if n := c.flush(); n != 2 || c.len() != 0 {
		t.Errorf("flush dropped %d, left %d", n, c.len())
	}
	if c.put(cached("dave", "D"), now, gen) {
		t.Error("stored across a flush")
	}
}

// TestCachePasswordKept: a refreshed entry keeps the offline password hash
// only while the password (pwdLastSet) is the one that was verified.
func TestCachePasswordKept(t *testing.T) {
	c := newCache(10)
	now := time.Now()
	e := cached("alice", "A")
	e.pwdLastSet = "100"
	c.put(e, now, c.generation())
	c.setPassword("alice", "hash", now)
	same := cached("alice", "A")
	same.pwdLastSet = "100"
	c.put(same, now, c.generation())
	if got := c.get(Name{Account: "alice"}); got.pwHash != "hash" {
		t.Error("refetch with the same password lost the hash")
	}
	changed := cached("alice", "A")
	changed.pwdLastSet = "200"
	c.put(changed, now, c.generation())
	if got := c.get(Name{Account: "alice"}); got.pwHash != "" {
		t.Error("the old password's hash survived a password change")
	}
}

func TestNegCacheForget(t *testing.T) {
	c := newNegCache(10, time.Minute)
	now := time.Now()
	c.add(Name{Account: "new1"}, now)
	c.add(Name{Account: "x", UPN: "new.two@x"}, now)
	c.add(Name{Account: "other"}, now)
	c.forget(map[string]bool{"new1": true}, map[string]bool{"new.two@x": true})
	if c.has(Name{Account: "new1"}, now) || c.has(Name{Account: "x", UPN: "new.two@x"}, now) {
		t.Error("a changed name is still unknown")
	}
	if !c.has(Name{Account: "other"}, now) || c.empty() {
		t.Error("an unrelated name was forgotten")
	}
}

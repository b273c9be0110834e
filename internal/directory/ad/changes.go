package ad

// Which cached identities a directory change makes stale.
//
// The watch (watch.go) learns, each time the DC's highestCommittedUSN
// moves, the users and groups whose uSNChanged passed the USN last handled,
// and, for each changed group, its current user members with nesting
// resolved (LDAP_MATCHING_RULE_IN_CHAIN). From those alone, without asking
// AD anything else, a cached identity is stale when:
//
//   - its user entry changed in a way the identity depends on: the
//     fingerprint of the attributes a login reads (account state, keys,
//     names, ids, primary group, password set time) differs from the one
//     cached, or the entry was deleted. A change only to, say,
//     lastLogonTimestamp (which the first password bind in 14 days writes)
//     leaves the identity, and its offline password hash, alone;
//   - a group it lists changed and it is no longer a member, or the group
//     was renamed, moved or deleted;
//   - a changed group lists it as a member and its cached groups do not
//     have that group: it has just joined.
//
// The cached groups are already the nested closure, and every change of a
// user's closure passes through the group whose member attribute changed
// (the edge that was added or removed starts there), so comparing that one
// group covers nested groups too: C removed from P changes P, and the
// members of C list P but are no longer in it.
//
// Identities are matched by objectGUID first, so renames and moves are
// caught; by DN and account name as well, which only ever adds identities
// (an account re-created under the same name is a different GUID and a
// different fingerprint). Dropping too much costs one AD search at the next
// login; dropping too little is the bug this file exists to prevent.

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/go-ldap/ldap/v3"
)

// Causes of a dropped identity (the cause label of
// frontdoor_ad_cache_invalidations_total).
const (
	causeUser        = "user_changed"
	causeUserDeleted = "user_deleted"
	causeGroup       = "group_changed"
)

// change is one entry of the change search.
type change struct {
	group   bool
	deleted bool // a tombstone (isDeleted)
	dn      string
	guid    string
	account string // lower-case sAMAccountName
	upn     string // lower-case userPrincipalName
	// fingerprint of a user entry (see fingerprint); "" for groups and
	// tombstones.
	fingerprint string
}

// changeOf reads one entry of the change search. Every value comes from
// the directory and is only compared, never interpreted further.
func changeOf(e *ldap.Entry, keyAttr string) change {
	c := change{
		dn:      e.DN,
		guid:    string(e.GetEqualFoldRawAttributeValue("objectGUID")),
		account: strings.ToLower(e.GetEqualFoldAttributeValue("sAMAccountName")),
		upn:     strings.ToLower(e.GetEqualFoldAttributeValue("userPrincipalName")),
		deleted: strings.EqualFold(e.GetEqualFoldAttributeValue("isDeleted"), "TRUE"),
	}
	for _, oc := range e.GetEqualFoldAttributeValues("objectClass") {
		if strings.EqualFold(oc, "group") {
			c.group = true
		}
	}
	if !c.group && !c.deleted {
		c.fingerprint = fingerprint(e, keyAttr)
	}
	return c
}

// fingerprintAttrs are the user attributes an identity is built from; a
// change to any of them makes the cached identity stale.
var fingerprintAttrs = []string{"sAMAccountName", "userPrincipalName", "userAccountControl",
	"msDS-User-Account-Control-Computed", "accountExpires", "lockoutTime", "pwdLastSet",
	"uidNumber", "gidNumber", "objectSid", "primaryGroupID", "objectGUID"}

// fingerprint hashes the DN and the values of fingerprintAttrs and the key
// attribute, each length-prefixed, so different entries never hash the
// same input.
func fingerprint(e *ldap.Entry, keyAttr string) string {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	values := func(attr string) {
		vals := e.GetEqualFoldRawAttributeValues(attr)
		binary.LittleEndian.PutUint64(n[:], uint64(len(vals)))
		h.Write(n[:])
		for _, v := range vals {
			field(v)
		}
	}
	field([]byte(strings.ToLower(e.DN)))
	for _, a := range fingerprintAttrs {
		values(a)
	}
	values(keyAttr)
	return string(h.Sum(nil))
}

// changedGroup is a changed group and, unless deleted, its current user
// members (nested included) by objectGUID and by account name.
type changedGroup struct {
	change
	byGUID, byName map[string]bool
}

func (g *changedGroup) has(e *entry) bool {
	if e.guid != "" && g.byGUID[e.guid] {
		return true
	}
	return g.byName[e.id.Name]
}

// changeSet indexes one round's changes for affected.
type changeSet struct {
	users map[string][]*change // by "g:"+guid, "d:"+lower(dn), "n:"+account
	// groups by "g:"+guid and "d:"+lower(dn); joined by member GUID and
	// account name.
	groups map[string]*changedGroup
	joined map[string][]*changedGroup
	// accounts and upns that changed, for the negative cache.
	accounts, upns map[string]bool
}

// member is a current user member of a changed group.
type member struct {
	guid    string
	account string // lower-case
}

// newChangeSet indexes changes; members holds the current members of each
// changed, not deleted group, by the group's index in changes.
func newChangeSet(changes []change, members map[int][]member) *changeSet {
	cs := &changeSet{users: map[string][]*change{}, groups: map[string]*changedGroup{},
		joined: map[string][]*changedGroup{}, accounts: map[string]bool{}, upns: map[string]bool{}}
	for i := range changes {
		c := &changes[i]
		if c.account != "" {
			cs.accounts[c.account] = true
		}
		if c.upn != "" {
			cs.upns[c.upn] = true
		}
		keys := identityKeys(c.guid, c.dn, "")
		if !c.group {
			if c.account != "" {
				keys = append(keys, "n:"+c.account)
			}
			for _, k := range keys {
				cs.users[k] = append(cs.users[k], c)
			}
			continue
		}
		g := &changedGroup{change: *c, byGUID: map[string]bool{}, byName: map[string]bool{}}
		for _, k := range keys {
			cs.groups[k] = g
		}
		if c.deleted {
			continue
		}
		for _, m := range members[i] {
			if m.guid != "" {
				g.byGUID[m.guid] = true
				cs.joined["g:"+m.guid] = append(cs.joined["g:"+m.guid], g)
			}
			if m.account != "" {
				g.byName[m.account] = true
				cs.joined["n:"+m.account] = append(cs.joined["n:"+m.account], g)
			}
		}
	}
	return cs
}

// identityKeys are the index keys of an entry: its GUID and DN, and name
// when given.
func identityKeys(guid, dn, name string) []string {
	var keys []string
	if guid != "" {
		keys = append(keys, "g:"+guid)
	}
	if dn != "" {
		keys = append(keys, "d:"+strings.ToLower(dn))
	}
	if name != "" {
		keys = append(keys, "n:"+name)
	}
	return keys
}

// affected says why the cached e is stale ("" when it is not).
func (cs *changeSet) affected(e *entry) string {
	for _, k := range identityKeys(e.guid, e.dn, e.id.Name) {
		for _, c := range cs.users[k] {
			if c.deleted {
				return causeUserDeleted
			}
			if c.fingerprint != e.fingerprint {
				return causeUser
			}
		}
	}
	// Groups it lists: still a member, same name, same place?
	for i, dn := range e.id.GroupDNs {
		guid := ""
		if i < len(e.groupGUIDs) {
			guid = e.groupGUIDs[i]
		}
		for _, k := range identityKeys(guid, dn, "") {
			g := cs.groups[k]
			if g == nil {
				continue
			}
			if g.deleted || !g.has(e) || g.account != e.id.Groups[i] || !strings.EqualFold(g.dn, dn) {
				return causeGroup
			}
		}
	}
	// Groups it has just joined.
	for _, k := range identityKeys(e.guid, "", e.id.Name) {
		for _, g := range cs.joined[k] {
			if !slices.ContainsFunc(e.id.GroupDNs, func(dn string) bool { return strings.EqualFold(dn, g.dn) }) &&
				(g.guid == "" || !slices.Contains(e.groupGUIDs, g.guid)) {
				return causeGroup
			}
		}
	}
	return ""
}

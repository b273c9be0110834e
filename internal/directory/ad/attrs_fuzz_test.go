package ad

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
)

// Fuzz targets for the user attributes FuzzAttributeValues does not reach:
// the binary objectSid with primaryGroupID (the primary group's search
// filter), uidNumber and gidNumber (the certificate principal's uid
// floor), FILETIME timestamps, and the group entries of the in-chain
// search. Seeds in testdata/fuzz/FuzzXxx are values read from the test
// suite's Samba DC (a user's objectSid, Domain Users' RID, its
// accountExpires and pwdLastSet) plus the edge cases each parser meets.

// FuzzPrimaryGroupSID: whatever objectSid and primaryGroupID the directory
// sends, the primary group's SID is nil or the user's SID with only its
// last sub-authority replaced by the RID, and the filter escape of it is
// \xx for every byte: nothing in a SID can change the search filter.
func FuzzPrimaryGroupSID(f *testing.F) {
	f.Fuzz(func(t *testing.T, userSID []byte, primaryGroupID string) {
		orig := bytes.Clone(userSID)
		sid := primaryGroupSID(userSID, primaryGroupID)
		if !bytes.Equal(userSID, orig) {
			t.Fatalf("primaryGroupSID modified the user's SID: % x -> % x", orig, userSID)
		}
		rid, ridErr := strconv.ParseUint(primaryGroupID, 10, 32)
		wellFormed := len(userSID) >= 12 && userSID[1] >= 1 && len(userSID) == 8+4*int(userSID[1])
		if (sid != nil) != (ridErr == nil && wellFormed) {
			t.Fatalf("primaryGroupSID(% x, %q) = % x: want a SID exactly when the SID is well formed and the RID a uint32", userSID, primaryGroupID, sid)
		}
		if sid == nil {
			return
		}
		n := len(sid)
		if n != len(userSID) || !bytes.Equal(sid[:n-4], userSID[:n-4]) || binary.LittleEndian.Uint32(sid[n-4:]) != uint32(rid) {
			t.Fatalf("primaryGroupSID(% x, %q) = % x: not the user's SID with RID %d", userSID, primaryGroupID, sid, rid)
		}
		esc := escapeBytes(sid)
		if len(esc) != 3*n {
			t.Fatalf("escapeBytes(% x) = %q", sid, esc)
		}
		back := make([]byte, 0, n)
		for i := 0; i < len(esc); i += 3 {
			if esc[i] != '\\' {
				t.Fatalf("escapeBytes(% x) = %q: byte %d is not escaped", sid, esc, i/3)
			}
			b, err := hex.DecodeString(esc[i+1 : i+3])
			if err != nil {
				t.Fatalf("escapeBytes(% x) = %q: %v", sid, esc, err)
			}
			back = append(back, b...)
		}
		if !bytes.Equal(back, sid) {
			t.Fatalf("escapeBytes(% x) = %q reads back as % x", sid, esc, back)
		}
		// The filter it goes into compiles, and matches on that SID only.
		filter := "(&(objectClass=group)(objectSid=" + esc + "))"
		if _, err := ldap.CompileFilter(filter); err != nil {
			t.Fatalf("filter %q does not compile: %v", filter, err)
		}
	})
}

// FuzzPOSIXIDs: a uidNumber or gidNumber the directory sends is a POSIX
// id (0 to 2^32-2) or taken as stated-but-unusable; a value that is not a
// plain decimal in range can never pass the certificate principal's uid
// floor (backend.min_uid), and one that is passes it exactly when it is at
// least the floor.
func FuzzPOSIXIDs(f *testing.F) {
	p := login.Principals{MinUID: 1000}
	f.Fuzz(func(t *testing.T, uidNumber string) {
		uid := atoi(uidNumber)
		if uid < 0 || uint64(uid) >= math.MaxUint32 {
			t.Fatalf("atoi(%q) = %d: not a POSIX id", uidNumber, uid)
		}
		v, err := strconv.ParseUint(uidNumber, 10, 32)
		plain := err == nil && v < math.MaxUint32
		if plain && uint64(uid) != v {
			t.Fatalf("atoi(%q) = %d, want %d", uidNumber, uid, v)
		}
		// As ad.go builds the identity from the attribute.
		id := directory.Identity{Name: "someone", UID: uid, UIDSet: uidNumber != ""}
		refused := p.Check(id) != nil
		switch {
		case uidNumber == "":
			if refused {
				t.Fatalf("an absent uidNumber (uid unknown) is refused")
			}
		case !plain && !refused:
			t.Fatalf("uidNumber %q (not a POSIX uid) passed min_uid as %d", uidNumber, uid)
		case plain && refused != (v < 1000):
			t.Fatalf("uidNumber %q: refused=%v with min_uid 1000", uidNumber, refused)
		}
	})
}

// FuzzFileTime: AD's FILETIME (accountExpires, pwdLastSet, lockoutTime)
// converts to the instant it names, to the 100 ns tick, in order; 0, the
// negative values and MaxInt64 mean never.
func FuzzFileTime(f *testing.F) {
	const epochDiff = 116444736000000000 // 1601-01-01 to 1970-01-01 in ticks
	first := time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, a, b int64) {
		ta, tb := fileTimeToTime(a), fileTimeToTime(b)
		never := a <= 0 || a == math.MaxInt64
		if ta.IsZero() != never {
			t.Fatalf("fileTimeToTime(%d) = %v", a, ta)
		}
		if never {
			return
		}
		if ta.Location() != time.UTC || ta.Before(first) {
			t.Fatalf("fileTimeToTime(%d) = %v", a, ta)
		}
		// Back to ticks without overflow: Unix seconds below 2^63/1e7.
		if ticks := ta.Unix()*1e7 + int64(ta.Nanosecond()/100) + epochDiff; ticks != a {
			t.Fatalf("fileTimeToTime(%d) = %v reads back as %d", a, ta, ticks)
		}
		if !tb.IsZero() && (a < b) != ta.Before(tb) {
			t.Fatalf("order: %d < %d but %v, %v", a, b, ta, tb)
		}
		// An expiry in that instant: the account is refused from that
		// tick on, and let in the tick before.
		e := ldap.NewEntry("CN=x", map[string][]string{"userAccountControl": {"512"}, "accountExpires": {strconv.FormatInt(a, 10)}})
		if accountState(e, ta) == nil || accountState(e, ta.Add(-100*time.Nanosecond)) != nil {
			t.Fatalf("accountExpires %d (%v): the account is not refused exactly from then", a, ta)
		}
	})
}

// FuzzGroupsOf: the groups of the in-chain search, whatever their
// entries hold, become lower-cased non-empty names, sorted, with their DN
// and objectGUID at the same index.
func FuzzGroupsOf(f *testing.F) {
	f.Fuzz(func(t *testing.T, names, dn string, guid []byte) {
		var entries []*ldap.Entry
		want := map[string]string{} // name → dn of the entry that carries it
		for i, n := range strings.Split(names, "\n") {
			d := dn + "," + strconv.Itoa(i)
			entries = append(entries, ldap.NewEntry(d, map[string][]string{"sAMAccountName": {n}, "objectGUID": {string(guid) + d}}))
			if n != "" {
				want[strings.ToLower(n)] = d
			}
		}
		gn, dns, guids := groupsOf(entries)
		if len(gn) != len(dns) || len(gn) != len(guids) {
			t.Fatalf("groupsOf: %d names, %d DNs, %d GUIDs", len(gn), len(dns), len(guids))
		}
		for i, n := range gn {
			if n == "" || n != strings.ToLower(n) || (i > 0 && gn[i-1] > n) {
				t.Fatalf("groupsOf names %q: empty, not lower-cased or not sorted", gn)
			}
			if _, ok := want[n]; !ok {
				t.Fatalf("groupsOf made up group %q", n)
			}
			if guids[i] != string(guid)+dns[i] {
				t.Fatalf("group %q: DN %q with GUID %q of another entry", n, dns[i], guids[i])
			}
		}
	})
}

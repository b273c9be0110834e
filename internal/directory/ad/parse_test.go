package ad

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

func TestParseUSN(t *testing.T) {
	for s, want := range map[string]uint64{"0": 0, "4025": 4025, "9223372036854775807": math.MaxInt64} {
		if got, err := parseUSN(s); err != nil || got != want {
			t.Errorf("parseUSN(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "9223372036854775808", " 1", "1 ", "0x10", "1e3", "١٢", "12\x00"} {
		if _, err := parseUSN(s); err == nil {
			t.Errorf("parseUSN(%q) accepted", s)
		}
	}
}

func TestParseVersion(t *testing.T) {
	const svc = "CN=NTDS Settings,CN=DC1,CN=Servers,CN=Default-First-Site-Name,CN=Sites,CN=Configuration,DC=hpc,DC=example,DC=edu"
	dc, usn, err := parseVersion(formatVersion(svc, 4025))
	if err != nil || dc != svc || usn != 4025 {
		t.Errorf("round trip: %q %d %v", dc, usn, err)
	}
	if dc, usn, err := parseVersion("CN=a@b@7"); err != nil || dc != "CN=a@b" || usn != 7 {
		t.Errorf("an @ in the DC name: %q %d %v", dc, usn, err)
	}
	for _, v := range []string{"", "no-at", "dc@", "dc@-5", "dc@x"} {
		if _, _, err := parseVersion(v); err == nil {
			t.Errorf("parseVersion(%q) accepted", v)
		}
	}
}

func TestRootDSEOf(t *testing.T) {
	e := func(svc, usn string) *ldap.Entry {
		return ldap.NewEntry("", map[string][]string{"dsServiceName": {svc}, "highestCommittedUSN": {usn}, "defaultNamingContext": {"DC=x"}})
	}
	if r, err := rootDSEOf(e("CN=DC1", "12")); err != nil || r.service != "CN=DC1" || r.usn != 12 || r.nc != "DC=x" {
		t.Errorf("good rootDSE: %+v %v", r, err)
	}
	for _, bad := range []*ldap.Entry{e("", "12"), e("CN=DC1", ""), e("CN=DC1", "-3"), e("CN=DC1", "twelve")} {
		_, err := rootDSEOf(bad)
		var de *directory.Error
		if !errors.As(err, &de) || isNetworkError(err) {
			t.Errorf("%v: %v, want a *directory.Error that is not a network error", bad.Attributes, err)
		}
	}
}

// TestAccountStateUnreadable: values that do not parse refuse the account
// (a directory that answers garbage must not make a disabled account look
// enabled).
func TestAccountStateUnreadable(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		attrs  map[string][]string
		reason string
	}{
		{map[string][]string{}, "ad: unreadable userAccountControl"},
		{map[string][]string{"userAccountControl": {"0x200"}}, "ad: unreadable userAccountControl"},
		{map[string][]string{"userAccountControl": {"512"}, "msDS-User-Account-Control-Computed": {"x"}}, "ad: unreadable msDS-User-Account-Control-Computed"},
		{map[string][]string{"userAccountControl": {"512"}, "accountExpires": {"soon"}}, "ad: unreadable accountExpires"},
		{map[string][]string{"userAccountControl": {"512"}}, ""}, // computed absent: an old DC
	}
	for i, tc := range tests {
		err := accountState(ldap.NewEntry("CN=x", tc.attrs), now)
		if got := directory.Reason(err); got != tc.reason {
			t.Errorf("%d: reason %q, want %q", i, got, tc.reason)
		}
	}
}

// FuzzAttributeValues feeds one hostile string, as the directory could send
// it, to every parser of attribute values the directory package has:
// userAccountControl, msDS-User-Account-Control-Computed, accountExpires,
// highestCommittedUSN, the watch's version string, the rootDSE and the
// change search's entries. Seeds: testdata/fuzz/FuzzAttributeValues.
func FuzzAttributeValues(f *testing.F) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		// Integers: what parses formats back to itself.
		if v, err := parseIntAttr(s); err == nil && s != "" {
			if w, err := parseIntAttr(strconv.FormatInt(v, 10)); err != nil || w != v {
				t.Fatalf("parseIntAttr(%q) = %d does not round-trip", s, v)
			}
		}
		if v, err := parseUSN(s); err == nil {
			if v > math.MaxInt64 {
				t.Fatalf("parseUSN(%q) = %d, beyond a LargeInteger", s, v)
			}
			if w, err := parseUSN(strconv.FormatUint(v, 10)); err != nil || w != v {
				t.Fatalf("parseUSN(%q) = %d does not round-trip", s, v)
			}
		}
		if dc, usn, err := parseVersion(s); err == nil {
			if dc2, usn2, err := parseVersion(formatVersion(dc, usn)); err != nil || dc2 != dc || usn2 != usn {
				t.Fatalf("parseVersion(%q) = %q, %d does not round-trip", s, dc, usn)
			}
		}
		// Any DC name round-trips through a version.
		if dc, usn, err := parseVersion(formatVersion(s, 42)); err != nil || dc != s || usn != 42 {
			t.Fatalf("formatVersion(%q, 42) does not parse back: %q %d %v", s, dc, usn, err)
		}

		// Account state: let in only what parses and says so.
		uac, uacErr := parseIntAttr(s)
		err := accountState(ldap.NewEntry("CN=x", map[string][]string{"userAccountControl": {s}}), now)
		if (err == nil) != (uacErr == nil && s != "" && uac&uacAccountDisable == 0) {
			t.Fatalf("userAccountControl %q: accountState %v", s, err)
		}
		computed, cErr := parseIntAttr(s)
		err = accountState(ldap.NewEntry("CN=x", map[string][]string{"userAccountControl": {"512"},
			"msDS-User-Account-Control-Computed": {s}}), now)
		if (err == nil) != (cErr == nil && computed&(uacLockout|uacPasswordExpired) == 0) {
			t.Fatalf("computed %q: accountState %v", s, err)
		}
		exp, eErr := parseIntAttr(s)
		err = accountState(ldap.NewEntry("CN=x", map[string][]string{"userAccountControl": {"512"}, "accountExpires": {s}}), now)
		if (err == nil) != (eErr == nil && (fileTimeToTime(exp).IsZero() || now.Before(fileTimeToTime(exp)))) {
			t.Fatalf("accountExpires %q: accountState %v", s, err)
		}
		if err != nil && !errors.Is(err, directory.ErrAccountDisabled) {
			t.Fatalf("accountState error %v is not ErrAccountDisabled", err)
		}

		// rootDSE: a usable answer names the DC and a USN that parses.
		if r, err := rootDSEOf(ldap.NewEntry("", map[string][]string{"dsServiceName": {s}, "highestCommittedUSN": {s}})); err == nil {
			if r.service != s || r.service == "" || formatVersion(r.service, r.usn) != s+"@"+strconv.FormatUint(r.usn, 10) {
				t.Fatalf("rootDSE %q read as %+v", s, r)
			}
		} else if isNetworkError(err) {
			t.Fatalf("a bad rootDSE %q reads as a network error: %v", s, err)
		}

		// A change search entry with s everywhere.
		attrs := map[string][]string{"isDeleted": {s}, "objectClass": {s}, "objectGUID": {s}, "sAMAccountName": {s}}
		for _, a := range fingerprintAttrs {
			attrs[a] = []string{s, s}
		}
		c := changeOf(ldap.NewEntry(s, attrs), KeySSHPublicKey)
		if c.deleted != strings.EqualFold(s, "TRUE") || c.group != strings.EqualFold(s, "group") || c.guid != s {
			t.Fatalf("change of %q: %+v", s, c)
		}
		if !c.group && !c.deleted && len(c.fingerprint) != 32 {
			t.Fatalf("fingerprint of %q has %d bytes", s, len(c.fingerprint))
		}
		newChangeSet([]change{c}, map[int][]member{0: {{guid: s, account: s}}}).affected(cached(s, s, grp{s, s, s}))
	})
}

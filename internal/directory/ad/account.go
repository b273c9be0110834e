package ad

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-ldap/ldap/v3"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// userAccountControl and msDS-User-Account-Control-Computed bits.
const (
	uacAccountDisable  = 0x2
	uacLockout         = 0x10     // only meaningful in the computed attribute
	uacPasswordExpired = 0x800000 // ditto
)

const matchingRuleInChain = "1.2.840.113556.1.4.1941"

// fileTimeToTime converts AD's accountExpires (100 ns since 1601-01-01 UTC);
// 0 and MaxInt64 mean "never" and give the zero time.
func fileTimeToTime(v int64) time.Time {
	if v <= 0 || v == math.MaxInt64 {
		return time.Time{}
	}
	const epochDiff = 116444736000000000
	v -= epochDiff
	return time.Unix(v/1e7, (v%1e7)*100).UTC()
}

// accountState checks the attributes AD consults for a bind, so public-key
// logins (where no bind happens) are refused exactly when a password login
// would be. It returns nil when the account may log in. Values that do not
// parse refuse the account: a directory that answers garbage, or a service
// account that may not read userAccountControl, must not make a disabled
// account look enabled.
func accountState(e *ldap.Entry, now time.Time) error {
	refuse := func(reason string) error {
		return &directory.Error{Kind: directory.ErrAccountDisabled, Reason: reason}
	}
	raw := e.GetAttributeValue("userAccountControl")
	uac, err := parseIntAttr(raw)
	if err != nil || raw == "" {
		return refuse("ad: unreadable userAccountControl")
	}
	if uac&uacAccountDisable != 0 {
		return refuse("ad: account disabled")
	}
	// Absent on DCs older than Windows Server 2003: nothing computed.
	computed, err := parseIntAttr(e.GetAttributeValue("msDS-User-Account-Control-Computed"))
	if err != nil {
		return refuse("ad: unreadable msDS-User-Account-Control-Computed")
	}
	if computed&uacLockout != 0 {
		return refuse("ad: account locked out")
	}
	if computed&uacPasswordExpired != 0 {
		return refuse("ad: password expired or must be changed")
	}
	exp, err := accountExpires(e)
	if err != nil {
		return refuse("ad: unreadable accountExpires")
	}
	if !exp.IsZero() && !now.Before(exp) {
		return refuse("ad: account expired")
	}
	return nil
}

// accountExpires is when the account expires; the zero time when never
// (absent, 0 or MaxInt64).
func accountExpires(e *ldap.Entry) (time.Time, error) {
	v, err := parseIntAttr(e.GetAttributeValue("accountExpires"))
	if err != nil {
		return time.Time{}, err
	}
	return fileTimeToTime(v), nil
}

// parseIntAttr parses an AD Integer or LargeInteger value (decimal, an
// optional sign); absent ("") is 0.
func parseIntAttr(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ad: %q is not an integer", truncate(s, 40))
	}
	return v, nil
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// parseKeys reads SSH keys from the configured attribute. Keys that do not
// parse, and keys with authorized_keys options (which frontdoor cannot
// enforce), are skipped with a warning.
func parseKeys(e *ldap.Entry, attr string, log *slog.Logger) []ssh.PublicKey {
	var keys []ssh.PublicKey
	for _, v := range e.GetAttributeValues(attr) {
		line := v
		if attr == KeyAltSecurityIdentities {
			if len(v) < 7 || !strings.EqualFold(v[:7], "SSHKey:") {
				continue // X509:, Kerberos: and other mappings
			}
			line = v[7:]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		key, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			log.Warn("ad: unparseable SSH key ignored", "user", e.GetAttributeValue("sAMAccountName"), "attr", attr, "err", err)
			continue
		}
		if len(opts) > 0 {
			log.Warn("ad: SSH key with options ignored", "user", e.GetAttributeValue("sAMAccountName"), "attr", attr)
			continue
		}
		keys = append(keys, key)
	}
	return keys
}

// groupAttrs are read of each group a user is in.
var groupAttrs = []string{"sAMAccountName", "objectGUID"}

// groupsOf turns the group entries of an in-chain search into sorted,
// lower-cased names, and their DNs and objectGUIDs in the same order.
func groupsOf(entries []*ldap.Entry) (names, dns, guids []string) {
	type g struct{ name, dn, guid string }
	gs := make([]g, 0, len(entries))
	for _, e := range entries {
		name := strings.ToLower(e.GetAttributeValue("sAMAccountName"))
		if name == "" {
			continue
		}
		gs = append(gs, g{name, e.DN, string(e.GetRawAttributeValue("objectGUID"))})
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].name < gs[j].name })
	for _, x := range gs {
		names = append(names, x.name)
		dns = append(dns, x.dn)
		guids = append(guids, x.guid)
	}
	return names, dns, guids
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// primaryGroupSID builds the SID of the primary group: the user's SID with
// its last sub-authority (the RID) replaced by primaryGroupID. Binary SID:
// revision, sub-authority count, 6-byte authority, count × uint32 LE.
func primaryGroupSID(userSID []byte, primaryGroupID string) []byte {
	rid, err := strconv.ParseUint(primaryGroupID, 10, 32)
	if err != nil || len(userSID) < 12 {
		return nil
	}
	n := int(userSID[1])
	if n < 1 || len(userSID) != 8+4*n {
		return nil
	}
	sid := slices.Clone(userSID)
	binary.LittleEndian.PutUint32(sid[len(sid)-4:], uint32(rid))
	return sid
}

// escapeBytes writes a binary value for an LDAP filter: every byte as \xx.
func escapeBytes(b []byte) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 3*len(b))
	for _, c := range b {
		out = append(out, '\\', hex[c>>4], hex[c&15])
	}
	return string(out)
}

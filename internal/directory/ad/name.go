package ad

import (
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// Name is a parsed login name.
type Name struct {
	// Account is the lower-case sAMAccountName the user typed (for the UPN
	// form, the part before "@").
	Account string
	// UPN is set, lower-case, when the user typed alice@suffix; the account
	// is then looked up by userPrincipalName first, since a UPN's prefix
	// need not equal the sAMAccountName.
	UPN string
}

// Limits on names. sAMAccountName is at most 20 characters in AD; a UPN's
// local part may be longer, but we keep it to 64 (the email limit).
const (
	maxInput   = 256
	maxAccount = 20
	maxUPNUser = 64
)

// ParseName validates a login name and maps its three forms to one Name:
//
//	alice
//	HPC\alice               (domain must equal the configured NetBIOS domain)
//	alice@hpc.example.edu   (suffix must be one of upnSuffixes)
//
// Only ASCII letters, digits, '.', '_' and '-' are accepted in the account
// part, which may not start with '.' or '-' or end with '.'. Everything else
// (filter metacharacters, NUL, backslashes, spaces, non-ASCII, non-UTF-8,
// overlong input) is refused before the name gets anywhere near LDAP, so
// escaping is a second line of defence, not the first.
func ParseName(input, domain string, upnSuffixes []string) (Name, error) {
	invalid := func(reason string) (Name, error) {
		return Name{}, &directory.Error{Kind: directory.ErrInvalidName, Reason: "ad: " + reason}
	}
	if input == "" {
		return invalid("empty name")
	}
	if len(input) > maxInput {
		return invalid("name too long")
	}
	if i := strings.IndexByte(input, '\\'); i >= 0 {
		dom, acct := input[:i], input[i+1:]
		if domain == "" || !strings.EqualFold(dom, domain) {
			return invalid("unknown domain prefix")
		}
		if !validNamePart(acct, maxAccount) {
			return invalid("bad characters or length")
		}
		return Name{Account: strings.ToLower(acct)}, nil
	}
	if i := strings.IndexByte(input, '@'); i >= 0 {
		acct, suffix := input[:i], input[i+1:]
		if !validNamePart(acct, maxUPNUser) {
			return invalid("bad characters or length")
		}
		ok := false
		for _, s := range upnSuffixes {
			if strings.EqualFold(suffix, s) {
				ok = true
				break
			}
		}
		if !ok {
			return invalid("unknown UPN suffix")
		}
		a := strings.ToLower(acct)
		return Name{Account: a, UPN: a + "@" + strings.ToLower(suffix)}, nil
	}
	if !validNamePart(input, maxAccount) {
		return invalid("bad characters or length")
	}
	return Name{Account: strings.ToLower(input)}, nil
}

// validNamePart reports whether s is 1..max characters of [A-Za-z0-9._-],
// not starting with '.' or '-' and not ending with '.'.
func validNamePart(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case c == '.' || c == '-':
			if i == 0 || (c == '.' && i == len(s)-1) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// String is the form used in logs.
func (n Name) String() string {
	if n.UPN != "" {
		return n.UPN
	}
	return n.Account
}

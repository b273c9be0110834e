package ad

import (
	"errors"
	"regexp"
	"strings"

	"github.com/go-ldap/ldap/v3"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// AD explains a failed simple bind (LDAP result 49) in the diagnostic
// message: "80090308: LdapErr: DSID-0C09041C, comment: AcceptSecurityContext
// error, data 52e, v4563". The "data" value is the Windows sub-code.
var subCodeRE = regexp.MustCompile(`(?i)\bdata ([0-9a-f]{1,8})\b`)

// subCodes maps AD bind sub-codes to the sentinel and the audit reason.
var subCodes = map[string]struct {
	kind   error
	reason string
}{
	"525": {directory.ErrNoSuchUser, "ad: 525 user not found"},
	"52e": {directory.ErrBadPassword, "ad: 52e invalid credentials"},
	"530": {directory.ErrAccountDisabled, "ad: 530 logon not permitted at this time"},
	"531": {directory.ErrAccountDisabled, "ad: 531 logon not permitted from this workstation"},
	"532": {directory.ErrAccountDisabled, "ad: 532 password expired"},
	"533": {directory.ErrAccountDisabled, "ad: 533 account disabled"},
	"701": {directory.ErrAccountDisabled, "ad: 701 account expired"},
	"773": {directory.ErrAccountDisabled, "ad: 773 password must be changed"},
	"775": {directory.ErrAccountDisabled, "ad: 775 account locked out"},
}

// BindSubCode extracts the AD sub-code ("52e") from a bind error, or "".
func BindSubCode(err error) string {
	var le *ldap.Error
	if !errors.As(err, &le) || le.Err == nil {
		return ""
	}
	m := subCodeRE.FindStringSubmatch(le.Err.Error())
	if m == nil {
		return ""
	}
	return strings.ToLower(strings.TrimLeft(m[1], "0"))
}

// classifyBind turns the error of a user's bind into a *directory.Error with
// a precise audit reason. The boolean is true when the error says nothing
// about the credentials but about reaching the DC (try another DC / offline).
func classifyBind(err error) (*directory.Error, bool) {
	if isNetworkError(err) {
		return &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: bind: DC unreachable", Err: outage{err}}, true
	}
	if ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidCredentials) {
		code := BindSubCode(err)
		if m, ok := subCodes[code]; ok {
			return &directory.Error{Kind: m.kind, Reason: m.reason}, false
		}
		reason := "ad: invalid credentials"
		if code != "" {
			reason += " (sub-code " + code + ")"
		}
		return &directory.Error{Kind: directory.ErrBadPassword, Reason: reason}, false
	}
	if ldap.IsErrorWithCode(err, ldap.LDAPResultStrongAuthRequired) || ldap.IsErrorWithCode(err, ldap.LDAPResultConfidentialityRequired) {
		return &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: DC requires TLS for simple binds", Err: err}, false
	}
	if ldap.IsErrorWithCode(err, ldap.LDAPResultUnwillingToPerform) {
		return &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: DC unwilling to perform", Err: outage{err}}, true
	}
	return &directory.Error{Kind: directory.ErrBadPassword, Reason: "ad: bind refused", Err: err}, false
}

// isNetworkError reports whether err means the connection or the DC failed
// (as opposed to an LDAP answer); busy and unavailable DCs count as failed.
func isNetworkError(err error) bool {
	if err == nil {
		return false
	}
	// An answer the search judged itself (no such group, several
	// accounts for one name) came from a DC that works.
	var de *directory.Error
	if errors.As(err, &de) {
		return false
	}
	var le *ldap.Error
	if errors.As(err, &le) {
		switch le.ResultCode {
		case ldap.ErrorNetwork, ldap.LDAPResultServerDown, ldap.LDAPResultTimeout, ldap.LDAPResultUnavailable, ldap.LDAPResultBusy, ldap.LDAPResultConnectError:
			return true
		}
		return false
	}
	return true // dial and TLS errors
}

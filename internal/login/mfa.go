package login

import (
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

// Does this login need a second factor now? A pure step, like Decide: the
// rule's requirement, what the first factor was and the unlock the
// gateways share for (account, key) in; ask or not, and the stable reason,
// out.
//
// An unlock counts only for the key it was given with (a password login is
// never unlocked: any password typed later may be a stolen one), only
// under the rule that asked for it (an account that moved to another rule
// is asked again), and only within that rule's window as it is now (a
// window shortened by a reload shortens unlocks already given).

// Factor is how the first factor was proven.
type Factor struct {
	// KeyFP is the SHA256 fingerprint of the verified public key; empty
	// for a password.
	KeyFP string
	// SKTouched says the key is a FIDO security key whose signature
	// proved user presence (a touch).
	SKTouched bool
}

// Unlock is a second factor given earlier for an (account, key).
type Unlock struct {
	At    time.Time // when the second factor was proven
	Until time.Time // when the unlock ends (At + the window then)
	Rule  string    // the rule that asked for it
}

// MFAInput is one second-factor decision.
type MFAInput struct {
	Policy policy.Decision // the login's decided rule
	Factor Factor
	// Unlock is the shared unlock for (account, Factor.KeyFP), or nil.
	Unlock *Unlock
	Now    time.Time
}

// MFAVerdict says whether to ask, and why (for the audit log).
type MFAVerdict struct {
	Ask    bool
	Reason string
}

// MFA reasons, stable for audit queries.
const (
	MFAReasonOff      = "mfa off"
	MFAReasonSK       = "security key touched"
	MFAReasonUnlocked = "unlocked"
	MFAReasonPassword = "password login"
	MFAReasonNone     = "no unlock"
	MFAReasonExpired  = "unlock expired"
	MFAReasonRule     = "unlock given under another rule"
)

// SecondFactor decides whether the login must answer a second factor now.
func SecondFactor(in MFAInput) MFAVerdict {
	m := in.Policy.MFA
	switch {
	case m.Mode == "" || m.Mode == policy.MFAOff:
		return MFAVerdict{Reason: MFAReasonOff}
	case m.SKCounts && in.Factor.SKTouched:
		return MFAVerdict{Reason: MFAReasonSK}
	case in.Factor.KeyFP == "":
		return MFAVerdict{Ask: true, Reason: MFAReasonPassword}
	case in.Unlock == nil:
		return MFAVerdict{Ask: true, Reason: MFAReasonNone}
	case in.Unlock.Rule != in.Policy.Rule:
		return MFAVerdict{Ask: true, Reason: MFAReasonRule}
	case !in.Now.Before(in.Unlock.Until) || !in.Now.Before(in.Unlock.At.Add(m.Window)) || in.Now.Before(in.Unlock.At.Add(-time.Minute)):
		// An unlock dated in the future (a clock far ahead on the
		// gateway that wrote it) is not trusted either.
		return MFAVerdict{Ask: true, Reason: MFAReasonExpired}
	}
	return MFAVerdict{Reason: MFAReasonUnlocked}
}

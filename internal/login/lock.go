package login

import (
	"time"
)

// What a user is told about an account lock (`frontdoor lock`). The
// admin's reason is never part of it: it may name an incident, and the
// person at the keyboard may be the one it is about. Only the lock's
// message, which the admin writes for the user, is shown, and when the
// lock ends.

// StageLocked: the account is locked by the administrators.
const StageLocked = "locked"

// LockedMessage is the refusal shown to a locked user who proved who
// they are; message is the admin's words for the user ("" for none),
// until when the lock ends (zero: until unlocked).
func LockedMessage(message string, until time.Time) string {
	s := "your account is locked on this cluster by its administrators"
	if !until.IsZero() {
		s += " until " + until.UTC().Format("2006-01-02 15:04 UTC")
	}
	if message != "" {
		return s + ": " + message
	}
	return s + "; contact them if you do not know why"
}

// LockedClosing is the reason written on the terminal of a session that
// a lock ends.
func LockedClosing(message string) string {
	if message != "" {
		return "your account was locked by the administrators: " + message
	}
	return "your account was locked by the administrators"
}

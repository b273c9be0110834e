// Package directory defines where identities come from: who a user is, which
// groups they are in, which SSH keys they may use and whether their account may
// log in. Implementations live in subpackages (static, ad); the gateway only
// sees the Directory interface.
package directory

import (
	"context"
	"errors"
	"time"

	"golang.org/x/crypto/ssh"
)

// Identity is everything the gateway needs to know about one user. It is a
// value: implementations return fresh copies and callers may keep them.
type Identity struct {
	// Name is the canonical login name (for AD, the sAMAccountName lower-cased).
	// It is also the Unix user name on the login nodes.
	Name string
	// Groups are group names (AD: sAMAccountName) the user is a member of,
	// nested membership already resolved.
	Groups []string
	// GroupDNs are the distinguished names of the same groups, where the
	// source has them (empty for the static directory).
	GroupDNs []string
	// Keys are the public keys the user may authenticate with.
	Keys []ssh.PublicKey
	// UID and GID are the POSIX ids when the source knows them (0 =
	// unknown, unless UIDSet says the source stated 0: root's uid).
	UID, GID int
	UIDSet   bool
	// Source names the directory that produced the identity ("static", "ad"),
	// and Cached is true when it was served from cache while the source was
	// unreachable.
	Source string
	Cached bool
	// FetchedAt is when the source last confirmed this identity.
	FetchedAt time.Time
}

// Directory is an identity source.
//
// Lookup returns the identity of an existing user whose account may log in
// (enabled, not expired, not locked). VerifyPassword checks a password and
// returns the identity on success. Both take the name exactly as the user
// typed it (without any "+node" suffix); implementations normalise it.
type Directory interface {
	Lookup(ctx context.Context, name string) (Identity, error)
	VerifyPassword(ctx context.Context, name, password string) (Identity, error)
	Close() error
}

// Lister is implemented by directories that can list group members, which
// reconciling Slurm with the policy needs (a login never does).
type Lister interface {
	// Members returns the canonical names of the enabled users who are
	// members of group (nested membership counts), sorted; "*" means
	// every enabled user. An unknown group is an error wrapping
	// ErrNoSuchGroup: a typo must not read as "nobody", which would
	// remove everyone's Slurm access.
	Members(ctx context.Context, group string) ([]string, error)
}

// Staler is implemented by directories that cache identities. Stale is
// what the cache last knew of name, however long ago (within the
// directory's own offline limits: never an account it has since seen
// refused or deleted), without asking the source. The gateway uses it only
// to decide whether a client may go on to prove a key while the source is
// slow; the login itself waits for a fresh answer.
type Staler interface {
	Stale(name string) (Identity, bool)
}

// An Offliner says whether the source is unreachable now: a state of the
// source, the same whatever name is asked, so the gateway may tell any
// client (a stranger too) that passwords cannot be checked.
type Offliner interface {
	Offline() bool
}

// ErrNoSuchGroup: Members was asked for a group the directory does not
// have.
var ErrNoSuchGroup = errors.New("no such group")

// Sentinel errors. Implementations wrap them with %w (and may use *Error to
// attach a precise audit reason); callers branch with errors.Is.
var (
	// ErrNoSuchUser: the name is valid but no such account exists.
	ErrNoSuchUser = errors.New("no such user")
	// ErrInvalidName: the name is not acceptable (charset, length, encoding).
	ErrInvalidName = errors.New("invalid user name")
	// ErrBadPassword: the password is wrong or empty.
	ErrBadPassword = errors.New("bad password")
	// ErrAccountDisabled: the account exists but may not log in (disabled,
	// locked, expired, password expired). The wrapping *Error says which.
	ErrAccountDisabled = errors.New("account may not log in")
	// ErrUnavailable: the source could not be reached and no usable cached
	// answer exists.
	ErrUnavailable = errors.New("directory unavailable")
	// ErrNotChecked marks (errors.Is, alongside ErrUnavailable) a
	// VerifyPassword that never showed the password to the source: no
	// server was reachable, or the source was offline without a cached
	// answer. Such an attempt says nothing about the password, so it must
	// not count as a failure. Implementations add it only when sure the
	// password went nowhere; an answer lost after the password was sent
	// may still count at the source (AD's badPwdCount) and is not marked.
	ErrNotChecked = errors.New("password not checked")
)

// Error carries a precise, audit-only reason (for example "ad: 775 account
// locked out") on top of a sentinel. The reason is never shown to the client.
type Error struct {
	Kind   error  // one of the sentinels above
	Reason string // short machine-friendly reason for the audit log
	Err    error  // underlying cause, if any
}

func (e *Error) Error() string {
	msg := e.Kind.Error()
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrAccountDisabled) and friends work.
func (e *Error) Is(target error) bool { return target == e.Kind }

func (e *Error) Unwrap() error { return e.Err }

// Reason returns the audit reason of err: the Reason of a wrapped *Error, or
// err's text.
func Reason(err error) string {
	var de *Error
	if errors.As(err, &de) && de.Reason != "" {
		return de.Reason
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// Package slurm keeps Slurm's accounting (accounts, associations, QOS and
// their GPU limits) in step with frontdoor's policy, and reads the GPUs
// users and accounts hold for the login banner.
//
// The reconciler is split by decision and effect:
//
//	desired := slurm.Desired{...}             // built by the caller from policy + directory
//	c := &slurm.Client{Conf: "/etc/slurm/slurm.conf"}
//	cur, err := c.State(ctx)                   // sacctmgr --parsable2 --noheader, read only
//	changes := slurm.Plan(desired, cur)        // pure: what to do, in the order to do it
//	fmt.Print(slurm.Diff(changes))             // "+ account lab parent=frontdoor GrpTRES=gres/gpu=8"
//	report, err := c.Apply(ctx, changes)       // one sacctmgr -i per change, stops at the first failure
//
// What frontdoor manages is marked in Slurm itself, so a plan never needs
// frontdoor's own memory: an account or QOS is managed when its
// Description starts with Marker ("frontdoor:"); an association is managed
// when its account is. A user record is frontdoor's to delete only when no
// association outside managed accounts remains. Everything else (accounts
// a human made, their users, QOS without the marker) is never modified or
// removed, even when it bears a name the policy uses: Plan reports such a
// clash as a conflict ("!") and leaves it alone.
//
// The Slurm CLIs are the only interface: sacctmgr with --parsable2
// --noheader (and -i for changes), squeue with an explicit --Format whose
// fields end in '|' (squeue has no --parsable2). Human tables are never
// parsed. Every command runs with a timeout (Client.Timeout).
package slurm

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Marker starts the Description of every account and QOS frontdoor
// manages. Objects without it are never changed.
const Marker = "frontdoor:"

// DefaultParent is the account every managed account hangs under.
const DefaultParent = "frontdoor"

// Desired is the accounting state the policy asks for. It is the whole
// truth for managed objects: a managed account, QOS or association absent
// from it is removed.
type Desired struct {
	// Parent is the account the managed accounts hang under (default
	// DefaultParent). It is created under root when missing and is never
	// removed; a managed account that was the parent before is moved out
	// of the way like any other managed account the policy no longer has.
	Parent string
	// Accounts are the managed accounts.
	Accounts []Account
	// QOS are the managed QOS (per-user GPU limits).
	QOS []QOS
	// Users are the users and their associations.
	Users []User
}

// Account is one Slurm account under Parent.
type Account struct {
	// Name is the account name (lower case; see names.SlurmAccount).
	Name string
	// Description is stored after Marker ("frontdoor: Description").
	Description string
	// GPULimit is the account's GrpTRES gres/gpu: how many GPUs all its
	// jobs together may hold. 0 means no limit.
	GPULimit int
	// GPUByType limits GPUs of one type (GrpTRES gres/gpu:TYPE), e.g.
	// {"h100": 8}. The TRES must be listed in AccountingStorageTRES.
	GPUByType map[string]int
}

// QOS is one managed quality of service: per-user GPU limits.
type QOS struct {
	// Name is the QOS name.
	Name string
	// MaxGPUPerUser is MaxTRESPerUser gres/gpu; 0 means no limit.
	MaxGPUPerUser int
	// MaxGPUPerUserByType is MaxTRESPerUser gres/gpu:TYPE.
	MaxGPUPerUserByType map[string]int
	// DenyOnLimit makes sbatch refuse a job over a limit at submit time
	// instead of holding it PENDING.
	DenyOnLimit bool
}

// User is one user and the associations the policy grants.
type User struct {
	// Name is the login name as Slurm knows it: lower case (sacctmgr
	// lower-cases names), so callers lower-case directory names first.
	Name string
	// DefaultAccount is the account jobs go to without -A; it must be one
	// of Assocs' accounts (default: the first). A default a human set to
	// an unmanaged account the user still has is left as it is.
	DefaultAccount string
	// Assocs are the user's associations, at most one per account.
	Assocs []Assoc
}

// Assoc is a user's association with one managed account.
type Assoc struct {
	// Account is one of Desired.Accounts.
	Account string
	// Partitions limit the association to these partitions (one Slurm
	// association each); empty means all partitions.
	Partitions []string
	// QOS is the list of QOS the user may use in this account. Empty
	// leaves the association's QOS as Slurm has it (inherited or set by
	// hand): frontdoor cannot tell an inherited list from an explicit one.
	QOS []string
	// DefaultQOS is the QOS jobs get without --qos; it must be in QOS.
	// Empty leaves it alone.
	DefaultQOS string
}

// validDescription keeps descriptions to one plain line sacctmgr stores
// as given and --parsable2 prints unambiguously (no '|').
var validDescription = regexp.MustCompile(`^[A-Za-z0-9 _.,:;/()@+-]{0,200}$`)

// ErrInvalid is wrapped by every Validate error.
var ErrInvalid = errors.New("invalid desired state")

// Validate checks names, references and limits. Plan assumes a valid
// Desired; callers validate first (the policy's names come from a config
// file and a directory, both outside input).
func (d Desired) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	}
	name := func(kind, s string) bool {
		if !names.SlurmAccount.Valid(s) {
			bad("%s name %q: want %s", kind, s, names.SlurmAccount.Syntax)
			return false
		}
		return true
	}
	parent := d.parent()
	name("parent account", parent)
	if parent == "root" {
		bad("parent account must not be root")
	}
	gpus := func(where string, n int, byType map[string]int) {
		if n < 0 {
			bad("%s: negative GPU limit %d", where, n)
		}
		for t, v := range byType {
			if !names.GPUType.Valid(t) {
				bad("%s: GPU type %q: want %s", where, t, names.GPUType.Syntax)
			}
			if v < 0 {
				bad("%s: negative GPU limit %d for type %s", where, v, t)
			}
		}
	}
	accounts := map[string]bool{}
	for _, a := range d.Accounts {
		if !name("account", a.Name) {
			continue
		}
		if a.Name == parent || a.Name == "root" {
			bad("account %s: reserved name", a.Name)
		}
		if accounts[a.Name] {
			bad("account %s listed twice", a.Name)
		}
		accounts[a.Name] = true
		if !validDescription.MatchString(a.Description) {
			bad("account %s: description %q: one line of letters, digits, spaces and _.,:;/()@+- (no '|', '=' or quotes)", a.Name, a.Description)
		}
		gpus("account "+a.Name, a.GPULimit, a.GPUByType)
	}
	qos := map[string]bool{}
	for _, q := range d.QOS {
		if !name("QOS", q.Name) {
			continue
		}
		if qos[q.Name] {
			bad("QOS %s listed twice", q.Name)
		}
		qos[q.Name] = true
		gpus("QOS "+q.Name, q.MaxGPUPerUser, q.MaxGPUPerUserByType)
	}
	users := map[string]bool{}
	for _, u := range d.Users {
		if !name("user", u.Name) {
			continue
		}
		if u.Name == "root" {
			bad("user root is not managed")
		}
		if users[u.Name] {
			bad("user %s listed twice", u.Name)
		}
		users[u.Name] = true
		if len(u.Assocs) == 0 {
			bad("user %s: no associations", u.Name)
		}
		seen := map[string]bool{}
		for _, as := range u.Assocs {
			if !accounts[as.Account] {
				bad("user %s: account %q is not one of the desired accounts", u.Name, as.Account)
			}
			if seen[as.Account] {
				bad("user %s: account %s listed twice", u.Name, as.Account)
			}
			seen[as.Account] = true
			parts := map[string]bool{}
			for _, p := range as.Partitions {
				if name("partition", p) && parts[p] {
					bad("user %s: partition %s listed twice", u.Name, p)
				}
				parts[p] = true
			}
			for _, q := range as.QOS {
				name("QOS", q)
			}
			if as.DefaultQOS != "" && !contains(as.QOS, as.DefaultQOS) {
				bad("user %s, account %s: default QOS %q is not in the QOS list %v", u.Name, as.Account, as.DefaultQOS, as.QOS)
			}
		}
		if u.DefaultAccount != "" && !seen[u.DefaultAccount] {
			bad("user %s: default account %q has no association", u.Name, u.DefaultAccount)
		}
	}
	return errors.Join(errs...)
}

func (d Desired) parent() string {
	if d.Parent == "" {
		return DefaultParent
	}
	return d.Parent
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gpuTRES is the TRES map for a GPU limit: gres/gpu=N plus
// gres/gpu:TYPE=M, zero values left out.
func gpuTRES(n int, byType map[string]int) TRES {
	t := TRES{}
	if n > 0 {
		t["gres/gpu"] = n
	}
	for typ, v := range byType {
		if v > 0 {
			t["gres/gpu:"+typ] = v
		}
	}
	return t
}

// TRES is a set of trackable-resource counts keyed by TRES name
// ("gres/gpu", "gres/gpu:h100", "cpu").
type TRES map[string]int

// String is the sacctmgr form, sorted: "gres/gpu=8,gres/gpu:h100=4".
func (t TRES) String() string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, t[k])
	}
	return strings.Join(parts, ",")
}

// Equal reports whether t and u hold the same counts.
func (t TRES) Equal(u TRES) bool {
	if len(t) != len(u) {
		return false
	}
	for k, v := range t {
		if w, ok := u[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// setTo is the sacctmgr value that turns current into want: want's counts,
// and -1 (sacctmgr's "clear") for every key current has and want lacks.
func setTo(current, want TRES) string {
	t := TRES{}
	for k, v := range want {
		t[k] = v
	}
	for k := range current {
		if _, ok := want[k]; !ok {
			t[k] = -1
		}
	}
	return t.String()
}

// display is a TRES for a diff line: "none" when empty.
func (t TRES) display() string {
	if len(t) == 0 {
		return "none"
	}
	return t.String()
}

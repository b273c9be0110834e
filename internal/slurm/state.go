package slurm

import (
	"sort"
	"strings"
)

// State is Slurm's accounting as frontdoor sees it: every account, QOS and
// user of one cluster, managed or not (Plan needs the unmanaged ones to
// leave them alone). Client.State reads it; tests build it by hand.
type State struct {
	// Cluster is the cluster the associations belong to; Plan puts it in
	// every command.
	Cluster string
	// Accounts by name.
	Accounts map[string]AccountState
	// QOS by name.
	QOS map[string]QOSState
	// Users by name, each with all its associations in Cluster.
	Users map[string]UserState
}

// AccountState is one account and its account-level association.
type AccountState struct {
	Name string
	// Description without Marker when Managed, as stored otherwise.
	Description string
	// Managed: the stored description starts with Marker.
	Managed bool
	// Parent is the parent account ("" for root).
	Parent string
	// GrpTRES is the account association's group limit.
	GrpTRES TRES
	// InCluster: the account has an association in State.Cluster. Account
	// records are global; deleting an account "where cluster=C" removes
	// only its association there and leaves the record.
	InCluster bool
}

// QOSState is one QOS.
type QOSState struct {
	Name string
	// Description without Marker when Managed.
	Description string
	Managed     bool
	// MaxTRESPerUser is the per-user limit.
	MaxTRESPerUser TRES
	// DenyOnLimit: jobs over a limit are refused at submit.
	DenyOnLimit bool
}

// UserState is one user record and its associations.
type UserState struct {
	Name           string
	DefaultAccount string
	Assocs         map[AssocKey]AssocState
}

// AssocKey identifies a user's association within a cluster: the account
// and the partition ("" for all partitions).
type AssocKey struct {
	Account, Partition string
}

// AssocState is one user association.
type AssocState struct {
	AssocKey
	// QOS the association allows, sorted.
	QOS []string
	// DefaultQOS, "" when none is set.
	DefaultQOS string
}

// managedDescription is what frontdoor stores as a managed object's
// description.
func managedDescription(desc string) string {
	if desc == "" {
		return Marker + " " + emptyDescription
	}
	return Marker + " " + desc
}

// emptyDescription is what is stored after Marker for an empty
// description (Validate refuses it as a description of its own).
const emptyDescription = "managed by frontdoor"

// splitDescription tells a managed description from another and strips
// the marker (and the text managedDescription adds for an empty one).
func splitDescription(stored string) (desc string, managed bool) {
	rest, ok := strings.CutPrefix(stored, Marker)
	if !ok {
		return stored, false
	}
	rest = strings.TrimSpace(rest)
	if rest == emptyDescription {
		rest = ""
	}
	return rest, true
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

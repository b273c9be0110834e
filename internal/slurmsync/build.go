// Package slurmsync keeps Slurm's accounting in step with the policy and the
// directory: it works out the accounts, QOS and associations the policy
// grants to the users the directory has (Build), and reconciles Slurm to
// that, once (plan, apply) or continuously (Syncer). internal/slurm does
// the talking to Slurm; this package decides what to ask for.
package slurmsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
)

// Directory is what Build reads: identities (for the groups the policy
// evaluates) and group members (for who to consider).
type Directory interface {
	directory.Directory
	directory.Lister
}

// Result is the desired state and what Build noticed on the way.
type Result struct {
	Desired slurm.Desired
	// Users are the users considered and the rule each one got ("" when
	// the policy gives them no Slurm grant), for reports.
	Users map[string]string
	// Notes are users skipped and why (disabled, invalid name).
	Notes []string
}

// Build computes the Slurm accounting the policy grants. Candidates are the
// users named by, or in the groups of, every rule with a slurm section;
// each goes through the whole policy (first match wins), so Slurm gets
// exactly what the door gives: a user an earlier rule denies, or matches
// without a Slurm grant, gets no association. Any directory outage, a
// cached (possibly stale) identity or an unknown group fails the build:
// a plan made from half an answer would remove people's access.
func Build(ctx context.Context, pol policy.Config, dir Directory, parent string) (Result, error) {
	res := Result{Desired: slurm.Desired{Parent: parent}, Users: map[string]string{}}
	accounts := map[string]*slurm.Account{}
	var candidates []string
	for i, r := range pol.Rules {
		if r.Slurm == nil || r.Deny {
			continue
		}
		name := pol.RuleName(i)
		sl := r.Slurm
		if a, ok := accounts[sl.Account]; ok {
			a.Description += ", " + name
		} else {
			accounts[sl.Account] = &slurm.Account{Name: sl.Account, Description: "rule " + name,
				GPULimit: sl.GPUsPerAccount, GPUByType: sl.GPUsPerAccountByType}
		}
		if sl.HasUserLimits() {
			res.Desired.QOS = append(res.Desired.QOS, slurm.QOS{Name: policy.QOSName(name), MaxGPUPerUser: sl.GPUsPerUser,
				MaxGPUPerUserByType: sl.GPUsPerUserByType, DenyOnLimit: sl.DenyOnLimit})
		}
		for _, u := range r.Users {
			candidates = append(candidates, strings.ToLower(u))
		}
		for _, g := range r.Groups {
			ms, err := dir.Members(ctx, g)
			if err != nil {
				return Result{}, fmt.Errorf("rule %s: members of %q: %w", name, g, err)
			}
			candidates = append(candidates, ms...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(accounts)) {
		res.Desired.Accounts = append(res.Desired.Accounts, *accounts[name])
	}
	slices.Sort(candidates)
	for _, u := range slices.Compact(candidates) {
		id, err := dir.Lookup(ctx, u)
		switch {
		case errors.Is(err, directory.ErrNoSuchUser), errors.Is(err, directory.ErrAccountDisabled):
			res.Notes = append(res.Notes, fmt.Sprintf("%s: skipped: %v", u, err))
			continue
		case err != nil:
			return Result{}, fmt.Errorf("directory: %s: %w", u, err)
		case id.Cached:
			return Result{}, fmt.Errorf("directory: %s: only a cached identity (the directory is unreachable): not planning from stale data", u)
		}
		d, err := pol.Evaluate(id.Name, id.Groups)
		if err != nil || d.Slurm == nil {
			res.Users[id.Name] = ""
			continue
		}
		if !names.SlurmAccount.Valid(id.Name) {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: skipped: not a name Slurm can store", id.Name))
			continue
		}
		res.Users[id.Name] = d.Rule
		as := slurm.Assoc{Account: d.Slurm.Account, Partitions: d.Slurm.Partitions, QOS: d.QOS}
		if len(d.QOS) > 0 {
			// The rule's own QOS (its per-user limits) comes first: jobs
			// get it without --qos, and, the list being exactly this, no
			// other QOS can lift the limit.
			as.DefaultQOS = d.QOS[0]
		}
		res.Desired.Users = append(res.Desired.Users, slurm.User{Name: id.Name, DefaultAccount: d.Slurm.Account, Assocs: []slurm.Assoc{as}})
	}
	if err := res.Desired.Validate(); err != nil {
		return Result{}, fmt.Errorf("desired Slurm state: %w", err)
	}
	return res, nil
}

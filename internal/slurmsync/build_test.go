package slurmsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

// memDir is a directory in memory: users and their groups.
type memDir struct {
	groups   map[string][]string // user → groups
	disabled map[string]bool
	cached   map[string]bool
	down     bool
}

func (d *memDir) Lookup(_ context.Context, name string) (directory.Identity, error) {
	if d.down {
		return directory.Identity{}, directory.ErrUnavailable
	}
	g, ok := d.groups[name]
	switch {
	case !ok:
		return directory.Identity{}, directory.ErrNoSuchUser
	case d.disabled[name]:
		return directory.Identity{}, directory.ErrAccountDisabled
	}
	return directory.Identity{Name: name, Groups: g, Cached: d.cached[name]}, nil
}

func (d *memDir) VerifyPassword(context.Context, string, string) (directory.Identity, error) {
	return directory.Identity{}, errors.New("not used")
}
func (d *memDir) Close() error { return nil }

func (d *memDir) Members(_ context.Context, group string) ([]string, error) {
	var out []string
	known := false
	for u, gs := range d.groups {
		for _, g := range gs {
			if strings.EqualFold(g, group) {
				known = true
				out = append(out, u)
			}
		}
	}
	if !known {
		return nil, fmt.Errorf("%q: %w", group, directory.ErrNoSuchGroup)
	}
	return out, nil
}

var testPolicy = policy.Config{Rules: []policy.Rule{
	{Name: "admins", Groups: []string{"admins"}, Pools: []string{"p"}},
	{Name: "lab", Groups: []string{"lab"}, Pools: []string{"p"},
		Slurm: &policy.Slurm{Account: "lab", Partitions: []string{"h100"}, GPUsPerUser: 2, GPUsPerAccount: 8, DenyOnLimit: true}},
	{Name: "course", Groups: []string{"course"}, Users: []string{"Visitor"}, Pools: []string{"p"},
		Slurm: &policy.Slurm{Account: "course"}},
}}

func TestBuild(t *testing.T) {
	d := &memDir{groups: map[string][]string{
		"alice":   {"lab"},
		"erin":    {"admins", "lab"}, // an admin first: no Slurm grant
		"carol":   {"lab", "course"}, // the lab first
		"dave":    {"course"},
		"frank":   {"lab"}, // disabled
		"visitor": nil,     // named by the course rule
	}, disabled: map[string]bool{"frank": true}}
	res, err := Build(context.Background(), testPolicy, d, "frontdoor")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range res.Desired.Users {
		got[u.Name] = u.DefaultAccount + "/" + strings.Join(u.Assocs[0].QOS, ",") + "/" + u.Assocs[0].DefaultQOS
	}
	want := map[string]string{"alice": "lab/fd-lab/fd-lab", "carol": "lab/fd-lab/fd-lab", "dave": "course//", "visitor": "course//"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("users %v, want %v", got, want)
	}
	if res.Users["erin"] != "" {
		t.Errorf("erin got %q; admins match first and grant no Slurm", res.Users["erin"])
	}
	if len(res.Desired.QOS) != 1 || res.Desired.QOS[0].Name != "fd-lab" || res.Desired.QOS[0].MaxGPUPerUser != 2 || !res.Desired.QOS[0].DenyOnLimit {
		t.Errorf("QOS %+v", res.Desired.QOS)
	}
	if len(res.Desired.Accounts) != 2 || res.Desired.Accounts[1].Name != "lab" || res.Desired.Accounts[1].GPULimit != 8 {
		t.Errorf("accounts %+v", res.Desired.Accounts)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "frank") {
		t.Errorf("notes %v", res.Notes)
	}
}

// TestBuildRefusesHalfAnswers: a directory outage, a cached identity or an
// unknown group stops the build: a plan from half an answer would remove
// people's access.
func TestBuildRefusesHalfAnswers(t *testing.T) {
	for name, d := range map[string]*memDir{
		"outage": {groups: map[string][]string{"alice": {"lab"}, "dave": {"course"}}, down: true},
		"cached": {groups: map[string][]string{"alice": {"lab"}, "dave": {"course"}}, cached: map[string]bool{"alice": true}},
		"typo":   {groups: map[string][]string{"alice": {"lab"}}}, // no "course" group at all
	} {
		if _, err := Build(context.Background(), testPolicy, d, "frontdoor"); err == nil {
			t.Errorf("%s: built a desired state", name)
		}
	}
}

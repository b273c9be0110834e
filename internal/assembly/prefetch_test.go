package assembly

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

// groupLister is a directory.Lister over a fixed membership.
type groupLister map[string][]string

func (g groupLister) Members(_ context.Context, group string) ([]string, error) {
	if group == "down" {
		return nil, fmt.Errorf("members: %w", directory.ErrUnavailable)
	}
	ms, ok := g[group]
	if !ok {
		return nil, directory.ErrNoSuchGroup
	}
	return ms, nil
}

// policyUsers lists the users of the allowing rules and their groups'
// members once each; a deny rule, "*" and a group AD does not have add
// nobody; a directory that cannot answer fails the round.
func TestPolicyUsers(t *testing.T) {
	l := groupLister{"nlp": {"alice", "carol"}, "vision": {"bob", "Carol"}, "banned": {"mallory"}}
	pol := policy.Config{Rules: []policy.Rule{
		{Name: "deny", Groups: []string{"banned"}, Deny: true},
		{Name: "nlp", Groups: []string{"nlp", "not-created-yet"}},
		{Name: "vision", Users: []string{"dave"}, Groups: []string{"vision"}},
		{Name: "everyone", Groups: []string{"*"}},
	}}
	got, err := policyUsers(context.Background(), pol, l, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"dave", "alice", "carol", "bob"}; !slices.Equal(got, want) {
		t.Errorf("policyUsers = %v, want %v", got, want)
	}
	if got, _ := policyUsers(context.Background(), pol, l, 2); len(got) != 2 {
		t.Errorf("bounded by 2: %v", got)
	}
	pol.Rules = append(pol.Rules, policy.Rule{Name: "x", Groups: []string{"down"}})
	if _, err := policyUsers(context.Background(), pol, l, 100); !errors.Is(err, directory.ErrUnavailable) {
		t.Errorf("a directory that cannot list a group: %v, want ErrUnavailable", err)
	}
}

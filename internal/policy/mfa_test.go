package policy

import (
	"strings"
	"testing"
	"time"
)

func TestMFAPolicy(t *testing.T) {
	c := DefaultConfig()
	c.Rules = []Rule{
		{Name: "staff", Groups: []string{"staff"}, Pools: []string{"general"}, MFA: MFARequired, MFAWindow: 8 * time.Hour, MFASKCounts: true},
		{Name: "rest", Groups: []string{"*"}, Pools: []string{"general"}},
	}
	if err := c.Validate(Known{MFA: true}); err != nil {
		t.Fatal(err)
	}
	d, err := c.Evaluate("alice", []string{"staff"})
	if err != nil || d.MFA != (MFA{Mode: MFARequired, Window: 8 * time.Hour, SKCounts: true}) {
		t.Fatalf("staff: %+v %v", d.MFA, err)
	}
	d, _ = c.Evaluate("bob", nil)
	if d.MFA != (MFA{}) {
		t.Fatalf("default: %+v", d.MFA)
	}
}

func TestMFAValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rule  Rule
		known Known
		want  string
	}{
		{"no mfa section", Rule{MFA: MFARequired}, Known{}, "rules[0].mfa: needs the mfa section"},
		{"optional needs it too", Rule{MFA: MFAOptional}, Known{}, "rules[0].mfa: needs the mfa section"},
		{"unknown mode", Rule{MFA: "yes"}, Known{MFA: true}, `unknown mode "yes"`},
		{"negative window", Rule{MFA: MFARequired, MFAWindow: -time.Hour}, Known{MFA: true}, "mfa_window: must not be negative"},
		{"deny rule", Rule{Deny: true, MFA: MFARequired, Pools: nil}, Known{MFA: true}, "a deny rule asks for no second factor"},
		{"off without a section", Rule{MFA: MFAOff}, Known{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rule
			r.Groups = []string{"*"}
			if !r.Deny {
				r.Pools = []string{"general"}
			}
			c := DefaultConfig()
			c.Rules = []Rule{r}
			err := c.Validate(tc.known)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

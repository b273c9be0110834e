package ad

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

var suffixes = []string{"hpc.example.edu", "example.edu"}

func TestParseName(t *testing.T) {
	tests := []struct {
		in      string
		account string
		upn     string
	}{
		{"alice", "alice", ""},
		{"Alice", "alice", ""},
		{`HPC\alice`, "alice", ""},
		{`hpc\ALICE`, "alice", ""},
		{"alice@hpc.example.edu", "alice", "alice@hpc.example.edu"},
		{"ALICE@HPC.Example.EDU", "alice", "alice@hpc.example.edu"},
		{"a.smith@example.edu", "a.smith", "a.smith@example.edu"},
		{"svc_build-01", "svc_build-01", ""},
		{strings.Repeat("a", 20), strings.Repeat("a", 20), ""},
	}
	for _, tc := range tests {
		n, err := ParseName(tc.in, "HPC", suffixes)
		if err != nil {
			t.Errorf("ParseName(%q): %v", tc.in, err)
			continue
		}
		if n.Account != tc.account || n.UPN != tc.upn {
			t.Errorf("ParseName(%q) = %+v, want %q %q", tc.in, n, tc.account, tc.upn)
		}
	}
}

// injectionNames must all be refused before LDAP sees them.
var injectionNames = []string{
	"", "*", "*)(objectClass=*", "alice)(|(sAMAccountName=*", ")(", "alice*", "a\x00b", "alice\x00",
	`ali\ce`, `HPC\*`, `HPC\alice\x`, `OTHER\alice`, `\alice`, `HPC\`, "*@hpc.example.edu", "alice@evil.example.com",
	"alice@hpc.example.edu@hpc.example.edu", "@hpc.example.edu", "alice@", "\xff\xfe", "al\xc3ice", "ålice",
	"alice ", " alice", "ali ce", "alice\n", "-alice", ".alice", "alice.", strings.Repeat("a", 21),
	strings.Repeat("a", 300), "CN=alice,CN=Users", "alice,ou=x", "al=ice", "al#ice", "al+ice", "al;ice",
	"al<ice", "al\"ice", "al'ice", "al/ice", "al(ice", "..", "alice\t",
}

func TestParseNameRefuses(t *testing.T) {
	for _, in := range injectionNames {
		n, err := ParseName(in, "HPC", suffixes)
		if !errors.Is(err, directory.ErrInvalidName) {
			t.Errorf("ParseName(%q) = %+v, %v; want ErrInvalidName", in, n, err)
		}
	}
	// Without a configured domain the backslash form is refused.
	if _, err := ParseName(`HPC\alice`, "", suffixes); !errors.Is(err, directory.ErrInvalidName) {
		t.Errorf("backslash form accepted without domain: %v", err)
	}
}

func FuzzParseName(f *testing.F) {
	for _, s := range injectionNames {
		f.Add(s)
	}
	f.Add("alice")
	f.Add(`HPC\alice`)
	f.Add("alice@hpc.example.edu")
	f.Fuzz(func(t *testing.T, in string) {
		n, err := ParseName(in, "HPC", suffixes)
		if err != nil {
			if !errors.Is(err, directory.ErrInvalidName) {
				t.Fatalf("error is not ErrInvalidName: %v", err)
			}
			return
		}
		if !utf8.ValidString(in) {
			t.Fatalf("accepted non-UTF-8 %q", in)
		}
		if n.Account == "" || len(n.Account) > maxUPNUser || n.Account != strings.ToLower(n.Account) {
			t.Fatalf("bad account %q from %q", n.Account, in)
		}
		if strings.ContainsAny(n.Account+n.UPN, "*()\\\x00 ,=+<>#;\"'") {
			t.Fatalf("metacharacter passed: %+v from %q", n, in)
		}
		if n.UPN != "" && !strings.HasPrefix(n.UPN, n.Account+"@") {
			t.Fatalf("UPN %q does not start with account %q", n.UPN, n.Account)
		}
		// Parsing is idempotent on the canonical forms.
		again, err := ParseName(n.String(), "HPC", suffixes)
		if err != nil || again != n {
			t.Fatalf("reparse of %q: %+v, %v", n.String(), again, err)
		}
	})
}

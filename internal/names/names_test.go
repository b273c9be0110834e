package names

import (
	"strings"
	"testing"
)

func TestRules(t *testing.T) {
	long := func(n int, c string) string { return strings.Repeat(c, n) }
	for _, tc := range []struct {
		name     string
		rule     Rule
		ok, fail []string
	}{
		{"Node", Node,
			[]string{"login1", "gpu-login.1", "a", "A_b", "ip-10-1-2-3", "i-0abc", long(63, "n")},
			[]string{"", "-x", ".x", "_x", "a b", "a+b", "a/b", "a,b", "ä", long(64, "n")}},
		{"SlurmName", SlurmName,
			[]string{"h100", "General", "gpu_a.1-x", long(64, "p")},
			[]string{"", "-x", "_x", "a b", "a=b", "a,b", `a"b`, long(65, "p")}},
		{"SlurmAccount", SlurmAccount,
			[]string{"vision", "_x", "fd-cs101", "a.b_c-d", long(64, "a")},
			[]string{"", "Vision", "-x", ".x", "a b", "a,b", "a=b", "a|b", long(65, "a")}},
		{"GPUType", GPUType,
			[]string{"h100", "a100_80g", long(32, "g")},
			[]string{"", "H100", "a-100", "gres/gpu", long(33, "g")}},
		{"Gateway", Gateway,
			[]string{"gw1", "gw-1.example.edu", long(63, "g")},
			[]string{"", "gw_1", "-gw", "gw/1", "gw 1", long(64, "g")}},
		{"User", User,
			[]string{"alice", "_svc", "bob.smith-2", long(32, "u")},
			[]string{"", "Alice", "1alice", "-a", "a b", "alice@x", `HPC\alice`, long(33, "u")}},
		{"Token", Token,
			[]string{"ops", "prometheus@mon.example.edu", "a.b_c-d", long(64, "t")},
			[]string{"", "-ops", "a b", "a:b", long(65, "t")}},
		{"AWSRegion", AWSRegion,
			[]string{"us-west-2", "us-gov-west-1", "eu-central-1", "ap-southeast-12"},
			[]string{"", "oregon", "us-west", "US-WEST-2", "us-west-123"}},
		{"SageMaker", SageMaker,
			[]string{"ml-cluster", "login-group", "a", "a--b", long(63, "c")},
			[]string{"", "-a", "a-", "a_b", "a.b", long(64, "c")}},
		{"Host", Host,
			[]string{"gw1", "gw1.mgmt.example.edu", "a-b.c", long(63, "h") + ".edu", strings.Repeat(long(63, "h")+".", 3) + long(61, "h")},
			[]string{"", "-a.edu", "a-.edu", "a..b", "a.edu.", "http://x", "x:1", "a_b.edu", long(64, "h") + ".edu",
				strings.Repeat(long(63, "h")+".", 3) + long(62, "h")}},
		{"S3Bucket", S3Bucket,
			[]string{"hpc-audit", "abc", "a.b.c", long(63, "b")},
			[]string{"", "ab", "HPC_Audit", "-abc", "abc-", "a..b", long(64, "b")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.rule.Syntax == "" {
				t.Error("rule has no Syntax for error messages")
			}
			for _, s := range tc.ok {
				if !tc.rule.Valid(s) {
					t.Errorf("refused %q", s)
				}
			}
			for _, s := range tc.fail {
				if tc.rule.Valid(s) {
					t.Errorf("accepted %q", s)
				}
			}
		})
	}
}

// No rule lets through a character that would split a log line, a
// command argument, a key=value pair or an object key.
func FuzzRulesRefuseSeparators(f *testing.F) {
	f.Add("login1")
	f.Add("a b")
	f.Add("a\nb")
	f.Fuzz(func(t *testing.T, s string) {
		for name, r := range map[string]Rule{"Node": Node, "SlurmName": SlurmName, "SlurmAccount": SlurmAccount,
			"GPUType": GPUType, "Gateway": Gateway, "User": User, "Token": Token, "AWSRegion": AWSRegion,
			"SageMaker": SageMaker, "Host": Host, "S3Bucket": S3Bucket} {
			if r.Valid(s) && (strings.ContainsAny(s, " \t\r\n\"'`,=|/\\\x00") || len(s) > 253) {
				t.Fatalf("%s accepted %q", name, s)
			}
		}
	})
}

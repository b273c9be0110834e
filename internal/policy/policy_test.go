package policy

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEvaluate(t *testing.T) {
	cfg := Config{RefusalMessage: DefaultRefusalMessage, Rules: []Rule{
		{Name: "banned", Users: []string{"mallory"}, Deny: true},
		{Name: "nlp", Groups: []string{"nlp-lab"}, Pools: []string{"gpu", "general"}, MaxSessions: 5},
		{Name: "vision", Groups: []string{"Vision-Lab"}, Pools: []string{"gpu"}, Forwarding: []string{"local"}},
		{Name: "nofwd", Users: []string{"carol"}, Pools: []string{"general"}, Forwarding: []string{}},
		{Name: "everyone", Groups: []string{"*"}, Pools: []string{"general"}, Forwarding: []string{"x11", "agent"}},
	}}
	tests := []struct {
		name    string
		user    string
		groups  []string
		want    Decision
		wantErr bool
	}{
		{name: "deny rule wins first", user: "mallory", groups: []string{"nlp-lab"}, want: Decision{Rule: "banned", Message: DefaultRefusalMessage}, wantErr: true},
		{name: "group match, default forwarding", user: "alice", groups: []string{"x", "nlp-lab"},
			want: Decision{Rule: "nlp", Pools: []string{"gpu", "general"}, MaxSessions: 5, ForwardTo: []string{"node"},
				Rights: Rights{Agent: true, Local: true, Remote: true, StreamLocal: true}}},
		{name: "group names compare case-insensitively", user: "bob", groups: []string{"vision-lab"},
			want: Decision{Rule: "vision", Pools: []string{"gpu"}, Rights: Rights{Local: true}, ForwardTo: []string{"node"}}},
		{name: "explicit empty forwarding grants nothing", user: "carol",
			want: Decision{Rule: "nofwd", Pools: []string{"general"}, ForwardTo: []string{"node"}}},
		{name: "wildcard group", user: "dave",
			want: Decision{Rule: "everyone", Pools: []string{"general"}, Rights: Rights{X11: true, Agent: true}, ForwardTo: []string{"node"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cfg.Evaluate(tt.user, tt.groups)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrDenied) {
				t.Fatalf("err = %v, want ErrDenied", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestEvaluateNoRuleDenies(t *testing.T) {
	cfg := Config{Rules: []Rule{{Name: "nlp", Groups: []string{"nlp-lab"}, Pools: []string{"gpu"}}}}
	if _, err := cfg.Evaluate("eve", []string{"other"}); !errors.Is(err, ErrDenied) {
		t.Fatalf("err = %v, want ErrDenied", err)
	}
}

// problems splits Validate's joined "policy.KEY: problem" errors by key.
func problems(t *testing.T, err error) map[string]string {
	t.Helper()
	got := map[string]string{}
	if err == nil {
		return got
	}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		key, msg, ok := strings.Cut(e.Error(), ": ")
		if !ok || !strings.HasPrefix(key, "policy.") {
			t.Fatalf("error %q is not \"policy.KEY: problem\"", e)
		}
		got[strings.TrimPrefix(key, "policy.")] += msg + "; "
	}
	return got
}

func TestValidate(t *testing.T) {
	cfg := Config{RefusalMessage: DefaultRefusalMessage, Rules: []Rule{
		{Name: "ok", Groups: []string{"g"}, Pools: []string{"general"}},
		{Name: "nobody"},
		{Name: "badpool", Users: []string{"u"}, Pools: []string{"bad pool"}},
		{Name: "badfwd", Users: []string{"u"}, Pools: []string{"p"}, Forwarding: []string{"telepathy"}},
		{Name: "neg", Users: []string{"u"}, Pools: []string{"p"}, MaxSessions: -1},
	}}
	got := problems(t, cfg.Validate(Known{}))
	for _, want := range []string{"rules[1]", "rules[1].pools", "rules[2].pools[0]", "rules[3].forwarding[0]", "rules[4].max_sessions"} {
		if got[want] == "" {
			t.Errorf("no problem reported for %s (got %v)", want, got)
		}
	}
	if got["rules[0]"] != "" || got["rules[0].pools"] != "" {
		t.Errorf("valid rule reported: %v", got)
	}
	if got := problems(t, DefaultConfig().Validate(Known{})); len(got) != 1 || got["rules"] == "" {
		t.Errorf("default policy (no rules): %v", got)
	}
	if got := problems(t, (Config{Rules: cfg.Rules[:1]}).Validate(Known{})); len(got) != 1 || got["refusal_message"] == "" {
		t.Errorf("empty refusal message: %v", got)
	}
}

func TestValidateNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule Rule
		key  string // "" when valid
	}{
		{"account of 64", Rule{Name: "r", Groups: []string{"g"}, Pools: []string{"p"}, Slurm: &Slurm{Account: strings.Repeat("a", 64)}}, ""},
		{"account of 65", Rule{Name: "r", Groups: []string{"g"}, Pools: []string{"p"}, Slurm: &Slurm{Account: strings.Repeat("a", 65)}}, "rules[0].slurm.account"},
		{"mixed-case account", Rule{Name: "r", Groups: []string{"g"}, Pools: []string{"p"}, Slurm: &Slurm{Account: "Vision"}}, "rules[0].slurm.account"},
		{"rule name of 61: fd-RULE is 64", Rule{Name: strings.Repeat("r", 61), Groups: []string{"g"}, Pools: []string{"p"}, Slurm: &Slurm{Account: "a"}}, ""},
		{"rule name of 62: fd-RULE too long", Rule{Name: strings.Repeat("r", 62), Groups: []string{"g"}, Pools: []string{"p"}, Slurm: &Slurm{Account: "a"}}, "rules[0].slurm"},
		{"mixed-case partition", Rule{Name: "r", Groups: []string{"g"}, Pools: []string{"p"}, Slurm: &Slurm{Account: "a", Partitions: []string{"H100"}}}, ""},
		{"partition with a comma", Rule{Name: "r", Groups: []string{"g"}, Pools: []string{"p"}, Slurm: &Slurm{Account: "a", Partitions: []string{"a,b"}}}, "rules[0].slurm.partitions[0]"},
		{"pool of 64", Rule{Name: "r", Groups: []string{"g"}, Pools: []string{strings.Repeat("p", 64)}}, "rules[0].pools[0]"},
		{"wildcard host", Rule{Name: "r", Groups: []string{"g"}, Pools: []string{"p"}, ForwardTo: []string{"*.lab.example.edu"}}, ""},
		{"host label ending in '-'", Rule{Name: "r", Groups: []string{"g"}, Pools: []string{"p"}, ForwardTo: []string{"lab-.example.edu"}}, "rules[0].forward_to[0]"},
		{"GPU type", Rule{Name: "r", Groups: []string{"g"}, Pools: []string{"p"}, Slurm: &Slurm{Account: "a", GPUsPerUserByType: map[string]int{"H100": 1}}}, "rules[0].slurm.gpus_per_user_by_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Rules = []Rule{tc.rule}
			got := problems(t, cfg.Validate(Known{}))
			if tc.key == "" && len(got) > 0 || tc.key != "" && (len(got) != 1 || got[tc.key] == "") {
				t.Errorf("got %v, want a problem at %q", got, tc.key)
			}
		})
	}
}

func TestUsersMatchCaseInsensitively(t *testing.T) {
	cfg := Config{Rules: []Rule{{Name: "ops", Users: []string{"Alice"}, Pools: []string{"p"}}}}
	if d, err := cfg.Evaluate("alice", nil); err != nil || d.Rule != "ops" {
		t.Fatalf("alice: %+v %v", d, err)
	}
	if _, err := cfg.Evaluate("alicex", nil); err == nil {
		t.Fatal("alicex matched")
	}
}

func TestSlurmGrant(t *testing.T) {
	cfg := Config{Rules: []Rule{
		{Name: "vision", Groups: []string{"vision-lab"}, Pools: []string{"gpu"}, IdleTimeout: time.Hour,
			Slurm: &Slurm{Account: "vision", Partitions: []string{"general", "h100"}, DefaultPartition: "h100",
				QOS: []string{"normal"}, GPUsPerUser: 4, GPUsPerUserByType: map[string]int{"h100": 2}, GPUsPerAccount: 8}},
		{Name: "course", Groups: []string{"cs101"}, Pools: []string{"general"}, Slurm: &Slurm{Account: "cs101", Partitions: []string{"general"}}},
	}}
	d, err := cfg.Evaluate("bob", []string{"Vision-Lab"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Slurm.Account != "vision" || d.Slurm.Partition() != "h100" || d.GPULimit() != "4,h100=2" {
		t.Fatalf("decision %+v, limit %s", d, d.GPULimit())
	}
	if want := []string{"fd-vision", "normal"}; !slices.Equal(d.QOS, want) {
		t.Fatalf("QOS %v, want %v", d.QOS, want)
	}
	if d.IdleWarning != 5*time.Minute || !slices.Equal(d.ForwardTo, []string{ForwardToNode}) {
		t.Fatalf("idle warning %v, forward_to %v", d.IdleWarning, d.ForwardTo)
	}
	d, _ = cfg.Evaluate("carol", []string{"cs101"})
	if d.Slurm.Partition() != "general" || d.GPULimit() != "none" || len(d.QOS) != 0 {
		t.Fatalf("course: %+v", d)
	}
	// The decision is a copy: changing it does not change the policy.
	d.Slurm.Account = "x"
	if cfg.Rules[1].Slurm.Account != "cs101" {
		t.Fatal("decision aliases the rule")
	}
}

func TestRefusalMessages(t *testing.T) {
	cfg := Config{RefusalMessage: "ask hpc-help@example.edu", Rules: []Rule{
		{Name: "suspended", Groups: []string{"suspended"}, Deny: true, Message: "your access is suspended; see your email"},
		{Name: "staff", Groups: []string{"staff"}, Pools: []string{"p"}},
	}}
	if d, err := cfg.Evaluate("x", []string{"suspended", "staff"}); err == nil || d.Message != "your access is suspended; see your email" {
		t.Fatalf("deny: %+v %v", d, err)
	}
	if d, err := cfg.Evaluate("x", nil); err == nil || d.Message != "ask hpc-help@example.edu" {
		t.Fatalf("no rule: %+v %v", d, err)
	}
	if d, _ := DefaultConfig().Evaluate("x", nil); d.Message != DefaultRefusalMessage {
		t.Fatalf("default: %q", d.Message)
	}
}

func TestValidateSlurmAndShadowing(t *testing.T) {
	known := Known{Pools: []string{"general", "gpu"}, Partitions: []string{"general", "h100"}}
	cfg := Config{Rules: []Rule{
		{Name: "admins", Users: []string{"root-ish"}, Groups: []string{"hpc-admins"}, Pools: []string{"general", "gpu"}},
		{Name: "admins-again", Groups: []string{"HPC-Admins"}, Pools: []string{"general"}},             // 1: shadowed by 0
		{Name: "lab", Groups: []string{"lab"}, Pools: []string{"gpu", "nowhere"}},                      // 2: unknown pool
		{Name: "bad slurm", Groups: []string{"s"}, Pools: []string{"gpu"}, Slurm: &Slurm{Account: ""}}, // 3: name, account
		{Name: "parts", Groups: []string{"p"}, Pools: []string{"gpu"}, Slurm: &Slurm{Account: "a,b", Partitions: []string{"h200"},
			DefaultPartition: "general", DenyOnLimit: true, GPUsPerAccountByType: map[string]int{"h 100": -1}}}, // 4
		{Name: "acct1", Groups: []string{"x"}, Pools: []string{"gpu"}, Slurm: &Slurm{Account: "shared", GPUsPerAccount: 8}},
		{Name: "acct2", Groups: []string{"y"}, Pools: []string{"gpu"}, Slurm: &Slurm{Account: "shared", GPUsPerAccount: 4}}, // 6
		{Name: "fwd", Groups: []string{"f"}, Pools: []string{"gpu"}, ForwardTo: []string{"node", "10.0.0.0/8", "*.example.edu", "bad host!"},
			IdleTimeout: time.Minute, IdleWarning: time.Hour}, // 7
		{Name: "deny-with-grant", Groups: []string{"d"}, Deny: true, Pools: []string{"gpu"}}, // 8
		{Name: "everyone", Groups: []string{"*"}, Pools: []string{"general"}},                // 9
		{Name: "after-everyone", Users: []string{"zed"}, Pools: []string{"general"}},         // 10: shadowed
	}}
	cfg.RefusalMessage = DefaultRefusalMessage
	got := problems(t, cfg.Validate(known))
	for key, want := range map[string]string{
		"rules[1]":                                "matched first by rules[0] (admins)",
		"rules[2].pools[1]":                       `pool "nowhere" has no login nodes`,
		"rules[3].slurm":                          "needs a name usable in Slurm",
		"rules[3].slurm.account":                  "required",
		"rules[4].slurm.account":                  "not a valid Slurm account name",
		"rules[4].slurm.partitions[0]":            `partition "h200" is not in slurm.partitions`,
		"rules[4].slurm.default_partition":        "not one of this rule's partitions",
		"rules[4].slurm.deny_on_limit":            "no effect",
		"rules[4].slurm.gpus_per_account_by_type": "not a valid GPU type",
		"rules[6].slurm.gpus_per_account":         "limited differently by rules[5]",
		"rules[7].forward_to[3]":                  "is not",
		"rules[7].idle_warning":                   "shorter than idle_timeout",
		"rules[8]":                                "a deny rule grants nothing",
		"rules[10]":                               "matched first by rules[9] (everyone)",
	} {
		if !strings.Contains(got[key], want) {
			t.Errorf("%s: got %q, want %q", key, got[key], want)
		}
	}
	for _, key := range []string{"rules[0]", "rules[5]", "rules[9]", "rules[7].forward_to[0]", "rules[7].forward_to[1]", "rules[7].forward_to[2]"} {
		if got[key] != "" {
			t.Errorf("%s: unexpected problem %q", key, got[key])
		}
	}
}

func FuzzEvaluate(f *testing.F) {
	cfg := Config{Rules: []Rule{
		{Name: "a", Users: []string{"Alice"}, Pools: []string{"p"}, Slurm: &Slurm{Account: "a", GPUsPerUser: 1}},
		{Name: "g", Groups: []string{"Lab"}, Pools: []string{"p"}},
	}}
	f.Add("alice", "lab")
	f.Add("ALICE", "")
	f.Fuzz(func(t *testing.T, user, group string) {
		d, err := cfg.Evaluate(user, []string{group})
		if err == nil && d.Rule == "" {
			t.Fatal("allowed without a rule")
		}
		if err == nil && d.Rule == "a" && !strings.EqualFold(user, "alice") {
			t.Fatalf("%q matched alice's rule", user)
		}
	})
}

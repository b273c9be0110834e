package policy

import (
	"errors"
	"reflect"
	"testing"
)

func TestEvaluate(t *testing.T) {
	cfg := Config{Rules: []Rule{
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
		{name: "deny rule wins first", user: "mallory", groups: []string{"nlp-lab"}, want: Decision{Rule: "banned"}, wantErr: true},
		{name: "group match, default forwarding", user: "alice", groups: []string{"x", "nlp-lab"},
			want: Decision{Rule: "nlp", Pools: []string{"gpu", "general"}, MaxSessions: 5,
				Rights: Rights{Agent: true, Local: true, Remote: true, StreamLocal: true}}},
		{name: "group names compare case-insensitively", user: "bob", groups: []string{"vision-lab"},
			want: Decision{Rule: "vision", Pools: []string{"gpu"}, Rights: Rights{Local: true}}},
		{name: "explicit empty forwarding grants nothing", user: "carol",
			want: Decision{Rule: "nofwd", Pools: []string{"general"}}},
		{name: "wildcard group", user: "dave",
			want: Decision{Rule: "everyone", Pools: []string{"general"}, Rights: Rights{X11: true, Agent: true}}},
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

func TestValidate(t *testing.T) {
	cfg := Config{Rules: []Rule{
		{Name: "ok", Groups: []string{"g"}, Pools: []string{"general"}},
		{Name: "nobody"},
		{Name: "badpool", Users: []string{"u"}, Pools: []string{"bad pool"}},
		{Name: "badfwd", Users: []string{"u"}, Pools: []string{"p"}, Forwarding: []string{"telepathy"}},
		{Name: "neg", Users: []string{"u"}, Pools: []string{"p"}, MaxSessions: -1},
	}}
	got := map[string]bool{}
	for _, p := range cfg.Validate() {
		got[p.Key] = true
	}
	for _, want := range []string{"rules[1]", "rules[1].pools", "rules[2].pools[0]", "rules[3].forwarding[0]", "rules[4].max_sessions"} {
		if !got[want] {
			t.Errorf("no problem reported for %s (got %v)", want, got)
		}
	}
	if got["rules[0]"] || got["rules[0].pools"] {
		t.Errorf("valid rule reported: %v", got)
	}
	if ps := (Config{}).Validate(); len(ps) != 1 || ps[0].Key != "rules" {
		t.Errorf("empty policy: %v", ps)
	}
}

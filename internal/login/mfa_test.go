package login

import (
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

func TestSecondFactor(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	req := func(window time.Duration, sk bool) policy.Decision {
		return policy.Decision{Rule: "staff", MFA: policy.MFA{Mode: policy.MFARequired, Window: window, SKCounts: sk}}
	}
	key := Factor{KeyFP: "SHA256:abc"}
	unlock := func(at time.Duration, window time.Duration, rule string) *Unlock {
		return &Unlock{At: now.Add(at), Until: now.Add(at + window), Rule: rule}
	}
	for _, tc := range []struct {
		name   string
		in     MFAInput
		ask    bool
		reason string
	}{
		{"off", MFAInput{Policy: policy.Decision{MFA: policy.MFA{Mode: policy.MFAOff}}, Factor: key}, false, MFAReasonOff},
		{"off by default", MFAInput{Factor: key}, false, MFAReasonOff},
		{"no unlock", MFAInput{Policy: req(12*time.Hour, false), Factor: key}, true, MFAReasonNone},
		{"unlocked", MFAInput{Policy: req(12*time.Hour, false), Factor: key, Unlock: unlock(-time.Hour, 12*time.Hour, "staff")}, false, MFAReasonUnlocked},
		{"window over", MFAInput{Policy: req(12*time.Hour, false), Factor: key, Unlock: unlock(-13*time.Hour, 12*time.Hour, "staff")}, true, MFAReasonExpired},
		{"window shortened since", MFAInput{Policy: req(time.Hour, false), Factor: key, Unlock: unlock(-2*time.Hour, 12*time.Hour, "staff")}, true, MFAReasonExpired},
		{"ends exactly now", MFAInput{Policy: req(time.Hour, false), Factor: key, Unlock: unlock(-time.Hour, time.Hour, "staff")}, true, MFAReasonExpired},
		{"from the future", MFAInput{Policy: req(12*time.Hour, false), Factor: key, Unlock: unlock(time.Hour, 12*time.Hour, "staff")}, true, MFAReasonExpired},
		{"another rule", MFAInput{Policy: req(12*time.Hour, false), Factor: key, Unlock: unlock(-time.Hour, 12*time.Hour, "students")}, true, MFAReasonRule},
		{"password never unlocked", MFAInput{Policy: req(12*time.Hour, false), Factor: Factor{}, Unlock: unlock(-time.Hour, 12*time.Hour, "staff")}, true, MFAReasonPassword},
		{"sk key touched counts", MFAInput{Policy: req(12*time.Hour, true), Factor: Factor{KeyFP: "SHA256:sk", SKTouched: true}}, false, MFAReasonSK},
		{"sk key does not count without mfa_sk_counts", MFAInput{Policy: req(12*time.Hour, false), Factor: Factor{KeyFP: "SHA256:sk", SKTouched: true}}, true, MFAReasonNone},
		{"plain key with mfa_sk_counts", MFAInput{Policy: req(12*time.Hour, true), Factor: key}, true, MFAReasonNone},
		{"optional asks too", MFAInput{Policy: policy.Decision{Rule: "r", MFA: policy.MFA{Mode: policy.MFAOptional, Window: time.Hour}}, Factor: key}, true, MFAReasonNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			v := SecondFactor(tc.in)
			if v.Ask != tc.ask || v.Reason != tc.reason {
				t.Errorf("got ask=%v %q, want ask=%v %q", v.Ask, v.Reason, tc.ask, tc.reason)
			}
		})
	}
}

func TestExplainShowsSecondFactor(t *testing.T) {
	o := Outcome{Policy: policy.Decision{Rule: "staff", Pools: []string{"general"}, ForwardTo: []string{"node"},
		MFA: policy.MFA{Mode: policy.MFARequired, Window: 8 * time.Hour, SKCounts: true}}}
	got := o.Explain(Input{})
	if !strings.Contains(got, "second factor required (a key stays unlocked 8h0m0s; a touched FIDO key counts)") {
		t.Errorf("explain does not show the second factor:\n%s", got)
	}
	o.Policy.MFA = policy.MFA{}
	if strings.Contains(o.Explain(Input{}), "second factor") {
		t.Error("explain shows a second factor for a rule without one")
	}
}

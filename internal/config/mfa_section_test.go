package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMFASection(t *testing.T) {
	y := strings.Replace(good, `pools: [general, default]}`, `pools: [general, default], mfa: required, mfa_window: 8h}`, 1) + `mfa:
  servers: ["10.0.0.5:1812", "10.0.0.6:1812"]
  secret_file: radius.secret
`
	c, err := Parse("/etc/frontdoor/gateway.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if c.MFA == nil || c.MFA.SecretFile != filepath.Join("/etc/frontdoor", "radius.secret") || c.MFA.Timeout != 50*time.Second || !c.MFA.RequireMessageAuthenticator {
		t.Fatalf("mfa section: %+v", c.MFA)
	}
	d, _ := c.Policy.Evaluate("alice", nil)
	if d.MFA.Mode != "required" || d.MFA.Window != 8*time.Hour {
		t.Errorf("rule's mfa: %+v", d.MFA)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"rule without the section", strings.Replace(good, `pools: [general, default]}`, `pools: [general, default], mfa: required}`, 1),
			"policy.rules[0].mfa: needs the mfa section"},
		{"no servers", strings.Replace(y, `servers: ["10.0.0.5:1812", "10.0.0.6:1812"]`, `servers: []`, 1), "mfa.servers: at least one"},
		{"bad server", strings.Replace(y, `"10.0.0.6:1812"`, `"10.0.0.6"`, 1), `mfa.servers[1]: "10.0.0.6" is not host:port`},
		{"timeout over the login", y + "  timeout: 2m\n", "mfa.timeout: 2m0s is not shorter than gateway.login_grace_time"},
		{"no secret", strings.Replace(y, "  secret_file: radius.secret\n", "", 1), "mfa.secret_file: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("gateway.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

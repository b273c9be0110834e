package cluster

import (
	"strings"
	"testing"
)

// Every problem names its key in the section, so the gateway and the agent
// can point at the line; the role decides about gateway_keys.
func TestConfigValidateKeys(t *testing.T) {
	ok := DefaultConfig()
	ok.Name, ok.SecretKeys, ok.GatewayKeys = "gw1", []string{testKey}, []string{otherKey}
	if err := ok.ValidateFor(RoleGateway); err != nil {
		t.Fatalf("gateway: %v", err)
	}
	if err := DefaultConfig().Validate(); err == nil || !strings.Contains(err.Error(), "cluster.name: must be set") {
		t.Errorf("the defaults leave the name to the holder: %v", err)
	}
	for _, tc := range []struct {
		name   string
		role   Role
		change func(c *Config)
		want   string
	}{
		{"join", RoleGateway, func(c *Config) { c.Join = []string{"a:1", "b"} }, "cluster.join[1]: \"b\""},
		{"bind", RoleGateway, func(c *Config) { c.BindAddr = "any" }, `cluster.bind_addr: "any" is not an IP address`},
		{"probe", RoleGateway, func(c *Config) { c.ProbeTimeout = c.ProbeInterval }, "cluster.probe_timeout: must be shorter than probe_interval"},
		{"ttl", RoleGateway, func(c *Config) { c.DrainTTL = 0 }, "cluster.drain_ttl: must be positive"},
		{"no gateway key", RoleGateway, func(c *Config) { c.GatewayKeys = nil }, "cluster.gateway_keys: required on a gateway"},
		{"shared key", RoleGateway, func(c *Config) { c.GatewayKeys = []string{testKey} }, "cluster.gateway_keys[0]: is also in secret_keys"},
		{"agent with gateway key", RoleAgent, func(c *Config) {}, "cluster.gateway_keys: must not be set on an agent"},
		{"bad key", RoleGateway, func(c *Config) { c.SecretKeys = []string{"!!"} }, "cluster.secret_keys[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.change(&c)
			err := c.ValidateFor(tc.role)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			var all []error
			collect(err, &all)
			for _, e := range all {
				if !strings.HasPrefix(e.Error(), "cluster.") {
					t.Errorf("%q does not name its key", e)
				}
			}
		})
	}
}

func collect(err error, out *[]error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			collect(e, out)
		}
		return
	}
	if err != nil {
		*out = append(*out, err)
	}
}

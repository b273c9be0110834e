package discovery

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

func TestNodeName(t *testing.T) {
	for _, tc := range []struct{ host, id, want string }{
		{"ip-10-1-2-3.us-west-2.compute.internal", "i-0abc", "ip-10-1-2-3"},
		{"ip-10-1-2-3", "i-0abc", "ip-10-1-2-3"},
		{"IP-10-1-2-3.ec2.internal", "i-0abc", "ip-10-1-2-3"},
		{"", "i-0abc", "i-0abc"},
		{".compute.internal", "i-0abc", "i-0abc"},
		{"bad host;rm", "i-0abc", "i-0abc"},
		{"", "", ""},
		{strings.Repeat("a", 64), "i-0abc", "i-0abc"},
	} {
		if got := NodeName(tc.host, tc.id); got != tc.want {
			t.Errorf("NodeName(%q, %q) = %q, want %q", tc.host, tc.id, got, tc.want)
		}
	}
}

// Whatever the API says, a node name is empty or one a user can type
// after "+" and the logs can show.
func FuzzNodeName(f *testing.F) {
	f.Add("ip-10-1-2-3.us-west-2.compute.internal", "i-0123456789abcdef0")
	f.Add("", "i-01")
	f.Add("a\x00b.c", "i-\n")
	f.Fuzz(func(t *testing.T, host, id string) {
		n := NodeName(host, id)
		if n != "" && !names.Node.Valid(n) {
			t.Fatalf("NodeName(%q, %q) = %q: not a valid node name", host, id, n)
		}
		if a := sshAddr(host, 22); a != "" && !strings.HasSuffix(a, ":22") {
			t.Fatalf("sshAddr(%q) = %q", host, a)
		}
	})
}

func TestEligibility(t *testing.T) {
	for _, st := range []string{"Pending", "SystemUpdating", "DeepHealthCheckInProgress", "ShuttingDown", "Failure", "NotFound", "", "Rebooting"} {
		if ok, why := eligibility(st, ""); ok || why == "" {
			t.Errorf("%q: eligible=%v reason=%q", st, ok, why)
		}
	}
	if ok, why := eligibility("Running", "ignored"); !ok || why != "" {
		t.Errorf("Running: %v %q", ok, why)
	}
}

func TestJitter(t *testing.T) {
	for _, r := range []float64{0, 0.5, 0.999} {
		d := jittered(time.Minute, 0.2, r)
		if d < 48*time.Second || d > 72*time.Second {
			t.Errorf("jittered(1m, 0.2, %v) = %s", r, d)
		}
	}
}

func TestValidate(t *testing.T) {
	good := DefaultConfig()
	good.Kind, good.Cluster, good.Region, good.InstanceGroups = KindHyperPod, "ml-cluster", "us-west-2", []InstanceGroup{{Name: "login", Pool: DefaultPool}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := DefaultConfig().Validate(); err == nil {
		t.Error("the defaults name no cluster and no instance group, yet are valid")
	}
	arn := "arn:aws:sagemaker:eu-west-1:123456789012:cluster/abcdef012345"
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no kind", func(c *Config) { c.Kind = "" }, "discovery.kind: required"},
		{"no cluster", func(c *Config) { c.Cluster = "" }, "discovery.cluster: required"},
		{"arn region mismatch", func(c *Config) { c.Cluster = arn }, `discovery.region: "us-west-2" differs from the cluster ARN's region "eu-west-1"`},
		{"no groups", func(c *Config) { c.InstanceGroups = nil }, "discovery.instance_groups: required"},
		{"jitter", func(c *Config) { c.Jitter = 1 }, "discovery.jitter"},
		{"port", func(c *Config) { c.SSHPort = 70000 }, "discovery.ssh_port"},
		{"attempts", func(c *Config) { c.MaxAttempts = 0 }, "discovery.max_attempts"},
		{"interval", func(c *Config) { c.RefreshInterval = 0 }, "discovery.refresh_interval: must be at least 1s"},
		{"timeout", func(c *Config) { c.Timeout = 0 }, "discovery.timeout: must be positive"},
		{"region", func(c *Config) { c.Region = "oregon" }, `discovery.region: "oregon" is not an AWS region name`},
		{"group name", func(c *Config) { c.InstanceGroups[0].Name = "login_1" }, `discovery.instance_groups[0].name: "login_1"`},
		{"pool", func(c *Config) { c.InstanceGroups[0].Pool = "" }, `discovery.instance_groups[0].pool: "" is not a valid pool name`},
		{"endpoint", func(c *Config) { c.Endpoint = "ftp://x" }, "discovery.endpoint"},
	} {
		c := good
		c.InstanceGroups = slices.Clone(good.InstanceGroups)
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	c := good
	c.Cluster, c.Region = arn, ""
	if c.Derive(); c.Region != "eu-west-1" || c.Validate() != nil {
		t.Errorf("region from ARN: %q %v", c.Region, c.Validate())
	}
}

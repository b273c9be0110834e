// Package discovery finds the login nodes of a SageMaker HyperPod cluster
// through the SageMaker API, so admins list nothing by hand.
//
// What one refresh does (hyperpod.go):
//  1. ListClusterNodes for the cluster, every page (the SDK paginator). When
//     exactly one instance group is configured its name is sent as
//     InstanceGroupNameContains to shorten the listing; that filter is a
//     substring match ("login" also matches "login-gpu"), so every summary
//     is matched against the configured names exactly, in code.
//  2. DescribeClusterNode only for instance IDs not seen before: the private
//     IP, DNS host name and instance type of an instance never change, so
//     they are cached by instance ID and forgotten when the instance leaves
//     the listing. The status comes from the listing, fresh every refresh.
//  3. Status Running → eligible; every other status (Pending,
//     SystemUpdating, DeepHealthCheckInProgress, ShuttingDown, Failure,
//     NotFound, anything new) → not eligible, with the reason.
//
// A refresh that fails keeps the last good list (and says so in the log
// and in frontdoor_discovery_* metrics). Every gateway refreshes on its
// own, with jitter: a refresh costs ceil(nodes/100) list calls plus one
// describe per new node, so a handful of gateways every minute stays far
// below SageMaker's API rate limits, and no gateway depends on another to
// know its nodes. Throttling and 5xx answers are retried by the SDK's
// standard retryer (exponential backoff with jitter).
package discovery

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// KindHyperPod is the one discovery kind built in.
const KindHyperPod = "hyperpod"

// Config is the `discovery:` section of the gateway configuration.
type Config struct {
	// Kind is the discovery source: "hyperpod", the one built in.
	Kind string `yaml:"kind"`
	// Cluster is the HyperPod cluster's name or ARN.
	Cluster string `yaml:"cluster"`
	// Region is the AWS region of the cluster. Empty: the region of the
	// Cluster ARN, else the SDK's own chain (AWS_REGION, the profile).
	Region string `yaml:"region"`
	// Endpoint overrides the SageMaker API endpoint, like the AWS CLI's
	// --endpoint-url (a VPC interface endpoint; tests).
	Endpoint string `yaml:"endpoint"`
	// InstanceGroups are the login instance groups, matched by exact name,
	// each with the pool its nodes join.
	InstanceGroups []InstanceGroup `yaml:"instance_groups"`
	// RefreshInterval is the time between refreshes; at least 1s.
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	// Jitter spreads refreshes: each wait is RefreshInterval × (1 ± Jitter),
	// so gateways started together do not call the API in step; in [0, 1).
	Jitter float64 `yaml:"jitter"`
	// Timeout bounds one whole refresh, retries included.
	Timeout time.Duration `yaml:"timeout"`
	// MaxAttempts is the SDK retryer's attempts per API call, 1 to 20.
	MaxAttempts int `yaml:"max_attempts"`
	// SSHPort is the login nodes' sshd port.
	SSHPort int `yaml:"ssh_port"`
}

// InstanceGroup is one login instance group of the cluster.
type InstanceGroup struct {
	// Name is the instance group's name, exactly as in the cluster.
	Name string `yaml:"name"`
	// Pool is the node pool its nodes join (policy rules grant pools).
	Pool string `yaml:"pool"`
}

// DefaultPool is the pool of nodes whose instance group names none.
const DefaultPool = "default"

// SetDefaults sets g to an instance group's defaults (yamlconf.Defaulter:
// every instance_groups entry starts from them).
func (g *InstanceGroup) SetDefaults() { *g = InstanceGroup{Pool: DefaultPool} }

// DefaultConfig returns the defaults: a refresh a minute with 20% jitter,
// each bounded by 30s and 5 attempts per call; sshd on port 22.
func DefaultConfig() Config {
	return Config{
		RefreshInterval: 60 * time.Second,
		Jitter:          0.2,
		Timeout:         30 * time.Second,
		MaxAttempts:     5,
		SSHPort:         22,
	}
}

// SetDefaults sets c to DefaultConfig (yamlconf.Defaulter: a discovery
// section the file has starts from it).
func (c *Config) SetDefaults() { *c = DefaultConfig() }

// Derive fills what depends on other keys, after decoding
// (yamlconf.Deriver): an empty Region becomes the Cluster ARN's region.
func (c *Config) Derive() {
	if a, ok := parseClusterARN(c.Cluster); ok && c.Region == "" {
		c.Region = a.region
	}
}

// clusterARNRE is the SageMaker API's pattern for a cluster ARN (not a
// name: names follow names.SageMaker).
var clusterARNRE = regexp.MustCompile(`^arn:aws[a-z\-]*:sagemaker:([a-z0-9\-]*):[0-9]{12}:cluster/[a-z0-9]{12}$`)

type clusterARN struct{ region string }

func parseClusterARN(s string) (clusterARN, bool) {
	m := clusterARNRE.FindStringSubmatch(s)
	if m == nil {
		return clusterARN{}, false
	}
	return clusterARN{region: m[1]}, true
}

// Validate reports a configuration that cannot work, each error as
// "discovery.key: problem" (errors.Join'ed) for the config package to
// locate in the file.
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("discovery.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	switch c.Kind {
	case KindHyperPod:
	case "":
		add("kind", "required (hyperpod)")
	default:
		add("kind", "unknown kind %q (want hyperpod)", c.Kind)
	}
	if c.Cluster == "" {
		add("cluster", "required: the HyperPod cluster's name or ARN")
	} else if _, isARN := parseClusterARN(c.Cluster); !isARN && !names.SageMaker.Valid(c.Cluster) {
		if strings.HasPrefix(c.Cluster, "arn:") {
			add("cluster", "%q is not a SageMaker cluster ARN (arn:aws:sagemaker:REGION:ACCOUNT:cluster/ID)", c.Cluster)
		} else {
			add("cluster", "%q is not a HyperPod cluster name (letters, digits and '-', at most 63)", c.Cluster)
		}
	}
	if c.Region != "" && !names.AWSRegion.Valid(c.Region) {
		add("region", "%q is not an AWS region name (like us-west-2)", c.Region)
	}
	if a, ok := parseClusterARN(c.Cluster); ok && c.Region != "" && a.region != c.Region {
		add("region", "%q differs from the cluster ARN's region %q", c.Region, a.region)
	}
	if c.Endpoint != "" {
		if err := validEndpoint(c.Endpoint); err != nil {
			add("endpoint", "%v", err)
		}
	}
	if len(c.InstanceGroups) == 0 {
		add("instance_groups", "required: the login instance group(s), e.g. [{name: login-group, pool: general}]")
	}
	seen := map[string]bool{}
	for i, g := range c.InstanceGroups {
		key := fmt.Sprintf("instance_groups[%d]", i)
		if !names.SageMaker.Valid(g.Name) {
			add(key+".name", "%q is not an instance group name (letters, digits and '-', at most 63)", g.Name)
		}
		if seen[g.Name] {
			add(key+".name", "duplicate instance group %q", g.Name)
		}
		seen[g.Name] = true
		if !names.Node.Valid(g.Pool) {
			add(key+".pool", "%q is not a valid pool name", g.Pool)
		}
	}
	if c.RefreshInterval < time.Second {
		add("refresh_interval", "must be at least 1s, got %s", c.RefreshInterval)
	}
	if c.Jitter < 0 || c.Jitter >= 1 {
		add("jitter", "must be in [0, 1), got %g", c.Jitter)
	}
	if c.Timeout <= 0 {
		add("timeout", "must be positive")
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 20 {
		add("max_attempts", "must be between 1 and 20")
	}
	if c.SSHPort < 1 || c.SSHPort > 65535 {
		add("ssh_port", "must be a TCP port (1-65535)")
	}
	return errors.Join(errs...)
}

func validEndpoint(s string) error {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || (scheme != "https" && scheme != "http") || rest == "" || strings.ContainsAny(rest, " \t\n") {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

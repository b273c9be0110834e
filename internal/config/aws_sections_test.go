package config

import (
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// A gateway may list no nodes when discovery finds them.
const goodDiscovery = `
gateway:
  name: gw1
  host_keys: [host]
  user_ca_key: user_ca
backend:
  known_hosts: [known_hosts]
directory:
  static: {file: users.yaml}
policy:
  rules:
    - {name: all, groups: ["*"], pools: [general]}
discovery:
  kind: hyperpod
  cluster: ml-cluster
  region: us-west-2
  instance_groups:
    - {name: login-group, pool: general}
    - {name: login-gpu}
`

func TestDiscoverySection(t *testing.T) {
	c, err := Parse("gateway.yaml", []byte(goodDiscovery))
	if err != nil {
		t.Fatal(err)
	}
	d := c.Discovery
	if d == nil || d.RefreshInterval != time.Minute || d.SSHPort != 22 || d.InstanceGroups[1].Pool != "default" {
		t.Errorf("discovery defaults not applied: %+v", d)
	}
	if c, err := Parse("gateway.yaml", []byte(good)); err != nil || c.Discovery != nil {
		t.Errorf("config without discovery: %+v err=%v", c, err)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"kind", "kind: hyperpod", "kind: eks", `gateway.yaml:14: discovery.kind: unknown kind "eks"`},
		{"cluster", "cluster: ml-cluster", "cluster: 'ml cluster'", `gateway.yaml:15: discovery.cluster: "ml cluster" is not a HyperPod cluster name`},
		{"arn", "cluster: ml-cluster", "cluster: arn:aws:sagemaker:us-west-2:12:cluster/x", `gateway.yaml:15: discovery.cluster: "arn:aws:sagemaker:us-west-2:12:cluster/x" is not a SageMaker cluster ARN`},
		{"region", "region: us-west-2", "region: oregon", `gateway.yaml:16: discovery.region: "oregon" is not an AWS region name`},
		{"group", "{name: login-gpu}", "{name: login_gpu}", `gateway.yaml:19: discovery.instance_groups[1].name: "login_gpu" is not an instance group name`},
		{"duplicate group", "{name: login-gpu}", "{name: login-group}", `gateway.yaml:19: discovery.instance_groups[1].name: duplicate instance group "login-group"`},
		{"pool", "pool: general}", "pool: 'gen eral'}", `gateway.yaml:18: discovery.instance_groups[0].pool`},
		{"endpoint", "region: us-west-2", "region: us-west-2\n  endpoint: vpce.example", `gateway.yaml:17: discovery.endpoint: "vpce.example" is not an http(s) URL`},
		{"interval", "region: us-west-2", "region: us-west-2\n  refresh_interval: 10ms", `gateway.yaml:17: discovery.refresh_interval: must be at least 1s`},
		{"typo", "region: us-west-2", "regoin: us-west-2", `gateway.yaml:16: discovery.regoin: unknown key (did you mean "region"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("gateway.yaml", []byte(strings.Replace(goodDiscovery, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

func FuzzParseDiscovery(f *testing.F) {
	f.Add([]byte(goodDiscovery))
	f.Add([]byte(strings.Replace(goodDiscovery, "cluster: ml-cluster", "cluster: arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdef012345", 1)))
	f.Add([]byte("discovery: {kind: hyperpod, instance_groups: [{name: a}], jitter: 2}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil || c.Discovery == nil {
			return
		}
		d := c.Discovery
		if d.Cluster == "" || len(d.InstanceGroups) == 0 || d.RefreshInterval < time.Second || d.Jitter < 0 || d.Jitter >= 1 {
			t.Fatalf("accepted a discovery section that cannot work: %+v", d)
		}
		for _, g := range d.InstanceGroups {
			if !names.Node.Valid(g.Pool) {
				t.Fatalf("accepted pool %q", g.Pool)
			}
		}
	})
}

func TestAuditS3Section(t *testing.T) {
	y := good + `audit:
  file: audit.jsonl
  s3:
    bucket: hpc-audit
    region: us-west-2
    sse: aws:kms
    kms_key_id: alias/frontdoor
    spool_dir: spool
`
	c, err := Parse("/etc/frontdoor/gateway.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Audit.S3
	if s == nil || s.Prefix != "audit" || s.BatchMaxEvents != 1000 || s.SpoolDir != "/etc/frontdoor/spool" || s.SpoolMaxBytes != 1<<30 {
		t.Errorf("audit.s3 defaults/paths: %+v", s)
	}
	if c, _ := Parse("gateway.yaml", []byte(good)); c.Audit.S3 != nil {
		t.Error("audit.s3 enabled without the section")
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"bucket", "bucket: hpc-audit", "bucket: HPC_Audit", `gateway.yaml:21: audit.s3.bucket: "HPC_Audit" is not an S3 bucket name`},
		{"sse", "sse: aws:kms", "sse: des", `gateway.yaml:23: audit.s3.sse: unknown "des"`},
		{"kms without kms", "sse: aws:kms", "sse: AES256", `gateway.yaml:24: audit.s3.kms_key_id: only with sse: aws:kms`},
		{"age", "spool_dir: spool", "spool_dir: spool\n    batch_max_age: 48h", `gateway.yaml:26: audit.s3.batch_max_age: must be between 10ms and 24h`},
		{"cap", "spool_dir: spool", "spool_dir: spool\n    spool_max_bytes: 10", `gateway.yaml:26: audit.s3.spool_max_bytes: must be at least 65536`},
		{"gateway name", "name: gw1", "name: gw_1", `gateway.yaml:3: gateway.name: "gw_1" cannot be part of an audit object key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("gateway.yaml", []byte(strings.Replace(y, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// The user CA in KMS: the section starts from its defaults, the region
// comes from the key ARN, problems are located in the file.
func TestUserCAKMSSection(t *testing.T) {
	const file = `
gateway:
  name: gw1
  host_keys: [host]
  user_ca_kms:
    key_id: arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab
backend:
  known_hosts: [known_hosts]
directory:
  static: {file: users.yaml}
nodes:
  - {name: login1, addr: "10.0.0.1:22", pool: general}
policy:
  rules:
    - {name: all, groups: ["*"], pools: [general]}
`
	c, err := Parse("gateway.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	k := c.Gateway.UserCAKMS
	if k == nil || k.Region != "eu-west-1" || k.Timeout != 2*time.Second || k.MaxAttempts != 3 {
		t.Errorf("user_ca_kms defaults and region not applied: %+v", k)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"both", "  user_ca_kms:", "  user_ca_key: ca\n  user_ca_kms:", "gateway.user_ca_kms: set either"},
		{"timeout", "    key_id:", "    timeout: 1h\n    key_id:", "gateway.yaml:6: gateway.user_ca_kms.timeout: must be between 100ms and 30s"},
		{"key", "key_id: arn:aws:kms:eu-west-1", "key_id: arn:aws:kms:eu west-1", "gateway.yaml:6: gateway.user_ca_kms.key_id"},
		{"typo", "    key_id:", "    keyid:", `gateway.user_ca_kms.keyid: unknown key (did you mean "key_id"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("gateway.yaml", []byte(strings.Replace(file, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

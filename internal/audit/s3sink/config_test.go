package s3sink

import (
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf/yamlconftest"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err == nil || !strings.Contains(err.Error(), "audit.s3.bucket: required") {
		t.Errorf("the defaults name no bucket: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   string // "" when valid
	}{
		{"a bucket is enough", func(c *Config) {}, ""},
		{"bucket", func(c *Config) { c.Bucket = "HPC_Audit" }, `audit.s3.bucket: "HPC_Audit" is not an S3 bucket name`},
		{"bucket dots", func(c *Config) { c.Bucket = "a..b" }, "audit.s3.bucket"},
		{"prefix", func(c *Config) { c.Prefix = "a b" }, "audit.s3.prefix"},
		{"empty prefix", func(c *Config) { c.Prefix = "" }, "audit.s3.prefix"},
		{"region", func(c *Config) { c.Region = "oregon" }, `audit.s3.region: "oregon" is not an AWS region name`},
		{"endpoint", func(c *Config) { c.Endpoint = "s3.example" }, "audit.s3.endpoint"},
		{"sse", func(c *Config) { c.SSE = "des" }, `audit.s3.sse: unknown "des"`},
		{"kms without kms", func(c *Config) { c.SSE, c.KMSKeyID = "AES256", "alias/x" }, "audit.s3.kms_key_id: only with sse: aws:kms"},
		{"kms", func(c *Config) { c.SSE, c.KMSKeyID = "aws:kms", "alias/x" }, ""},
		{"batch events", func(c *Config) { c.BatchMaxEvents = 0 }, "audit.s3.batch_max_events"},
		{"batch age", func(c *Config) { c.BatchMaxAge = 48 * time.Hour }, "audit.s3.batch_max_age: must be between 10ms and 24h"},
		{"spool", func(c *Config) { c.SpoolDir = "" }, "audit.s3.spool_dir: required"},
		{"spool cap", func(c *Config) { c.SpoolMaxBytes = 10 }, "audit.s3.spool_max_bytes: must be at least 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Bucket = "hpc-audit"
			tc.change(&c)
			yamlconftest.Problem(t, c.Validate(), tc.want)
		})
	}
}

func TestConfigDerive(t *testing.T) {
	c := DefaultConfig()
	c.Prefix = "/audit/gw/"
	if c.Derive(); c.Prefix != "audit/gw" {
		t.Errorf("prefix %q", c.Prefix)
	}
}

package s3sink

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Config is the `audit.s3:` section of the gateway configuration.
type Config struct {
	// Bucket receives the audit objects.
	Bucket string `yaml:"bucket"`
	// Prefix is the key prefix: objects are
	// PREFIX/GATEWAY/yyyy/mm/dd/CHAIN-SEQ.jsonl.gz (docs/audit.md), and each
	// gateway's IAM policy should allow it PREFIX/GATEWAY/* only. Leading
	// and trailing '/' are dropped.
	Prefix string `yaml:"prefix"`
	// Region is the bucket's region. Default: the SDK's chain (AWS_REGION,
	// the profile).
	Region string `yaml:"region"`
	// Endpoint overrides the S3 endpoint, like the AWS CLI's --endpoint-url
	// (a VPC interface endpoint, an S3-compatible store, tests).
	Endpoint string `yaml:"endpoint"`
	// PathStyle addresses the bucket in the path (endpoint/bucket/key)
	// instead of the host name; S3-compatible stores often need it.
	PathStyle bool `yaml:"path_style"`
	// SSE is the server-side encryption asked for: "" (the bucket's
	// default), "AES256" (SSE-S3) or "aws:kms" (SSE-KMS, with KMSKeyID).
	SSE string `yaml:"sse"`
	// KMSKeyID is the KMS key (ID, ARN or alias) for sse aws:kms; empty
	// uses the account's aws/s3 key.
	KMSKeyID string `yaml:"kms_key_id"`
	// BatchMaxEvents closes a batch after this many events, 1 to 1000000.
	BatchMaxEvents int `yaml:"batch_max_events"`
	// BatchMaxAge closes a batch this long after its first event, so
	// records reach the bucket within about this time; 10ms to 24h.
	BatchMaxAge time.Duration `yaml:"batch_max_age"`
	// SpoolDir holds batches until they are uploaded, across restarts and
	// crashes; it must be persistent and private to this gateway. The
	// default is the systemd unit's StateDirectory, writable under
	// ProtectSystem=strict.
	SpoolDir string `yaml:"spool_dir"`
	// SpoolMaxBytes caps the spool, in bytes (at least 65536). When it is
	// full, failed authentications already spooled are shed first; then
	// new events are dropped (counted in
	// frontdoor_audit_s3_dropped_events_total by class and logged) until
	// uploads make room; the audit file, if configured, still has them.
	SpoolMaxBytes int64 `yaml:"spool_max_bytes"`
	// SpoolUnauthenticatedMaxBytes is the most of the spool that failed
	// authentications (which any stranger can produce) may take, so that
	// during an S3 outage a flood of them never displaces session and
	// admin records: 4096 bytes to half of spool_max_bytes, or 0 for a
	// quarter of spool_max_bytes.
	SpoolUnauthenticatedMaxBytes int64 `yaml:"spool_unauthenticated_max_bytes"`
}

// unauthenticatedMax is SpoolUnauthenticatedMaxBytes with 0 resolved.
func (c Config) unauthenticatedMax() int64 {
	if c.SpoolUnauthenticatedMaxBytes == 0 {
		return c.SpoolMaxBytes / 4
	}
	return c.SpoolUnauthenticatedMaxBytes
}

// DefaultConfig returns the defaults: objects under audit/, a batch every
// 1000 events or minute, a 1 GiB spool in /var/lib/frontdoor/audit-s3.
func DefaultConfig() Config {
	return Config{
		Prefix:         "audit",
		BatchMaxEvents: 1000,
		BatchMaxAge:    time.Minute,
		SpoolDir:       "/var/lib/frontdoor/audit-s3",
		SpoolMaxBytes:  1 << 30,
	}
}

// SetDefaults sets c to DefaultConfig (yamlconf.Defaulter: an audit.s3
// section the file has starts from it).
func (c *Config) SetDefaults() { *c = DefaultConfig() }

// Derive normalises what the file wrote, after decoding
// (yamlconf.Deriver): Prefix loses leading and trailing '/'.
func (c *Config) Derive() { c.Prefix = strings.Trim(c.Prefix, "/") }

// prefixRE is a key prefix S3 stores and lists without escaping.
var prefixRE = regexp.MustCompile(`^[A-Za-z0-9!_.*'()/-]{1,512}$`)

// Validate reports a configuration that cannot work, each error as
// "audit.s3.key: problem" (errors.Join'ed).
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("audit.s3.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Bucket == "" {
		add("bucket", "required")
	} else if !names.S3Bucket.Valid(c.Bucket) {
		add("bucket", "%q is not an S3 bucket name (%s)", c.Bucket, names.S3Bucket.Syntax)
	}
	if !prefixRE.MatchString(c.Prefix) || strings.Contains(c.Prefix, "//") {
		add("prefix", "%q is not a safe key prefix (letters, digits, '/', '-', '_', '.')", c.Prefix)
	}
	if c.Region != "" && !names.AWSRegion.Valid(c.Region) {
		add("region", "%q is not an AWS region name (like us-west-2)", c.Region)
	}
	if c.Endpoint != "" {
		scheme, rest, ok := strings.Cut(c.Endpoint, "://")
		if !ok || (scheme != "https" && scheme != "http") || rest == "" || strings.ContainsAny(rest, " \t\n") {
			add("endpoint", "%q is not an http(s) URL", c.Endpoint)
		}
	}
	switch c.SSE {
	case "", "AES256":
		if c.KMSKeyID != "" {
			add("kms_key_id", "only with sse: aws:kms")
		}
	case "aws:kms":
	default:
		add("sse", "unknown %q (want AES256 or aws:kms)", c.SSE)
	}
	if c.BatchMaxEvents < 1 || c.BatchMaxEvents > 1_000_000 {
		add("batch_max_events", "must be between 1 and 1000000")
	}
	if c.BatchMaxAge < 10*time.Millisecond || c.BatchMaxAge > 24*time.Hour {
		add("batch_max_age", "must be between 10ms and 24h, got %s", c.BatchMaxAge)
	}
	if c.SpoolDir == "" {
		add("spool_dir", "required")
	}
	if c.SpoolMaxBytes < 64<<10 {
		add("spool_max_bytes", "must be at least 65536")
	}
	if u := c.SpoolUnauthenticatedMaxBytes; u != 0 && (u < 4<<10 || u > c.SpoolMaxBytes/2) {
		add("spool_unauthenticated_max_bytes", "must be 0 (a quarter of spool_max_bytes) or between 4096 and half of spool_max_bytes (%d), got %d", c.SpoolMaxBytes/2, u)
	}
	return errors.Join(errs...)
}

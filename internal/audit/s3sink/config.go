package s3sink

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Config is the `audit.s3:` section of the gateway configuration.
type Config struct {
	// Bucket receives the audit objects.
	Bucket string `yaml:"bucket"`
	// Prefix is the key prefix: objects are
	// PREFIX/GATEWAY/yyyy/mm/dd/CHAIN-SEQ.jsonl.gz (layout.go), and each
	// gateway's IAM policy should allow it PREFIX/GATEWAY/* only. Default
	// "audit".
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
	// BatchMaxEvents closes a batch after this many events. Default 1000.
	BatchMaxEvents int `yaml:"batch_max_events"`
	// BatchMaxAge closes a batch this long after its first event, so
	// records reach the bucket within about this time. Default 1m.
	BatchMaxAge time.Duration `yaml:"batch_max_age"`
	// SpoolDir holds batches until they are uploaded, across restarts and
	// crashes; it must be persistent and private to this gateway.
	// Default /var/lib/frontdoor/audit-s3 (the systemd unit's
	// StateDirectory, writable under ProtectSystem=strict).
	SpoolDir string `yaml:"spool_dir"`
	// SpoolMaxBytes caps the spool. When it is full, failed
	// authentications already spooled are shed first; then new events are
	// dropped (counted in frontdoor_audit_s3_dropped_events_total by class
	// and logged) until uploads make room; the audit file, if configured,
	// still has them. Default 1 GiB.
	SpoolMaxBytes int64 `yaml:"spool_max_bytes"`
	// SpoolUnauthenticatedMaxBytes is the most of the spool that failed
	// authentications (which any stranger can produce) may take, so that
	// during an S3 outage a flood of them never displaces session and
	// admin records. Default a quarter of spool_max_bytes.
	SpoolUnauthenticatedMaxBytes int64 `yaml:"spool_unauthenticated_max_bytes"`
}

// Defaults returns c with every unset field at its default.
func (c Config) Defaults() Config {
	if c.Prefix == "" {
		c.Prefix = "audit"
	}
	c.Prefix = strings.Trim(c.Prefix, "/")
	if c.BatchMaxEvents == 0 {
		c.BatchMaxEvents = 1000
	}
	if c.BatchMaxAge == 0 {
		c.BatchMaxAge = time.Minute
	}
	if c.SpoolDir == "" {
		c.SpoolDir = "/var/lib/frontdoor/audit-s3"
	}
	if c.SpoolMaxBytes == 0 {
		c.SpoolMaxBytes = 1 << 30
	}
	if c.SpoolUnauthenticatedMaxBytes == 0 {
		c.SpoolUnauthenticatedMaxBytes = c.SpoolMaxBytes / 4
	}
	return c
}

var (
	// S3's bucket naming rules (no dots: virtual-host TLS breaks with them
	// anyway, and they are discouraged).
	bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	prefixRE = regexp.MustCompile(`^[A-Za-z0-9!_.*'()/-]{1,512}$`)
	regionRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)
	// gatewayRE is what a gateway name must look like to be part of an
	// object key and a spool file name.
	gatewayRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$`)
)

// ValidGatewayName reports whether name can be part of object keys and
// spool file names.
func ValidGatewayName(name string) bool { return gatewayRE.MatchString(name) }

// Validate reports a configuration that cannot work, each error as
// "audit.s3.key: problem" (errors.Join'ed).
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("audit.s3.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Bucket == "" {
		add("bucket", "required")
	} else if !bucketRE.MatchString(c.Bucket) || strings.Contains(c.Bucket, "..") {
		add("bucket", "%q is not an S3 bucket name (lower-case letters, digits, '-', '.', 3-63)", c.Bucket)
	}
	if !prefixRE.MatchString(c.Prefix) || strings.Contains(c.Prefix, "//") {
		add("prefix", "%q is not a safe key prefix (letters, digits, '/', '-', '_', '.')", c.Prefix)
	}
	if c.Region != "" && !regionRE.MatchString(c.Region) {
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
	if c.SpoolUnauthenticatedMaxBytes < 4<<10 || c.SpoolUnauthenticatedMaxBytes > c.SpoolMaxBytes/2 {
		add("spool_unauthenticated_max_bytes", "must be between 4096 and half of spool_max_bytes (%d), got %d", c.SpoolMaxBytes/2, c.SpoolUnauthenticatedMaxBytes)
	}
	return errors.Join(errs...)
}

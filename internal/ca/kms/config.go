package kms

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Config is the `gateway.user_ca_kms:` section: the gateway's user CA key
// is a KMS key that never leaves AWS KMS.
type Config struct {
	// KeyID is the KMS key that signs: key ID, key ARN, alias name
	// (alias/frontdoor-gw1) or alias ARN. It must be an asymmetric key with
	// KeySpec ECC_NIST_P256 and KeyUsage SIGN_VERIFY, one per gateway. It
	// is resolved once at start (an alias moved later does not change the
	// key in use until a reload).
	KeyID string `yaml:"key_id"`
	// Region is the key's AWS region. Empty: the region of a KeyID ARN,
	// else the SDK's own chain (AWS_REGION, the profile).
	Region string `yaml:"region"`
	// Endpoint overrides the KMS endpoint, like the AWS CLI's
	// --endpoint-url (a VPC interface endpoint; tests).
	Endpoint string `yaml:"endpoint"`
	// Timeout bounds one certificate's signature, retries included: while
	// KMS does not answer, a login waits this long and is then refused
	// with a message to try again. 100ms to 30s.
	Timeout time.Duration `yaml:"timeout"`
	// MaxAttempts is how often one signature is tried within Timeout
	// (throttling, 5xx answers, network errors), 1 to 5.
	MaxAttempts int `yaml:"max_attempts"`
}

// DefaultConfig returns the defaults: a signature waits at most 2s, in up
// to 3 attempts. KMS signs in tens of milliseconds in its region, so the
// bound only matters in an outage, when it is how long a login waits to
// be told so.
func DefaultConfig() Config {
	return Config{Timeout: 2 * time.Second, MaxAttempts: 3}
}

// SetDefaults sets c to DefaultConfig (yamlconf.Defaulter: a
// gateway.user_ca_kms section the file has starts from it).
func (c *Config) SetDefaults() { *c = DefaultConfig() }

// Derive fills what depends on other keys, after decoding
// (yamlconf.Deriver): an empty Region becomes a KeyID ARN's region.
func (c *Config) Derive() {
	if m := keyARNRE.FindStringSubmatch(c.KeyID); m != nil && c.Region == "" {
		c.Region = m[1]
	}
}

// keyARNRE is a KMS key or alias ARN; keyIDRE anything KMS takes as a
// KeyId (an ID, an alias name, an ARN; KMS allows 2048 characters, regexp
// repeats at most 1000, and no key ARN comes near either).
var (
	keyARNRE = regexp.MustCompile(`^arn:aws[a-z\-]*:kms:([a-z0-9\-]+):[0-9]{12}:(key/[A-Za-z0-9\-]+|alias/[A-Za-z0-9/_\-]+)$`)
	keyIDRE  = regexp.MustCompile(`^[A-Za-z0-9:/_\-]{1,1000}$`)
)

// Validate reports a configuration that cannot work, each error as
// "gateway.user_ca_kms.key: problem" (errors.Join'ed).
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("gateway.user_ca_kms.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	switch {
	case c.KeyID == "":
		add("key_id", "required: the KMS key (ID, ARN or alias/NAME) of this gateway's user CA")
	case strings.HasPrefix(c.KeyID, "arn:") && !keyARNRE.MatchString(c.KeyID):
		add("key_id", "%q is not a KMS key or alias ARN (arn:aws:kms:REGION:ACCOUNT:key/ID)", c.KeyID)
	case !keyIDRE.MatchString(c.KeyID):
		add("key_id", "%q is not a KMS key ID, ARN or alias name", c.KeyID)
	}
	if c.Region != "" && !names.AWSRegion.Valid(c.Region) {
		add("region", "%q is not an AWS region name (like us-west-2)", c.Region)
	}
	if m := keyARNRE.FindStringSubmatch(c.KeyID); m != nil && c.Region != "" && m[1] != c.Region {
		add("region", "%q differs from the key ARN's region %q", c.Region, m[1])
	}
	if c.Endpoint != "" {
		if scheme, rest, ok := strings.Cut(c.Endpoint, "://"); !ok || (scheme != "https" && scheme != "http") || rest == "" {
			add("endpoint", "%q is not an http(s) URL", c.Endpoint)
		}
	}
	if c.Timeout < 100*time.Millisecond || c.Timeout > 30*time.Second {
		add("timeout", "must be between 100ms and 30s, got %s", c.Timeout)
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 5 {
		add("max_attempts", "must be between 1 and 5")
	}
	return errors.Join(errs...)
}

package kms_test

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient/awsjsontest"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/ca/kms"
	"github.com/frontdoor-hpc/frontdoor/internal/ca/kms/kmstest"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf/yamlconftest"
)

// TestMain gives the SDK's credential chain the fake's keys and nothing
// else to find.
func TestMain(m *testing.M) {
	awsjsontest.Setenv(func(k, v string) { os.Setenv(k, v) })
	os.Exit(m.Run())
}

const region = "eu-west-1"

func config(fake *kmstest.Server, keyID string) kms.Config {
	c := kms.DefaultConfig()
	c.KeyID, c.Region, c.Endpoint = keyID, region, fake.URL
	c.Timeout = 500 * time.Millisecond
	return c
}

func open(t *testing.T, c kms.Config) *kms.Key {
	t.Helper()
	k, err := kms.Open(t.Context(), c, kms.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

// mint signs one login's certificate with k.
func mint(ctx context.Context, k ca.Authority) (*ssh.Certificate, error) {
	c := ca.New(k, ca.Options{Gateway: "gw1", Validity: time.Minute})
	s, err := c.Sign(ctx, ca.Login{Principal: "alice", User: "alice", Session: "s1", Source: testSource})
	if err != nil {
		return nil, err
	}
	return s.PublicKey().(*ssh.Certificate), nil
}

// A certificate signed through KMS (by alias, resolved to the key's ARN)
// is an ecdsa-sha2-nistp256 signature by the key's public key that
// x/crypto's certificate check accepts; the fake saw only well-formed,
// SigV4-signed DIGEST requests.
func TestSignCertificate(t *testing.T) {
	fake := kmstest.Start(t, region)
	k := open(t, config(fake, fake.Alias))
	if k.KeyID() != fake.ARN {
		t.Errorf("key %q, want the ARN %q", k.KeyID(), fake.ARN)
	}
	if !bytes.Equal(k.PublicKey().Marshal(), fake.PublicKey().Marshal()) || k.PublicKey().Type() != ssh.KeyAlgoECDSA256 {
		t.Fatalf("public key %s, want the fake's P-256 key", k.PublicKey().Type())
	}
	cert, err := mint(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Signature.Format != ssh.KeyAlgoECDSA256 {
		t.Errorf("signature format %s", cert.Signature.Format)
	}
	checker := ssh.CertChecker{IsUserAuthority: func(a ssh.PublicKey) bool { return bytes.Equal(a.Marshal(), fake.PublicKey().Marshal()) },
		SupportedCriticalOptions: []string{"source-address"}}
	if err := checker.CheckCert("alice", cert); err != nil {
		t.Errorf("CheckCert: %v", err)
	}
	if got := fake.Calls("GetPublicKey"); got != 1 {
		t.Errorf("GetPublicKey called %d times, want once (at Open)", got)
	}
	if got := fake.Calls("Sign"); got != 1 {
		t.Errorf("Sign called %d times", got)
	}
}

// Open refuses what cannot sign SSH certificates, and says why.
func TestOpenRefuses(t *testing.T) {
	fake := kmstest.Start(t, region)
	for _, tt := range []struct {
		name  string
		setup func()
		keyID string
		want  string
	}{
		{"unknown key", func() {}, "alias/nope", "NotFoundException"},
		{"rsa", func() { fake.SetKeySpec("RSA_2048") }, fake.KeyID, "key spec RSA_2048: want ECC_NIST_P256"},
		{"secp256k1", func() { fake.SetKeySpec("ECC_SECG_P256K1") }, fake.KeyID, "want ECC_NIST_P256"},
		{"disabled", func() { fake.Disable(true) }, fake.KeyID, "DisabledException"},
		{"outage", func() { fake.Fail(true) }, fake.KeyID, "KMSInternalException"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			defer func() { fake.SetKeySpec("ECC_NIST_P256"); fake.Disable(false); fake.Fail(false) }()
			_, err := kms.Open(t.Context(), config(fake, tt.keyID), kms.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open: %v, want %q", err, tt.want)
			}
		})
	}
}

// One signature is bounded in time and attempts: a hung KMS fails within
// the timeout, an outage after max_attempts tries, a throttled call is
// retried, a disabled key and a bad signature fail at once; each failure
// is ca.ErrUnavailable for the login.
func TestSignBounded(t *testing.T) {
	fake := kmstest.Start(t, region)
	k := open(t, config(fake, fake.ARN)) // timeout 500ms, 3 attempts
	for _, tt := range []struct {
		name   string
		setup  func()
		ok     bool
		calls  int
		within time.Duration
		want   string
	}{
		{"healthy", func() {}, true, 1, 500 * time.Millisecond, ""},
		{"throttled once", func() { fake.Throttle(1) }, true, 2, 500 * time.Millisecond, ""},
		{"hung", func() { fake.SetDelay(time.Minute) }, false, 1, 500*time.Millisecond + 300*time.Millisecond, "deadline exceeded"},
		{"outage", func() { fake.Fail(true) }, false, 3, 500*time.Millisecond + 300*time.Millisecond, "KMSInternalException"},
		{"disabled", func() { fake.Disable(true) }, false, 1, 500 * time.Millisecond, "DisabledException"},
		{"bad signature", func() { fake.BadSignatures(true) }, false, 1, 500 * time.Millisecond, kms.ErrBadSignature.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			defer func() {
				fake.SetDelay(0)
				fake.Fail(false)
				fake.Disable(false)
				fake.BadSignatures(false)
				fake.Throttle(0)
			}()
			before := fake.Calls("Sign")
			start := time.Now()
			_, err := mint(t.Context(), k)
			took := time.Since(start)
			if took > tt.within {
				t.Errorf("took %v, want at most %v", took, tt.within)
			}
			if got := fake.Calls("Sign") - before; got != tt.calls {
				t.Errorf("%d Sign calls, want %d", got, tt.calls)
			}
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ca.ErrUnavailable) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "kms key") {
				t.Errorf("err = %v, want ca.ErrUnavailable with %q", err, tt.want)
			}
		})
	}
}

// The login's own context ends a signature too (the client went away).
func TestSignFollowsTheLogin(t *testing.T) {
	fake := kmstest.Start(t, region)
	c := config(fake, fake.ARN)
	c.Timeout = 10 * time.Second
	k := open(t, c)
	fake.SetDelay(time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := mint(ctx, k); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v after the login's context ended", took)
	}
}

// Latency of one certificate through KMS (the fake on loopback: the
// protocol and SDK cost, not AWS's) next to a key file, logged for the
// report; see also the frontdoor_user_ca_sign_seconds histogram.
func TestSignLatency(t *testing.T) {
	fake := kmstest.Start(t, region)
	k := open(t, config(fake, fake.ARN))
	file := fileAuthority(t)
	for _, a := range []ca.Authority{file, k} {
		var ds []time.Duration
		for range 200 {
			start := time.Now()
			if _, err := mint(t.Context(), a); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		t.Logf("%s key: certificate minted in p50 %v, p95 %v, max %v (200 logins)", a.Kind(),
			ds[len(ds)/2].Round(time.Microsecond), ds[len(ds)*95/100].Round(time.Microsecond), ds[len(ds)-1].Round(time.Microsecond))
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*kms.Config)
		want string
	}{
		{"id", func(c *kms.Config) {}, ""},
		{"alias", func(c *kms.Config) { c.KeyID = "alias/frontdoor-gw1" }, ""},
		{"arn", func(c *kms.Config) { c.KeyID = "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab" }, ""},
		{"alias arn", func(c *kms.Config) { c.KeyID = "arn:aws:kms:us-west-2:123456789012:alias/fd" }, ""},
		{"missing", func(c *kms.Config) { c.KeyID = "" }, "gateway.user_ca_kms.key_id: required"},
		{"bad arn", func(c *kms.Config) { c.KeyID = "arn:aws:s3:::bucket" }, "gateway.user_ca_kms.key_id: \"arn:aws:s3:::bucket\" is not a KMS key"},
		{"spaces", func(c *kms.Config) { c.KeyID = "my key" }, "gateway.user_ca_kms.key_id"},
		{"region", func(c *kms.Config) { c.Region = "Mars" }, "gateway.user_ca_kms.region"},
		{"region vs arn", func(c *kms.Config) {
			c.KeyID, c.Region = "arn:aws:kms:us-west-2:123456789012:key/1234", "eu-west-1"
		}, `"eu-west-1" differs from the key ARN's region "us-west-2"`},
		{"endpoint", func(c *kms.Config) { c.Endpoint = "kms.local" }, "gateway.user_ca_kms.endpoint"},
		{"timeout", func(c *kms.Config) { c.Timeout = time.Millisecond }, "gateway.user_ca_kms.timeout"},
		{"long timeout", func(c *kms.Config) { c.Timeout = time.Minute }, "gateway.user_ca_kms.timeout"},
		{"attempts", func(c *kms.Config) { c.MaxAttempts = 0 }, "gateway.user_ca_kms.max_attempts"},
		{"many attempts", func(c *kms.Config) { c.MaxAttempts = 6 }, "gateway.user_ca_kms.max_attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kms.DefaultConfig()
			c.KeyID = "1234abcd-12ab-34cd-56ef-1234567890ab"
			tc.edit(&c)
			yamlconftest.Problem(t, c.Validate(), tc.want)
		})
	}
	c := kms.DefaultConfig()
	c.KeyID = "arn:aws:kms:ap-southeast-2:123456789012:key/1234"
	c.Derive()
	if c.Region != "ap-southeast-2" {
		t.Errorf("region from the ARN: %q", c.Region)
	}
}

// testSource is the address the certificates are for.
var testSource = netip.MustParseAddr("10.0.0.10")

// fileAuthority is a CA key in a file, for comparison.
func fileAuthority(t *testing.T) ca.Authority {
	t.Helper()
	path := filepath.Join(t.TempDir(), "user_ca")
	if _, err := ca.GenerateKeyFile(path, ""); err != nil {
		t.Fatal(err)
	}
	s, err := ca.LoadSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	return ca.Local(s)
}

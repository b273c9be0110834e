package ad

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf"
)

func bindErr(sub string) error {
	return &ldap.Error{ResultCode: ldap.LDAPResultInvalidCredentials,
		Err: errors.New("80090308: LdapErr: DSID-0C09041C, comment: AcceptSecurityContext error, data " + sub + ", v4563")}
}

func TestClassifyBind(t *testing.T) {
	tests := []struct {
		err    error
		kind   error
		reason string
		retry  bool
	}{
		{bindErr("525"), directory.ErrNoSuchUser, "ad: 525 user not found", false},
		{bindErr("52e"), directory.ErrBadPassword, "ad: 52e invalid credentials", false},
		{bindErr("52E"), directory.ErrBadPassword, "ad: 52e invalid credentials", false},
		{bindErr("530"), directory.ErrAccountDisabled, "ad: 530 logon not permitted at this time", false},
		{bindErr("531"), directory.ErrAccountDisabled, "ad: 531 logon not permitted from this workstation", false},
		{bindErr("532"), directory.ErrAccountDisabled, "ad: 532 password expired", false},
		{bindErr("533"), directory.ErrAccountDisabled, "ad: 533 account disabled", false},
		{bindErr("701"), directory.ErrAccountDisabled, "ad: 701 account expired", false},
		{bindErr("773"), directory.ErrAccountDisabled, "ad: 773 password must be changed", false},
		{bindErr("775"), directory.ErrAccountDisabled, "ad: 775 account locked out", false},
		{bindErr("0000052e"), directory.ErrBadPassword, "ad: 52e invalid credentials", false},
		{bindErr("999"), directory.ErrBadPassword, "ad: invalid credentials (sub-code 999)", false},
		{&ldap.Error{ResultCode: ldap.LDAPResultInvalidCredentials, Err: errors.New("no data here")}, directory.ErrBadPassword, "ad: invalid credentials", false},
		{&ldap.Error{ResultCode: ldap.ErrorNetwork, Err: errors.New("ldap: connection timed out")}, directory.ErrUnavailable, "ad: bind: DC unreachable", true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, directory.ErrUnavailable, "ad: bind: DC unreachable", true},
		{&ldap.Error{ResultCode: ldap.LDAPResultStrongAuthRequired, Err: errors.New("strong auth")}, directory.ErrUnavailable, "ad: DC requires TLS for simple binds", false},
		{&ldap.Error{ResultCode: ldap.LDAPResultBusy, Err: errors.New("busy")}, directory.ErrUnavailable, "ad: bind: DC unreachable", true},
		{&ldap.Error{ResultCode: ldap.LDAPResultUnwillingToPerform, Err: errors.New("no")}, directory.ErrUnavailable, "ad: DC unwilling to perform", true},
	}
	for _, tc := range tests {
		de, retry := classifyBind(tc.err)
		if !errors.Is(de, tc.kind) || de.Reason != tc.reason || retry != tc.retry {
			t.Errorf("classifyBind(%v) = %v (%q), retry %v; want %v %q %v", tc.err, de.Kind, de.Reason, retry, tc.kind, tc.reason, tc.retry)
		}
		// The reason reaches the audit log through directory.Reason.
		if got := directory.Reason(de); got != tc.reason {
			t.Errorf("Reason = %q", got)
		}
	}
}

func TestFileTime(t *testing.T) {
	if !fileTimeToTime(0).IsZero() || !fileTimeToTime(math.MaxInt64).IsZero() {
		t.Error("never-expiring values must give the zero time")
	}
	want := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ft := want.UnixNano()/100 + 116444736000000000
	if got := fileTimeToTime(ft); !got.Equal(want) {
		t.Errorf("fileTimeToTime = %v, want %v", got, want)
	}
}

func TestAccountState(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ft := func(t time.Time) string { return strconv.FormatInt(t.UnixNano()/100+116444736000000000, 10) }
	entry := func(uac, computed, expires string) *ldap.Entry {
		return ldap.NewEntry("CN=x", map[string][]string{
			"userAccountControl": {uac}, "msDS-User-Account-Control-Computed": {computed}, "accountExpires": {expires}})
	}
	tests := []struct {
		e      *ldap.Entry
		reason string
	}{
		{entry("512", "0", "9223372036854775807"), ""},
		{entry("512", "0", "0"), ""},
		{entry("514", "0", "0"), "ad: account disabled"},
		{entry("512", "16", "0"), "ad: account locked out"},
		{entry("512", "8388608", "0"), "ad: password expired or must be changed"},
		{entry("512", "0", ft(now.Add(-time.Second))), "ad: account expired"},
		{entry("512", "0", ft(now.Add(time.Hour))), ""},
	}
	for i, tc := range tests {
		err := accountState(tc.e, now)
		if got := directory.Reason(err); got != tc.reason {
			t.Errorf("%d: reason %q, want %q", i, got, tc.reason)
		}
		if err != nil && !errors.Is(err, directory.ErrAccountDisabled) {
			t.Errorf("%d: %v is not ErrAccountDisabled", i, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.URLs, good.BaseDN, good.BindDN = []string{"ldaps://dc1.example.edu"}, "DC=hpc,DC=example,DC=edu", "svc@hpc.example.edu"
	good.BindPassword, good.CAFile, good.Domain = "x", "/ca.pem", "HPC"
	good.Derive()
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	if d := good; len(d.UPNSuffixes) != 1 || d.UPNSuffixes[0] != "hpc.example.edu" || d.Timeout != 5*time.Second || d.OfflineMaxAge != 24*time.Hour ||
		d.WatchInterval != 2*time.Second || d.WatchMaxChanges != 1000 {
		t.Errorf("defaults: %+v", d)
	}
	if err := DefaultConfig().Validate(); err == nil {
		t.Error("the defaults name no domain controller, yet are valid")
	}
	tests := []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.URLs = nil }, "directory.ad.urls: at least one"},
		{func(c *Config) { c.URLs = []string{"ldap://dc1"} }, "directory.ad.urls[0]: \"ldap://dc1\" is plain LDAP: set start_tls"},
		{func(c *Config) { c.URLs = []string{"http://dc1"} }, "directory.ad.urls[0]: \"http://dc1\": scheme"},
		{func(c *Config) { c.BaseDN = "" }, "directory.ad.base_dn: required"},
		{func(c *Config) { c.BindDN = "" }, "directory.ad.bind_dn: required"},
		{func(c *Config) { c.BindPassword = "" }, "directory.ad.bind_password_file: bind_password_file (or bind_password) is required"},
		{func(c *Config) { c.CAFile = "" }, "directory.ad.ca_file: required"},
		{func(c *Config) { c.BindPasswordFile = "/f" }, "directory.ad.bind_password: bind_password and bind_password_file are exclusive"},
		{func(c *Config) { c.KeyAttribute = "mail" }, "directory.ad.key_attribute"},
		{func(c *Config) { c.Timeout = 30 * time.Second }, "directory.ad.timeout"},
		{func(c *Config) { c.Timeout = 0 }, "directory.ad.timeout"},
		{func(c *Config) { c.PoolSize = 0 }, "directory.ad.pool_size"},
		{func(c *Config) { c.Domain = "HPC\\X" }, "directory.ad.domain"},
		{func(c *Config) { c.UPNSuffixes = []string{"a b"} }, "directory.ad.upn_suffixes[0]"},
		{func(c *Config) { c.OfflineMaxAge = time.Second }, "directory.ad.offline_max_age"},
		{func(c *Config) { c.CacheTTL = -time.Second }, "directory.ad.cache_ttl: must not be negative"},
		{func(c *Config) { c.RetryMax = time.Second }, "directory.ad.retry_min: need 0 < retry_min <= retry_max"},
		{func(c *Config) { c.MaxCacheEntries = 0 }, "directory.ad.max_cache_entries"},
		{func(c *Config) { c.WatchInterval = time.Millisecond }, "directory.ad.watch_interval"},
		{func(c *Config) { c.WatchInterval = -time.Second }, "directory.ad.watch_interval"},
		{func(c *Config) { c.WatchMaxChanges = -1 }, "directory.ad.watch_max_changes"},
	}
	for _, tc := range tests {
		c := good
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want error mentioning %q, got %v", tc.want, err)
		}
	}
	c := good
	c.URLs = []string{"ldap://dc1"}
	c.StartTLS = true
	if err := c.Validate(); err != nil {
		t.Errorf("starttls config: %v", err)
	}
}

// FuzzParseKeys: a key attribute value yields at most one key, and only a
// key that is in it, without authorized_keys options (frontdoor cannot
// enforce them), in sshPublicKey or behind "SSHKey:" in
// altSecurityIdentities (X509:, Kerberos: and other mappings are not
// keys); what it yields marshals and parses back to itself. Seeds:
// testdata/fuzz/FuzzParseKeys (the suite's Samba DC's values among them).
func FuzzParseKeys(f *testing.F) {
	f.Add("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a")
	f.Add("SSHKey:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a")
	f.Add(`from="10.0.0.1" ssh-rsa AAAA`)
	f.Add("X509:<I>CN=x")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, v string) {
		for _, attr := range []string{KeySSHPublicKey, KeyAltSecurityIdentities} {
			keys := parseKeys(ldap.NewEntry("CN=x", map[string][]string{attr: {v}}), attr, log)
			if len(keys) > 1 {
				t.Fatalf("%s %q: %d keys from one value", attr, v, len(keys))
			}
			if len(keys) == 0 {
				continue
			}
			k := keys[0]
			line := v
			if attr == KeyAltSecurityIdentities {
				if len(v) < 7 || !strings.EqualFold(v[:7], "SSHKey:") {
					t.Fatalf("altSecurityIdentities %q is not an SSHKey: mapping, yet gave a key", v)
				}
				line = v[7:]
			}
			want, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(line))
			if err != nil || len(opts) > 0 {
				t.Fatalf("%s %q gave a key, but as authorized_keys it is %v, options %q", attr, v, err, opts)
			}
			if !bytes.Equal(k.Marshal(), want.Marshal()) {
				t.Fatalf("%s %q: key %s, the value holds %s", attr, v, ssh.FingerprintSHA256(k), ssh.FingerprintSHA256(want))
			}
			back, err := ssh.ParsePublicKey(k.Marshal())
			if err != nil || !bytes.Equal(back.Marshal(), k.Marshal()) {
				t.Fatalf("%s %q: key does not parse back: %v", attr, v, err)
			}
		}
	})
}

func TestConfigYAML(t *testing.T) {
	src := `
urls: [ldaps://dc1.hpc.example.edu, ldaps://dc2.hpc.example.edu:636]
base_dn: DC=hpc,DC=example,DC=edu
bind_dn: svc-frontdoor@hpc.example.edu
bind_password_file: /etc/frontdoor/ad-bind-password
ca_file: /etc/frontdoor/ad-ca.pem
domain: HPC
upn_suffixes: [hpc.example.edu]
key_attribute: altSecurityIdentities
timeout: 3s
cache_ttl: 2m
offline_max_age: 24h
cache_passwords: true
password_cache_max_age: 8h
watch_interval: 500ms
watch_max_changes: 200
`
	cfg := DefaultConfig()
	if _, err := yamlconf.Decode("ad.yaml", []byte(src), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Timeout != 3*time.Second || cfg.CacheTTL != 2*time.Minute || cfg.PasswordCacheMaxAge != 8*time.Hour ||
		!cfg.CachePasswords || len(cfg.URLs) != 2 || cfg.KeyAttribute != KeyAltSecurityIdentities || cfg.PoolSize != 4 ||
		cfg.WatchInterval != 500*time.Millisecond || cfg.WatchMaxChanges != 200 {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestPrimaryGroupSID(t *testing.T) {
	// S-1-5-21-1-2-3-1105
	user := []byte{1, 5, 0, 0, 0, 0, 0, 5, 21, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0x51, 0x04, 0, 0}
	got := primaryGroupSID(user, "513")
	want := []byte{1, 5, 0, 0, 0, 0, 0, 5, 21, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0x01, 0x02, 0, 0}
	if string(got) != string(want) {
		t.Errorf("got % x", got)
	}
	if user[24] != 0x51 {
		t.Error("user SID modified")
	}
	for _, bad := range [][]byte{nil, user[:10], append(slices.Clone(user), 0)} {
		if primaryGroupSID(bad, "513") != nil {
			t.Errorf("accepted % x", bad)
		}
	}
	if primaryGroupSID(user, "x") != nil || primaryGroupSID(user, "") != nil {
		t.Error("accepted bad primaryGroupID")
	}
	if e := escapeBytes([]byte{0, '*', 0xff}); e != `\00\2a\ff` {
		t.Errorf("escapeBytes = %q", e)
	}
}

func TestNegCache(t *testing.T) {
	negativeTTL := DefaultConfig().NegativeCacheTTL
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newNegCache(2, negativeTTL)
	a, b, x := Name{Account: "a"}, Name{Account: "b"}, Name{Account: "x", UPN: "x@y"}
	c.add(a, now)
	if !c.has(a, now.Add(negativeTTL-time.Second)) || c.has(b, now) {
		t.Fatal("negative entry not kept, or invented")
	}
	if c.has(a, now.Add(negativeTTL)) {
		t.Fatal("negative entry outlived negativeTTL: a new account would stay unknown")
	}
	c.add(a, now)
	c.add(b, now)
	c.add(x, now)
	if len(c.names) > 2 || !c.has(x, now) {
		t.Fatalf("bound not kept: %v", c.names)
	}
}

package ad

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"
)

// Key attributes frontdoor can read SSH keys from.
const (
	// KeySSHPublicKey is the OpenSSH-LPK schema attribute; each value is an
	// authorized_keys line.
	KeySSHPublicKey = "sshPublicKey"
	// KeyAltSecurityIdentities is AD's built-in multi-valued attribute; only
	// values starting with "SSHKey:" are keys (AWS HyperPod AD guide).
	KeyAltSecurityIdentities = "altSecurityIdentities"
)

// Config configures the Active Directory identity source. Durations are Go
// durations in YAML ("5s", "24h").
type Config struct {
	// URLs of the domain controllers, tried in order with failover:
	// ldaps://dc1.example.edu:636 or ldap://dc1.example.edu (then StartTLS
	// unless InsecureNoTLS).
	URLs []string `yaml:"urls"`
	// BaseDN under which users and groups are searched, e.g.
	// DC=hpc,DC=example,DC=edu.
	BaseDN string `yaml:"base_dn"`
	// BindDN of the service account that searches (a DN or a UPN).
	BindDN string `yaml:"bind_dn"`
	// BindPassword of the service account; prefer BindPasswordFile.
	BindPassword string `yaml:"bind_password"`
	// BindPasswordFile holds the service password (trailing newline ignored).
	BindPasswordFile string `yaml:"bind_password_file"`
	// CAFile is the PEM bundle the DC certificates are verified against.
	// Required unless InsecureNoTLS.
	CAFile string `yaml:"ca_file"`
	// TLSServerName overrides the name the DC certificate must carry
	// (default: the host of each URL).
	TLSServerName string `yaml:"tls_server_name"`
	// StartTLS upgrades ldap:// URLs with StartTLS (ldaps:// URLs are TLS
	// from the first byte). ldap:// URLs without StartTLS need InsecureNoTLS.
	StartTLS bool `yaml:"start_tls"`
	// InsecureNoTLS allows plain LDAP: passwords cross the network in clear.
	// For lab use only; AD refuses simple binds without TLS by default.
	InsecureNoTLS bool `yaml:"insecure_no_tls"`
	// Domain is the NetBIOS domain users may prefix: HPC\alice.
	Domain string `yaml:"domain"`
	// UPNSuffixes users may append: alice@hpc.example.edu. Default: the DNS
	// domain derived from BaseDN.
	UPNSuffixes []string `yaml:"upn_suffixes"`
	// KeyAttribute is where SSH public keys live: sshPublicKey (default) or
	// altSecurityIdentities.
	KeyAttribute string `yaml:"key_attribute"`
	// Timeout bounds each DC connection attempt and each request (default
	// 5s). A dead or hanging DC costs at most this before the next is tried.
	Timeout time.Duration `yaml:"timeout"`
	// PoolSize is the number of pooled service-account connections (default 4).
	PoolSize int `yaml:"pool_size"`
	// IdleCheck: a pooled connection idle longer than this is health-checked
	// before use (default 30s).
	IdleCheck time.Duration `yaml:"idle_check"`
	// CacheTTL is how long a looked-up identity is served without asking AD
	// again (default 5m).
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// NegativeCacheTTL is how long a name AD does not know stays unknown
	// without asking again (default 30s): short, so an account created a
	// moment ago can log in almost at once. That it differs from CacheTTL
	// cannot be seen from outside: the gateway answers every refusal
	// before proof at a fixed time, whether the answer came from the cache
	// or from AD.
	NegativeCacheTTL time.Duration `yaml:"negative_cache_ttl"`
	// OfflineMaxAge is how long, while every DC is unreachable, a cached
	// identity still allows public-key logins (default 24h, like SSSD's
	// offline_credentials_expiration-free key logins).
	OfflineMaxAge time.Duration `yaml:"offline_max_age"`
	// CachePasswords keeps a salted argon2id hash of each successfully
	// verified password so password logins work offline. Off by default.
	CachePasswords bool `yaml:"cache_passwords"`
	// PasswordCacheMaxAge limits how old a cached password hash may be
	// (default 12h).
	PasswordCacheMaxAge time.Duration `yaml:"password_cache_max_age"`
	// RetryMin and RetryMax bound the exponential backoff of the background
	// reconnection attempts while offline (default 2s and 1m). A login that
	// arrives while offline asks for an attempt at once, so logins resume
	// within seconds of a DC's return; RetryMin is also the least time
	// between two attempts, however many logins ask.
	RetryMin time.Duration `yaml:"retry_min"`
	RetryMax time.Duration `yaml:"retry_max"`
	// DCDownFor: a DC that failed is skipped for this long while another
	// answers (default 30s).
	DCDownFor time.Duration `yaml:"dc_down_for"`
	// MaxCacheEntries bounds the identity cache (default 100000).
	MaxCacheEntries int `yaml:"max_cache_entries"`
}

// MaxTimeout is the upper bound on Timeout: a dead or hanging DC must cost
// a login no more than 5 s before the next DC is tried.
const MaxTimeout = 5 * time.Second

// Defaults returns cfg with zero fields set to their defaults.
func (cfg Config) Defaults() Config {
	if cfg.KeyAttribute == "" {
		cfg.KeyAttribute = KeySSHPublicKey
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = MaxTimeout
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = 4
	}
	if cfg.IdleCheck == 0 {
		cfg.IdleCheck = 30 * time.Second
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 5 * time.Minute
	}
	if cfg.NegativeCacheTTL == 0 {
		cfg.NegativeCacheTTL = 30 * time.Second
	}
	if cfg.OfflineMaxAge == 0 {
		cfg.OfflineMaxAge = 24 * time.Hour
	}
	if cfg.PasswordCacheMaxAge == 0 {
		cfg.PasswordCacheMaxAge = 12 * time.Hour
	}
	if cfg.RetryMin == 0 {
		cfg.RetryMin = 2 * time.Second
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = time.Minute
	}
	if cfg.DCDownFor == 0 {
		cfg.DCDownFor = 30 * time.Second
	}
	if cfg.MaxCacheEntries == 0 {
		cfg.MaxCacheEntries = 100000
	}
	if len(cfg.UPNSuffixes) == 0 && cfg.BaseDN != "" {
		if s := dnToDomain(cfg.BaseDN); s != "" {
			cfg.UPNSuffixes = []string{s}
		}
	}
	return cfg
}

// Problem is one validation problem; Key is the YAML key it concerns
// ("urls[1]", "ca_file"), so a caller can point at the line.
type Problem struct {
	Key string
	Msg string
}

func (p Problem) Error() string { return p.Key + ": " + p.Msg }

// Validate reports every problem of a defaulted config at once (each a
// Problem, joined).
func (cfg Config) Validate() error {
	var errs []error
	for _, p := range cfg.Problems() {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}

// Problems lists what is wrong with a defaulted config.
func (cfg Config) Problems() []Problem {
	var ps []Problem
	bad := func(key, format string, args ...any) { ps = append(ps, Problem{key, fmt.Sprintf(format, args...)}) }
	if len(cfg.URLs) == 0 {
		bad("urls", "at least one domain controller URL is required")
	}
	for i, raw := range cfg.URLs {
		key := fmt.Sprintf("urls[%d]", i)
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			bad(key, "%q is not a URL", raw)
			continue
		}
		switch u.Scheme {
		case "ldaps":
		case "ldap":
			if !cfg.StartTLS && !cfg.InsecureNoTLS {
				bad(key, "%q is plain LDAP: set start_tls (or insecure_no_tls for a lab)", raw)
			}
		default:
			bad(key, "%q: scheme must be ldaps or ldap", raw)
		}
	}
	if cfg.BaseDN == "" {
		bad("base_dn", "required")
	}
	if cfg.BindDN == "" {
		bad("bind_dn", "required (the service account that searches)")
	}
	if cfg.BindPassword != "" && cfg.BindPasswordFile != "" {
		bad("bind_password", "bind_password and bind_password_file are exclusive")
	}
	if cfg.BindPassword == "" && cfg.BindPasswordFile == "" {
		bad("bind_password_file", "bind_password_file (or bind_password) is required")
	}
	if cfg.CAFile == "" && !cfg.InsecureNoTLS {
		bad("ca_file", "required: the DC certificate is always verified")
	}
	if cfg.Domain != "" && !validNamePart(cfg.Domain, 15) {
		bad("domain", "%q is not a NetBIOS domain name", cfg.Domain)
	}
	for i, s := range cfg.UPNSuffixes {
		if s == "" || strings.ContainsAny(s, "@\\ ") {
			bad(fmt.Sprintf("upn_suffixes[%d]", i), "%q is not a DNS domain", s)
		}
	}
	if cfg.KeyAttribute != KeySSHPublicKey && cfg.KeyAttribute != KeyAltSecurityIdentities {
		bad("key_attribute", "%q: must be %s or %s", cfg.KeyAttribute, KeySSHPublicKey, KeyAltSecurityIdentities)
	}
	if cfg.Timeout <= 0 || cfg.Timeout > MaxTimeout {
		bad("timeout", "%v: must be in (0, %v]", cfg.Timeout, MaxTimeout)
	}
	if cfg.PoolSize < 1 || cfg.PoolSize > 64 {
		bad("pool_size", "%d: must be 1..64", cfg.PoolSize)
	}
	for key, d := range map[string]time.Duration{"cache_ttl": cfg.CacheTTL, "negative_cache_ttl": cfg.NegativeCacheTTL, "offline_max_age": cfg.OfflineMaxAge,
		"password_cache_max_age": cfg.PasswordCacheMaxAge, "idle_check": cfg.IdleCheck, "dc_down_for": cfg.DCDownFor} {
		if d < 0 {
			bad(key, "must not be negative")
		}
	}
	if cfg.OfflineMaxAge < cfg.CacheTTL {
		bad("offline_max_age", "(%v) must be at least cache_ttl (%v)", cfg.OfflineMaxAge, cfg.CacheTTL)
	}
	if cfg.RetryMin <= 0 || cfg.RetryMax < cfg.RetryMin {
		bad("retry_min", "need 0 < retry_min <= retry_max")
	}
	if cfg.MaxCacheEntries < 1 {
		bad("max_cache_entries", "must be positive")
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Key < ps[j].Key })
	return ps
}

// bindPassword returns the service account password.
func (cfg Config) bindPassword() (string, error) {
	if cfg.BindPasswordFile == "" {
		return cfg.BindPassword, nil
	}
	b, err := os.ReadFile(cfg.BindPasswordFile)
	if err != nil {
		return "", fmt.Errorf("bind_password_file: %w", err)
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		return "", errors.New("bind_password_file is empty")
	}
	return pw, nil
}

// dnToDomain turns DC=hpc,DC=example,DC=edu into hpc.example.edu.
func dnToDomain(dn string) string {
	var parts []string
	for _, rdn := range strings.Split(dn, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(rdn), "=")
		if ok && strings.EqualFold(k, "DC") && v != "" {
			parts = append(parts, strings.ToLower(v))
		}
	}
	return strings.Join(parts, ".")
}

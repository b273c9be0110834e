package ad

import (
	"errors"
	"fmt"
	"net/url"
	"os"
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

// Config configures the Active Directory identity source: the
// `directory.ad:` section of the gateway configuration (used with
// directory.kind: ad). Start from DefaultConfig.
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
	// UPNSuffixes users may append: alice@hpc.example.edu. Empty: the DNS
	// domain of BaseDN (DC=hpc,DC=example,DC=edu: hpc.example.edu).
	UPNSuffixes []string `yaml:"upn_suffixes"`
	// KeyAttribute is where SSH public keys live: sshPublicKey or
	// altSecurityIdentities (values starting "SSHKey:").
	KeyAttribute string `yaml:"key_attribute"`
	// Timeout bounds each DC connection attempt and each request, at most
	// 5s: a dead or hanging DC costs at most this before the next is tried.
	Timeout time.Duration `yaml:"timeout"`
	// PoolSize is the number of pooled service-account connections, 1 to
	// 64.
	PoolSize int `yaml:"pool_size"`
	// IdleCheck: a pooled connection idle longer than this is
	// health-checked before use (0: every time).
	IdleCheck time.Duration `yaml:"idle_check"`
	// CacheTTL is how long a looked-up identity is served without asking
	// AD again (0: always ask).
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// NegativeCacheTTL is how long a name AD does not know stays unknown
	// without asking again (0: always ask): short, so an account created a
	// moment ago can log in almost at once. That it differs from CacheTTL
	// cannot be seen from outside: the gateway answers every refusal
	// before proof at a fixed time, whether the answer came from the cache
	// or from AD.
	NegativeCacheTTL time.Duration `yaml:"negative_cache_ttl"`
	// OfflineMaxAge is how long, while every DC is unreachable, a cached
	// identity still allows public-key logins, like SSSD's offline logins;
	// at least CacheTTL (0 with it: none).
	OfflineMaxAge time.Duration `yaml:"offline_max_age"`
	// CachePasswords keeps a salted argon2id hash of each successfully
	// verified password so password logins work offline.
	CachePasswords bool `yaml:"cache_passwords"`
	// PasswordCacheMaxAge limits how old a cached password hash may be.
	PasswordCacheMaxAge time.Duration `yaml:"password_cache_max_age"`
	// RetryMin is the first wait of the exponential backoff of the
	// background reconnection attempts while offline. A login that
	// arrives while offline asks for an attempt at once, so logins resume
	// within seconds of a DC's return; this is also the least time
	// between two attempts, however many logins ask.
	RetryMin time.Duration `yaml:"retry_min"`
	// RetryMax caps that backoff; at least RetryMin.
	RetryMax time.Duration `yaml:"retry_max"`
	// DCDownFor: a DC that failed is skipped for this long while another
	// answers.
	DCDownFor time.Duration `yaml:"dc_down_for"`
	// MaxCacheEntries bounds the identity cache.
	MaxCacheEntries int `yaml:"max_cache_entries"`
	// WatchInterval is how often the directory watch reads a DC's
	// highestCommittedUSN (one rootDSE read) to notice changes: an account
	// disabled, locked out, expired, deleted or moved between groups has
	// its cached identity dropped, so the next login sees the change about
	// this long after AD committed it instead of cache_ttl later (at least
	// 100ms). Changes made on another DC count from when they replicate to
	// the watched one.
	WatchInterval time.Duration `yaml:"watch_interval"`
	// WatchMaxChanges bounds one round of the watch: when more users and
	// groups changed since the last round, or the changed groups have more
	// members than this in all, the whole cache is dropped instead of
	// searched through (1 to 1000000).
	WatchMaxChanges int `yaml:"watch_max_changes"`
	// PrefetchInterval is how often the gateway looks up, in the
	// background, every user the policy names or whose group it names,
	// so that their identities are cached before they log in: a key
	// login of a user the gateway has never seen must wait for AD, and a
	// lookup slower than gateway.key_refusal_delay refuses the key unseen
	// (after a restart, or in a burst of reconnects). The first round
	// starts a few seconds after the gateway does. 0: never.
	PrefetchInterval time.Duration `yaml:"prefetch_interval"`
	// PrefetchRate bounds those lookups, per second (one at a time; a
	// user already cached and fresh costs nothing).
	PrefetchRate float64 `yaml:"prefetch_rate"`
}

// MinWatchInterval is the shortest watch_interval: a rootDSE read ten
// times a second per gateway is already more than any change needs.
const MinWatchInterval = 100 * time.Millisecond

// MaxTimeout is the upper bound on Timeout: a dead or hanging DC must cost
// a login no more than 5 s before the next DC is tried.
const MaxTimeout = 5 * time.Second

// DefaultConfig returns the defaults: sshPublicKey keys, a 5s bound per
// DC, four pooled connections, identities cached 5m (and served offline
// for key logins up to 24h), passwords not cached.
func DefaultConfig() Config {
	return Config{
		KeyAttribute:        KeySSHPublicKey,
		Timeout:             MaxTimeout,
		PoolSize:            4,
		IdleCheck:           30 * time.Second,
		CacheTTL:            5 * time.Minute,
		NegativeCacheTTL:    30 * time.Second,
		OfflineMaxAge:       24 * time.Hour,
		PasswordCacheMaxAge: 12 * time.Hour,
		RetryMin:            2 * time.Second,
		RetryMax:            time.Minute,
		DCDownFor:           30 * time.Second,
		MaxCacheEntries:     100000,
		WatchInterval:       2 * time.Second,
		PrefetchInterval:    6 * time.Hour,
		PrefetchRate:        20,
		WatchMaxChanges:     1000,
	}
}

// Derive fills what depends on other keys, after decoding
// (yamlconf.Deriver): empty UPNSuffixes become BaseDN's DNS domain.
func (cfg *Config) Derive() {
	if len(cfg.UPNSuffixes) == 0 && cfg.BaseDN != "" {
		if s := dnToDomain(cfg.BaseDN); s != "" {
			cfg.UPNSuffixes = []string{s}
		}
	}
}

// Validate reports every problem of the section at once, each as
// "directory.ad.key: problem" (errors.Join'ed).
func (cfg Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("directory.ad.%s: %s", key, fmt.Sprintf(format, args...)))
	}
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
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"cache_ttl", cfg.CacheTTL}, {"negative_cache_ttl", cfg.NegativeCacheTTL}, {"dc_down_for", cfg.DCDownFor}, {"idle_check", cfg.IdleCheck},
		{"offline_max_age", cfg.OfflineMaxAge}, {"password_cache_max_age", cfg.PasswordCacheMaxAge}} {
		if d.d < 0 {
			bad(d.key, "must not be negative")
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
	if cfg.WatchInterval < MinWatchInterval {
		bad("watch_interval", "%v: must be at least %v", cfg.WatchInterval, MinWatchInterval)
	}
	if cfg.PrefetchInterval < 0 {
		bad("prefetch_interval", "must not be negative")
	}
	if cfg.PrefetchInterval > 0 && !(cfg.PrefetchRate > 0 && cfg.PrefetchRate <= 1000) {
		bad("prefetch_rate", "%v: must be in (0, 1000]", cfg.PrefetchRate)
	}
	if cfg.WatchMaxChanges < 1 || cfg.WatchMaxChanges > 1000000 {
		bad("watch_max_changes", "%d: must be 1..1000000", cfg.WatchMaxChanges)
	}
	return errors.Join(errs...)
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

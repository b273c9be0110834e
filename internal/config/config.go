// Package config loads and validates the gateway configuration file. Every
// validation error names the file and line it is about, so an admin fixing a
// typo at 2 a.m. goes straight to it.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/ad"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
	"github.com/frontdoor-hpc/frontdoor/internal/throttle"
	"github.com/frontdoor-hpc/frontdoor/internal/usage"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf"
)

// DefaultPath is where the gateway looks for its configuration.
const DefaultPath = "/etc/frontdoor/gateway.yaml"

// Config is the whole gateway configuration. Zero values mean "use the
// default"; Load fills defaults in and validates.
type Config struct {
	Gateway   Gateway     `yaml:"gateway"`
	Backend   Backend     `yaml:"backend"`
	Directory Directory   `yaml:"directory"`
	Nodes     []node.Node `yaml:"nodes"`
	// Discovery finds login nodes through the SageMaker HyperPod API, in
	// addition to Nodes (see internal/discovery).
	Discovery discovery.Config `yaml:"discovery"`
	// Cluster is the gossip membership (see internal/cluster). Without a
	// cluster section the gateway routes over Nodes alone.
	Cluster cluster.Config `yaml:"cluster"`
	// Route tunes node choice: staleness, stickiness, score weights.
	Route    route.Config    `yaml:"route"`
	Policy   policy.Config   `yaml:"policy"`
	Throttle throttle.Config `yaml:"throttle"`
	// Slurm is how to reach the cluster's Slurm (for `frontdoor slurm`,
	// and GPU use in login banners). Without a slurm section frontdoor
	// does not talk to Slurm.
	Slurm Slurm `yaml:"slurm"`
	Audit Audit `yaml:"audit"`
	// Usage prices GPU and login-node hours and holds the accounts'
	// budgets, for `frontdoor usage` (see internal/usage).
	Usage usage.Config `yaml:"usage"`
	Log   Log          `yaml:"log"`

	// path and lines remember where things were written, for error messages.
	path  string
	lines yamlconf.Lines
}

// Slurm is how frontdoor reaches Slurm: its client commands (sacctmgr,
// sacct, squeue) with parseable output, each with a timeout.
type Slurm struct {
	// Conf is the slurm.conf the commands use (SLURM_CONF); empty:
	// Slurm's default.
	Conf string `yaml:"conf"`
	// BinDir holds sacctmgr, sacct and squeue; empty: $PATH.
	BinDir string `yaml:"bin_dir"`
	// Cluster is the Slurm cluster name in accounting; empty: the
	// cluster of slurm.conf.
	Cluster string `yaml:"cluster"`
	// ParentAccount is the account frontdoor creates its accounts under
	// and the mark of what it manages. Default "frontdoor".
	ParentAccount string `yaml:"parent_account"`
	// Partitions are the cluster's partitions; rules may name only these.
	Partitions []string `yaml:"partitions"`
	// Timeout bounds every Slurm command. Default 20s.
	Timeout time.Duration `yaml:"timeout"`
	// SyncInterval is how often `frontdoor slurm sync` reconciles.
	// Default 10m.
	SyncInterval time.Duration `yaml:"sync_interval"`
	// WatchInterval is how often the sync asks the directory whether
	// anything changed (AD: one rootDSE read), reconciling at once if so.
	// Default 30s.
	WatchInterval time.Duration `yaml:"watch_interval"`
	// UsageCache is how long GPU use shown in banners is cached, and
	// UsageTimeout how long a login waits for it at most (then it says
	// "unknown"; the login never waits on a slow Slurm). Defaults 30s, 1s.
	UsageCache   time.Duration `yaml:"usage_cache"`
	UsageTimeout time.Duration `yaml:"usage_timeout"`
}

// SlurmEnabled reports whether the configuration has a slurm section.
func (c *Config) SlurmEnabled() bool { return c.lines["slurm"] > 0 }

// Pools lists the pools of the configured nodes, sorted.
func (c *Config) Pools() []string {
	out := node.Pools(c.Nodes)
	slices.Sort(out)
	return out
}

var slurmName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// Gateway is the client-facing SSH server.
type Gateway struct {
	// Name identifies this gateway in logs, audit events and certificate key
	// IDs. Default: the host name.
	Name string `yaml:"name"`
	// Listen is the SSH listen address. Default ":22".
	Listen string `yaml:"listen"`
	// HostKeys are private host key files (OpenSSH format). The same keys must
	// be deployed on every gateway of a cluster so clients see one host.
	HostKeys []string `yaml:"host_keys"`
	// HostCertificates are optional OpenSSH host certificates ("*-cert.pub")
	// for the host keys, offered in addition to the plain keys.
	HostCertificates []string `yaml:"host_certificates"`
	// UserCAKey is the private key of the user CA that signs the short-lived
	// certificates the gateway uses to log in to login nodes.
	UserCAKey string `yaml:"user_ca_key"`
	// AdminSocket is the admin API's Unix socket (created mode 0600; the
	// connecting user, from the kernel's peer credentials, is the admin).
	// Default DefaultAdminSocket; "off" disables it.
	AdminSocket string `yaml:"admin_socket"`
	// AdminListen is a TCP address for the admin API and /metrics, for
	// remote tools (Prometheus, a fleet's ops host). Empty: none. It needs
	// authentication: AdminTokenFile and/or mutual TLS (AdminClientCA).
	AdminListen string `yaml:"admin_listen"`
	// AdminTokenFile lists the bearer tokens TCP clients may present, one
	// "NAME SECRET" per line; NAME is the admin recorded. Mode 0600.
	AdminTokenFile string `yaml:"admin_token_file"`
	// AdminTLSCert and AdminTLSKey make admin_listen HTTPS; AdminClientCA
	// (with them) verifies client certificates, whose common name is then
	// the admin.
	AdminTLSCert  string `yaml:"admin_tls_cert"`
	AdminTLSKey   string `yaml:"admin_tls_key"`
	AdminClientCA string `yaml:"admin_client_ca"`
	// AdminAllowedHosts are Host names TCP requests may carry besides the
	// listen address's host, localhost, 127.0.0.1, ::1 and the TLS
	// certificate's names (anything else is DNS rebinding, refused).
	AdminAllowedHosts []string `yaml:"admin_allowed_hosts"`
	// AdminMetricsPublic serves /metrics without credentials (a scraper
	// that cannot send a bearer token). Default false.
	AdminMetricsPublic bool `yaml:"admin_metrics_public"`
	// AdminPprof serves /debug/pprof/ (authenticated). Default false.
	AdminPprof bool `yaml:"admin_pprof"`
	// MaxAuthTries is the number of failed auth attempts per connection.
	MaxAuthTries int `yaml:"max_auth_tries"`
	// HandshakeTimeout bounds TCP accept to the end of the key exchange:
	// a client that connects and says nothing is gone after it.
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`
	// AuthTimeout bounds TCP accept to a proven identity (sshd's
	// LoginGraceTime), so an unauthenticated connection holds its
	// admission place no longer.
	AuthTimeout time.Duration `yaml:"auth_timeout"`
	// LoginGraceTime bounds TCP accept to a relayed session, the node's
	// login included.
	LoginGraceTime time.Duration `yaml:"login_grace_time"`
	// MaxConnections caps concurrent client connections (0 = 10000).
	MaxConnections int `yaml:"max_connections"`
	// MaxStartups caps connections that have not authenticated yet,
	// from everyone together (like sshd's MaxStartups).
	MaxStartups int `yaml:"max_startups"`
	// PerSourceMaxStartups caps unauthenticated connections from one
	// source (an IPv4 address or an IPv6 /64). Behind a campus NAT many
	// users share one address: raise it, or list the NAT in
	// admission_exempt.
	PerSourceMaxStartups int `yaml:"per_source_max_startups"`
	// PerSourceRate is how many new connections per second one source may
	// open on average, PerSourceBurst how many at once.
	PerSourceRate  float64 `yaml:"per_source_rate"`
	PerSourceBurst int     `yaml:"per_source_burst"`
	// AdmissionExempt lists CIDRs whose connections only count against
	// max_startups (e.g. a NAT in front of a whole campus).
	AdmissionExempt []string `yaml:"admission_exempt"`
	// MaxPasswordChecks bounds password verifications running at once,
	// whoever they are for: each may hash with argon2id (64 MiB) or hold
	// an LDAP bind. Default: the number of CPUs, at least 2.
	MaxPasswordChecks int `yaml:"max_password_checks"`
	// KeyRefusalDelay is when a public key offered for a name is refused,
	// counted from the first request naming it on the connection, whether
	// the directory answered sooner or not at all (then the key is refused
	// unseen and the answer cached for the next connection); later
	// refusals for that name on the connection go at once. A stranger
	// timing refusals sees this delay for every name, whether it exists,
	// is cached, or AD is slow. Keep it above the slowest healthy lookup
	// (a cold search with nested groups). Default 500ms.
	KeyRefusalDelay time.Duration `yaml:"key_refusal_delay"`
	// PasswordRefusalDelay is when a wrong password (or keyboard-interactive
	// answer) is refused, counted from its arrival, for known and unknown
	// names alike; a check the directory has not answered by then goes on
	// in the background (its outcome counts in the throttle) and the
	// attempt is refused. Keep it above the slowest healthy lookup plus
	// bind. Default 1s.
	PasswordRefusalDelay time.Duration `yaml:"password_refusal_delay"`
	// MaxLookups bounds directory lookups running at once for clients that
	// have not authenticated yet, from everyone together; more wait their
	// turn, taken round-robin by source, so a flood from one source never
	// queues another's login. Keep it at most the directory's pool_size.
	// Default 4.
	MaxLookups int `yaml:"max_lookups"`
	// PerSourceLookups bounds those lookups running at once for one source
	// (an IPv4 address or an IPv6 /64; admission_exempt sources are not
	// limited per source). Default 2.
	PerSourceLookups int `yaml:"per_source_lookups"`
	// PerSourceLookupRate is how many names per second one source may
	// have looked up on average, PerSourceLookupBurst how many at once;
	// a name over the limit is refused unseen (at the refusal delay, like
	// any other). An honest client names one user per connection, so the
	// defaults match per_source_rate and per_source_burst: 10 and 40.
	PerSourceLookupRate  float64 `yaml:"per_source_lookup_rate"`
	PerSourceLookupBurst int     `yaml:"per_source_lookup_burst"`
	// KexAlgorithms, Ciphers and MACs are what clients may negotiate, like
	// sshd_config's options of the same names. The defaults are no weaker
	// than OpenSSH's own: the post-quantum hybrid first, nothing SHA-1.
	KexAlgorithms []string `yaml:"kex_algorithms"`
	Ciphers       []string `yaml:"ciphers"`
	MACs          []string `yaml:"macs"`
	// Banner is sent to clients before authentication (optional).
	Banner string `yaml:"banner"`
	// ProxyProtocolFrom lists the addresses (CIDRs) of load balancers that
	// send a PROXY protocol v1/v2 header. Connections from them must carry
	// one; connections from elsewhere must not. Empty: PROXY protocol off.
	ProxyProtocolFrom []string `yaml:"proxy_protocol_from"`
}

// DefaultAdminSocket is where the admin API listens unless admin_socket
// says otherwise (systemd's RuntimeDirectory=frontdoor).
const DefaultAdminSocket = "/run/frontdoor/admin.sock"

// AdminSocketOff is the admin_socket value that disables the socket.
const AdminSocketOff = "off"

// AdminSocketEnabled reports whether the admin API listens on a Unix socket.
func (g Gateway) AdminSocketEnabled() bool {
	return g.AdminSocket != "" && g.AdminSocket != AdminSocketOff
}

// ProxyProtocolPrefixes returns ProxyProtocolFrom parsed (validated at load).
func (g Gateway) ProxyProtocolPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range g.ProxyProtocolFrom {
		if p, err := parsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// parsePrefix accepts a CIDR or a single address.
func parsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or CIDR", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Backend is how the gateway talks to login nodes.
type Backend struct {
	// KnownHosts lists OpenSSH known_hosts files with the login nodes' host
	// keys and/or "@cert-authority" lines for a host CA.
	KnownHosts []string `yaml:"known_hosts"`
	// InsecureIgnoreHostKeys disables host key verification. Labs only: it is
	// logged loudly at start and on every backend connection.
	InsecureIgnoreHostKeys bool `yaml:"insecure_ignore_host_keys"`
	// ConnectTimeout bounds TCP connect plus SSH handshake to one node.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// CertValidity is the lifetime of a backend login certificate. It only has
	// to outlive the login itself; sshd does not re-check it later.
	CertValidity time.Duration `yaml:"cert_validity"`
	// CertSourceAddress, when set, is put into the certificate's
	// source-address critical option (the gateways' addresses as seen by the
	// nodes), so a stolen certificate is useless from elsewhere.
	CertSourceAddress []string `yaml:"cert_source_address"`
	// MaxAttempts is how many candidate nodes one login tries before giving up.
	MaxAttempts int `yaml:"max_attempts"`
	// KeepaliveInterval is how often an idle backend connection is probed.
	KeepaliveInterval time.Duration `yaml:"keepalive_interval"`
	// Preconnect opens a TCP connection to the most likely node as soon as
	// a client has sent its first bytes, so sshd's per-connection fork and
	// re-exec overlap the client's handshake (about 40 ms saved per
	// login). A wrong guess costs the node one unused connection
	// ("Connection closed ... [preauth]" in its log). Default true.
	Preconnect *bool `yaml:"preconnect"`
	// SpeculativeMax and SpeculativePerNode bound the node connections
	// opened before a client proved anything (preconnections, and dials
	// started when a client offers an acceptable key), in all and per
	// node: a stranger can never fill a node's MaxStartups. Beyond them a
	// login simply dials after the proof.
	SpeculativeMax     int `yaml:"speculative_max"`
	SpeculativePerNode int `yaml:"speculative_per_node"`
	// SpeculativePerSource bounds them for one client source (an IPv4
	// address or an IPv6 /64; admission_exempt sources only meet the
	// other two bounds). A preconnection also waits for the client's SSH
	// identification string and the header of its first key exchange
	// message, so a port scanner or a client sending noise costs no node
	// anything. Default 2.
	SpeculativePerSource int `yaml:"speculative_per_source"`
	// MinUID refuses directory accounts whose uid is known and below it
	// (system accounts); 0 disables the floor. Default 1000.
	MinUID *int `yaml:"min_uid"`
	// DenyPrincipals are account names no login certificate may name,
	// whatever the directory says (root is always refused).
	DenyPrincipals []string `yaml:"deny_principals"`
}

// Directory selects the identity source.
type Directory struct {
	// Kind is "static" (a YAML file of users) or "ad" (Active Directory).
	Kind string `yaml:"kind"`
	// Static configures the static directory.
	Static StaticDirectory `yaml:"static"`
	// AD configures the Active Directory source (directory.kind: ad).
	AD ad.Config `yaml:"ad"`
}

// StaticDirectory is a YAML file of users; see configs/users.yaml.
type StaticDirectory struct {
	File string `yaml:"file"`
}

// Audit configures the audit trail.
type Audit struct {
	// File receives one JSON object per line. Empty: audit events go to the
	// log only.
	File string `yaml:"file"`
	// S3 ships audit events to a bucket as well (see internal/audit/s3sink).
	S3 s3sink.Config `yaml:"s3"`
}

// Log configures the process log.
type Log struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // json | text
}

// ClusterEnabled reports whether the file has a cluster section: gossip on.
func (c *Config) ClusterEnabled() bool { return c.lines["cluster"] > 0 }

// AuditS3Enabled reports whether the file has an audit.s3 section.
func (c *Config) AuditS3Enabled() bool { return c.lines["audit.s3"] > 0 }

// UsageEnabled reports whether the file has a usage section.
func (c *Config) UsageEnabled() bool { return c.lines["usage"] > 0 }

// DiscoveryEnabled reports whether the file has a discovery section.
func (c *Config) DiscoveryEnabled() bool { return c.lines["discovery"] > 0 }

// Path returns the file the configuration was loaded from.
func (c *Config) Path() string { return c.path }

// Load reads, defaults and validates a configuration file. Relative paths in
// the file are resolved against the file's directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// Parse is Load on bytes already read; path is used for messages and for
// resolving relative paths. Every problem, unknown keys and wrong types
// included, is reported as "file:line: key.path: problem".
func Parse(path string, data []byte) (*Config, error) {
	c := &Config{path: path, Cluster: cluster.DefaultConfig(), Route: route.DefaultConfig()}
	lines, err := yamlconf.Decode(path, data, c)
	if err != nil {
		return nil, err
	}
	c.lines = lines
	c.setDefaults()
	c.resolvePaths(filepath.Dir(path))
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Line returns the line a key path was written on, or 0.
func (c *Config) Line(path string) int { return c.lines.Line(path) }

// Errorf builds an error pointing at the line of a key path.
func (c *Config) Errorf(path, format string, args ...any) error {
	return &Error{File: c.path, Line: c.Line(path), Key: path, Msg: fmt.Sprintf(format, args...)}
}

// Error is one validation problem, located in the file.
type Error = yamlconf.Error

// sectionErrors locates the errors a section's own Validate returned: each
// "section.key: problem" (errors.Join'ed) becomes a file:line error on
// that key.
func (c *Config) sectionErrors(section string, err error) []error {
	var all []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	} else {
		all = []error{err}
	}
	out := make([]error, 0, len(all))
	for _, e := range all {
		key, msg := section, e.Error()
		if k, m, ok := strings.Cut(msg, ": "); ok && (k == section || strings.HasPrefix(k, section+".")) && !strings.ContainsAny(k, " ") {
			key, msg = k, m
		}
		// "cluster.bind_port/advertise_port": point at the first.
		line := strings.SplitN(key, "/", 2)[0]
		out = append(out, &Error{File: c.path, Line: c.Line(line), Key: key, Msg: msg})
	}
	return out
}

func (c *Config) setDefaults() {
	g := &c.Gateway
	if g.Name == "" {
		g.Name, _ = os.Hostname()
	}
	if g.Listen == "" {
		g.Listen = ":22"
	}
	if g.AdminSocket == "" {
		g.AdminSocket = DefaultAdminSocket
	}
	if g.MaxAuthTries == 0 {
		g.MaxAuthTries = 6
	}
	if g.LoginGraceTime == 0 {
		g.LoginGraceTime = 60 * time.Second
	}
	if g.MaxConnections == 0 {
		g.MaxConnections = 10000
	}
	// The three deadlines nest; a shorter one set in the file lowers the
	// defaults of those inside it.
	if g.AuthTimeout == 0 {
		g.AuthTimeout = min(30*time.Second, g.LoginGraceTime)
	}
	if g.HandshakeTimeout == 0 {
		g.HandshakeTimeout = min(10*time.Second, g.AuthTimeout)
	}
	if g.MaxStartups == 0 {
		g.MaxStartups = 200
	}
	if g.PerSourceMaxStartups == 0 {
		g.PerSourceMaxStartups = 20
	}
	if g.PerSourceRate == 0 {
		g.PerSourceRate = 10
	}
	if g.PerSourceBurst == 0 {
		g.PerSourceBurst = 40
	}
	if g.MaxPasswordChecks == 0 {
		g.MaxPasswordChecks = max(2, runtime.NumCPU())
	}
	if g.KeyRefusalDelay == 0 {
		g.KeyRefusalDelay = 500 * time.Millisecond
	}
	if g.PasswordRefusalDelay == 0 {
		g.PasswordRefusalDelay = time.Second
	}
	if g.MaxLookups == 0 {
		g.MaxLookups = 4
	}
	if g.PerSourceLookups == 0 {
		g.PerSourceLookups = 2
	}
	if g.PerSourceLookupRate == 0 {
		g.PerSourceLookupRate = 10
	}
	if g.PerSourceLookupBurst == 0 {
		g.PerSourceLookupBurst = 40
	}
	if g.KexAlgorithms == nil {
		g.KexAlgorithms = DefaultKexAlgorithms()
	}
	if g.Ciphers == nil {
		g.Ciphers = DefaultCiphers()
	}
	if g.MACs == nil {
		g.MACs = DefaultMACs()
	}
	b := &c.Backend
	if b.ConnectTimeout == 0 {
		b.ConnectTimeout = 5 * time.Second
	}
	if b.CertValidity == 0 {
		b.CertValidity = 5 * time.Minute
	}
	if b.MaxAttempts == 0 {
		b.MaxAttempts = 3
	}
	if b.Preconnect == nil {
		t := true
		b.Preconnect = &t
	}
	if b.KeepaliveInterval == 0 {
		b.KeepaliveInterval = 30 * time.Second
	}
	if b.SpeculativeMax == 0 {
		b.SpeculativeMax = 64
	}
	if b.SpeculativePerNode == 0 {
		b.SpeculativePerNode = 8
	}
	if b.SpeculativePerSource == 0 {
		b.SpeculativePerSource = 2
	}
	if b.MinUID == nil {
		v := 1000
		b.MinUID = &v
	}
	if b.DenyPrincipals == nil {
		b.DenyPrincipals = DefaultDenyPrincipals()
	}
	if c.Directory.Kind == "" {
		c.Directory.Kind = "static"
	}
	if c.Directory.Kind == "ad" {
		c.Directory.AD = c.Directory.AD.Defaults()
	}
	c.Throttle = c.Throttle.Defaults()
	sl := &c.Slurm
	if sl.ParentAccount == "" {
		sl.ParentAccount = "frontdoor"
	}
	if sl.Timeout == 0 {
		sl.Timeout = 20 * time.Second
	}
	if sl.SyncInterval == 0 {
		sl.SyncInterval = 10 * time.Minute
	}
	if sl.WatchInterval == 0 {
		sl.WatchInterval = 30 * time.Second
	}
	if sl.UsageCache == 0 {
		sl.UsageCache = 30 * time.Second
	}
	if sl.UsageTimeout == 0 {
		sl.UsageTimeout = time.Second
	}
	if c.DiscoveryEnabled() {
		c.Discovery = c.Discovery.Defaults()
	}
	if c.AuditS3Enabled() {
		c.Audit.S3 = c.Audit.S3.Defaults()
	}
	c.Usage = c.Usage.Defaults()
	for i := range c.Nodes {
		if c.Nodes[i].Pool == "" {
			c.Nodes[i].Pool = node.DefaultPool
		}
	}
	if c.lines["cluster.name"] == 0 {
		c.Cluster.Name = g.Name
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "json"
	}
}

func (c *Config) resolvePaths(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for i := range c.Gateway.HostKeys {
		abs(&c.Gateway.HostKeys[i])
	}
	for i := range c.Gateway.HostCertificates {
		abs(&c.Gateway.HostCertificates[i])
	}
	abs(&c.Gateway.UserCAKey)
	if c.Gateway.AdminSocketEnabled() {
		abs(&c.Gateway.AdminSocket)
	}
	for _, p := range []*string{&c.Gateway.AdminTokenFile, &c.Gateway.AdminTLSCert, &c.Gateway.AdminTLSKey, &c.Gateway.AdminClientCA} {
		abs(p)
	}
	for i := range c.Backend.KnownHosts {
		abs(&c.Backend.KnownHosts[i])
	}
	abs(&c.Directory.Static.File)
	abs(&c.Directory.AD.CAFile)
	abs(&c.Directory.AD.BindPasswordFile)
	abs(&c.Audit.File)
	abs(&c.Audit.S3.SpoolDir)
}

// AdmissionExemptPrefixes returns AdmissionExempt parsed (validated at load).
func (g Gateway) AdmissionExemptPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range g.AdmissionExempt {
		if p, err := parsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// DefaultKexAlgorithms: the post-quantum hybrid first, then what OpenSSH
// offers by default that x/crypto implements; no SHA-1 groups.
func DefaultKexAlgorithms() []string {
	return []string{ssh.KeyExchangeMLKEM768X25519, ssh.KeyExchangeCurve25519, ssh.KeyExchangeECDHP256,
		ssh.KeyExchangeECDHP384, ssh.KeyExchangeECDHP521, ssh.KeyExchangeDHGEXSHA256, ssh.KeyExchangeDH16SHA512,
		ssh.KeyExchangeDH14SHA256}
}

// DefaultCiphers: AEAD first (AES-GCM is the cheapest per byte with
// AES-NI), then CTR for old clients; never CBC.
func DefaultCiphers() []string {
	return []string{ssh.CipherAES128GCM, ssh.CipherAES256GCM, ssh.CipherChaCha20Poly1305,
		ssh.CipherAES128CTR, ssh.CipherAES192CTR, ssh.CipherAES256CTR}
}

// DefaultMACs: SHA-2 only, encrypt-then-MAC first (AEAD ciphers use none).
func DefaultMACs() []string {
	return []string{ssh.HMACSHA256ETM, ssh.HMACSHA512ETM, ssh.HMACSHA256, ssh.HMACSHA512}
}

// DefaultDenyPrincipals are accounts of the systems frontdoor fronts
// (Debian/Ubuntu system users, HyperPod's admin user, Slurm's and munge's
// service users) that a directory entry of the same name must never
// reach.
func DefaultDenyPrincipals() []string {
	return []string{"root", "toor", "ubuntu", "ec2-user", "admin", "slurm", "munge", "daemon", "bin", "sys",
		"sync", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data", "backup", "list", "irc",
		"nobody", "sshd", "systemd-network", "systemd-resolve", "messagebus", "syslog", "_apt", "mysql"}
}

func (c *Config) validate() error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if _, _, err := net.SplitHostPort(c.Gateway.Listen); err != nil {
		add(c.Errorf("gateway.listen", "not host:port: %v", err))
	}
	errs = append(errs, c.validateAdmin()...)
	for i, a := range c.Gateway.ProxyProtocolFrom {
		if _, err := parsePrefix(a); err != nil {
			add(c.Errorf(fmt.Sprintf("gateway.proxy_protocol_from[%d]", i), "%v", err))
		}
	}
	if len(c.Gateway.HostKeys) == 0 {
		add(c.Errorf("gateway.host_keys", "at least one host key file is required (create one with 'frontdoor keygen')"))
	}
	if c.Gateway.UserCAKey == "" {
		add(c.Errorf("gateway.user_ca_key", "required: the user CA that signs backend login certificates"))
	}
	if c.Gateway.MaxAuthTries < 1 {
		add(c.Errorf("gateway.max_auth_tries", "must be at least 1"))
	}
	g := c.Gateway
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"gateway.handshake_timeout", g.HandshakeTimeout}, {"gateway.auth_timeout", g.AuthTimeout}, {"gateway.login_grace_time", g.LoginGraceTime}} {
		if d.v <= 0 {
			add(c.Errorf(d.key, "must be positive"))
		}
	}
	if g.HandshakeTimeout > g.AuthTimeout || g.AuthTimeout > g.LoginGraceTime {
		add(c.Errorf("gateway.auth_timeout", "want handshake_timeout (%s) ≤ auth_timeout (%s) ≤ login_grace_time (%s)",
			g.HandshakeTimeout, g.AuthTimeout, g.LoginGraceTime))
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"gateway.max_startups", g.MaxStartups}, {"gateway.per_source_max_startups", g.PerSourceMaxStartups},
		{"gateway.per_source_burst", g.PerSourceBurst}, {"gateway.max_password_checks", g.MaxPasswordChecks},
		{"gateway.max_lookups", g.MaxLookups}, {"gateway.per_source_lookups", g.PerSourceLookups},
		{"gateway.per_source_lookup_burst", g.PerSourceLookupBurst},
		{"backend.speculative_max", c.Backend.SpeculativeMax}, {"backend.speculative_per_node", c.Backend.SpeculativePerNode},
		{"backend.speculative_per_source", c.Backend.SpeculativePerSource}} {
		if n.v < 1 {
			add(c.Errorf(n.key, "must be at least 1"))
		}
	}
	if g.PerSourceRate <= 0 {
		add(c.Errorf("gateway.per_source_rate", "must be positive (connections per second)"))
	}
	if g.PerSourceLookupRate <= 0 {
		add(c.Errorf("gateway.per_source_lookup_rate", "must be positive (names per second)"))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"gateway.key_refusal_delay", g.KeyRefusalDelay}, {"gateway.password_refusal_delay", g.PasswordRefusalDelay}} {
		if d.v <= 0 || d.v > g.AuthTimeout {
			add(c.Errorf(d.key, "must be positive and at most auth_timeout (%s)", g.AuthTimeout))
		}
	}
	for i, a := range g.AdmissionExempt {
		if _, err := parsePrefix(a); err != nil {
			add(c.Errorf(fmt.Sprintf("gateway.admission_exempt[%d]", i), "%v", err))
		}
	}
	for _, al := range []struct {
		key        string
		have, want []string
	}{{"gateway.kex_algorithms", g.KexAlgorithms, ssh.SupportedAlgorithms().KeyExchanges},
		{"gateway.ciphers", g.Ciphers, ssh.SupportedAlgorithms().Ciphers},
		{"gateway.macs", g.MACs, ssh.SupportedAlgorithms().MACs}} {
		if len(al.have) == 0 {
			add(c.Errorf(al.key, "must not be empty"))
		}
		for i, a := range al.have {
			if !slices.Contains(al.want, a) {
				add(c.Errorf(fmt.Sprintf("%s[%d]", al.key, i), "%q is not supported or not secure (supported: %s)", a, strings.Join(al.want, ", ")))
			}
		}
	}
	if *c.Backend.MinUID < 0 {
		add(c.Errorf("backend.min_uid", "must not be negative"))
	}
	if len(c.Backend.KnownHosts) == 0 && !c.Backend.InsecureIgnoreHostKeys {
		add(c.Errorf("backend.known_hosts", "required: login node host keys must be verified (or set insecure_ignore_host_keys for a lab)"))
	}
	if c.Backend.CertValidity < 30*time.Second || c.Backend.CertValidity > time.Hour {
		add(c.Errorf("backend.cert_validity", "must be between 30s and 1h, got %s", c.Backend.CertValidity))
	}
	if c.Backend.MaxAttempts < 1 || c.Backend.MaxAttempts > 10 {
		add(c.Errorf("backend.max_attempts", "must be between 1 and 10"))
	}
	for i, a := range c.Backend.CertSourceAddress {
		if _, _, err := net.ParseCIDR(a); err != nil && net.ParseIP(a) == nil {
			add(c.Errorf(fmt.Sprintf("backend.cert_source_address[%d]", i), "%q is not an IP address or CIDR", a))
		}
	}
	switch c.Directory.Kind {
	case "static":
		if c.Directory.Static.File == "" {
			add(c.Errorf("directory.static.file", "required for directory kind static"))
		}
	case "ad":
		for _, p := range c.Directory.AD.Problems() {
			add(c.Errorf("directory.ad."+p.Key, "%s", p.Msg))
		}
	default:
		add(c.Errorf("directory.kind", "unknown kind %q (want static or ad)", c.Directory.Kind))
	}
	seen := map[string]bool{}
	for i, n := range c.Nodes {
		key := fmt.Sprintf("nodes[%d]", i)
		for _, p := range n.Validate() {
			add(c.Errorf(key+"."+p.Key, "%s", p.Msg))
		}
		if seen[n.Name] {
			add(c.Errorf(key+".name", "duplicate node name %q", n.Name))
		}
		seen[n.Name] = true
	}
	if c.ClusterEnabled() {
		if err := c.Cluster.ValidateFor(cluster.RoleGateway); err != nil {
			errs = append(errs, c.sectionErrors("cluster", err)...)
		}
		if len(c.Nodes) == 0 && !c.Cluster.Insecure && !c.DiscoveryEnabled() {
			add(c.Errorf("nodes", "no login nodes: with gossip, health is taken only for the nodes listed here (name, addr, pool) or found by discovery, at that address and in that pool"))
		}
	} else if len(c.Nodes) == 0 && !c.DiscoveryEnabled() {
		add(c.Errorf("nodes", "no login nodes: list them here, configure discovery, or a cluster section for gossip"))
	}
	if c.AuditS3Enabled() {
		if err := c.Audit.S3.Validate(); err != nil {
			errs = append(errs, c.sectionErrors("audit.s3", err)...)
		}
		if !s3sink.ValidGatewayName(c.Gateway.Name) {
			add(c.Errorf("gateway.name", "%q cannot be part of an audit object key (letters, digits, '.', '-'; at most 63)", c.Gateway.Name))
		}
	}
	if err := c.Usage.Validate(); err != nil {
		errs = append(errs, c.sectionErrors("usage", err)...)
	}
	if c.DiscoveryEnabled() {
		if err := c.Discovery.Validate(); err != nil {
			errs = append(errs, c.sectionErrors("discovery", err)...)
		}
	}
	if err := c.Route.Validate(); err != nil {
		errs = append(errs, c.sectionErrors("route", err)...)
	}
	var known policy.Known
	if len(c.Nodes) > 0 {
		known.Pools = c.Pools()
	}
	if c.SlurmEnabled() && len(c.Slurm.Partitions) > 0 {
		known.Partitions = c.Slurm.Partitions
	}
	for _, pe := range c.Policy.Validate(known) {
		add(c.Errorf("policy."+pe.Key, "%s", pe.Msg))
	}
	if c.SlurmEnabled() {
		sl := c.Slurm
		if !slurmName.MatchString(sl.ParentAccount) {
			add(c.Errorf("slurm.parent_account", "%q is not a valid Slurm account name", sl.ParentAccount))
		}
		if sl.Cluster != "" && !slurmName.MatchString(sl.Cluster) {
			add(c.Errorf("slurm.cluster", "%q is not a valid Slurm cluster name", sl.Cluster))
		}
		for i, p := range sl.Partitions {
			if !slurmName.MatchString(p) {
				add(c.Errorf(fmt.Sprintf("slurm.partitions[%d]", i), "%q is not a valid partition name", p))
			}
		}
		for _, d := range []struct {
			key string
			d   time.Duration
		}{{"timeout", sl.Timeout}, {"sync_interval", sl.SyncInterval}, {"watch_interval", sl.WatchInterval}, {"usage_cache", sl.UsageCache}, {"usage_timeout", sl.UsageTimeout}} {
			if d.d <= 0 {
				add(c.Errorf("slurm."+d.key, "must be positive"))
			}
		}
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add(c.Errorf("log.level", "unknown level %q", c.Log.Level))
	}
	switch c.Log.Format {
	case "json", "text":
	default:
		add(c.Errorf("log.format", "unknown format %q", c.Log.Format))
	}
	return errors.Join(errs...)
}

// MaxSocketPath is the longest Unix socket path Linux binds (sun_path).
const MaxSocketPath = 107

// validateAdmin: the admin API is never reachable without a credential.
// The socket's credential is the peer's uid; TCP needs a token file or
// mutual TLS, and the TLS files come as a set.
func (c *Config) validateAdmin() []error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	g := c.Gateway
	if g.AdminSocketEnabled() && len(g.AdminSocket) > MaxSocketPath {
		add(c.Errorf("gateway.admin_socket", "%d bytes is longer than a Unix socket path may be (%d)", len(g.AdminSocket), MaxSocketPath))
	}
	tcpOnly := []struct {
		key string
		set bool
	}{{"gateway.admin_token_file", g.AdminTokenFile != ""}, {"gateway.admin_tls_cert", g.AdminTLSCert != ""},
		{"gateway.admin_tls_key", g.AdminTLSKey != ""}, {"gateway.admin_client_ca", g.AdminClientCA != ""},
		{"gateway.admin_allowed_hosts", len(g.AdminAllowedHosts) > 0}, {"gateway.admin_metrics_public", g.AdminMetricsPublic}}
	if g.AdminListen == "" {
		for _, k := range tcpOnly {
			if k.set {
				add(c.Errorf(k.key, "only used with gateway.admin_listen (the Unix socket authenticates by peer uid)"))
			}
		}
		return errs
	}
	if _, _, err := net.SplitHostPort(g.AdminListen); err != nil {
		add(c.Errorf("gateway.admin_listen", "not host:port: %v", err))
	}
	if g.AdminTokenFile == "" && g.AdminClientCA == "" {
		add(c.Errorf("gateway.admin_listen", "the admin API over TCP needs authentication: set admin_token_file (bearer tokens) "+
			"and/or admin_tls_cert, admin_tls_key and admin_client_ca (mutual TLS); or drop admin_listen and use admin_socket"))
	}
	if (g.AdminTLSCert == "") != (g.AdminTLSKey == "") {
		key := "gateway.admin_tls_cert" // point at the one that is there
		if g.AdminTLSCert == "" {
			key = "gateway.admin_tls_key"
		}
		add(c.Errorf(key, "admin_tls_cert and admin_tls_key go together"))
	}
	if g.AdminClientCA != "" && g.AdminTLSCert == "" {
		add(c.Errorf("gateway.admin_client_ca", "mutual TLS needs admin_tls_cert and admin_tls_key too"))
	}
	for i, h := range g.AdminAllowedHosts {
		if !validHostName(h) {
			add(c.Errorf(fmt.Sprintf("gateway.admin_allowed_hosts[%d]", i), "%q is not a host name or IP address (no port, no scheme)", h))
		}
	}
	return errs
}

var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*\.?$`)

func validHostName(h string) bool {
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return true
	}
	return len(h) <= 253 && hostName.MatchString(h)
}

package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/ca/kms"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Gateway is the client-facing SSH server.
type Gateway struct {
	// Name identifies this gateway in logs, audit events and certificate key
	// IDs. Empty: the host name.
	Name string `yaml:"name"`
	// Listen is the SSH listen address, host:port.
	Listen string `yaml:"listen"`
	// HostKeys are private host key files (OpenSSH format). The same keys must
	// be deployed on every gateway of a cluster so clients see one host.
	HostKeys []string `yaml:"host_keys"`
	// HostCertificates are optional OpenSSH host certificates ("*-cert.pub")
	// for the host keys, offered in addition to the plain keys.
	HostCertificates []string `yaml:"host_certificates"`
	// UserCAKey is the private key file of this gateway's user CA, which
	// signs the short-lived certificates it logs in to login nodes with.
	// Each gateway has its own (never copy it to another gateway): the
	// nodes trust all the gateways' public keys (TrustedUserCAKeys lists
	// them) and can drop one gateway's alone. Either this or UserCAKMS.
	UserCAKey string `yaml:"user_ca_key"`
	// UserCAKMS keeps this gateway's user CA key in AWS KMS instead of a
	// file: the key never leaves KMS, the gateway asks it for one
	// signature per login.
	UserCAKMS *kms.Config `yaml:"user_ca_kms"`
	// AdminSocket is the admin API's Unix socket (created mode 0600; the
	// connecting user, from the kernel's peer credentials, is the admin).
	// "off" disables it.
	AdminSocket string `yaml:"admin_socket"`
	// AdminListen is a TCP address for the admin API and /metrics, for
	// remote tools (Prometheus, a fleet's ops host). Empty: none. It needs
	// authentication: AdminTokenFile and/or mutual TLS (AdminClientCA).
	AdminListen string `yaml:"admin_listen"`
	// AdminTokenFile lists the bearer tokens TCP clients may present, one
	// "NAME SECRET" per line; NAME is the admin recorded. Mode 0600.
	AdminTokenFile string `yaml:"admin_token_file"`
	// AdminTLSCert is the certificate (PEM) that makes AdminListen HTTPS;
	// it goes with AdminTLSKey.
	AdminTLSCert string `yaml:"admin_tls_cert"`
	// AdminTLSKey is the private key (PEM) of AdminTLSCert.
	AdminTLSKey string `yaml:"admin_tls_key"`
	// AdminClientCA (with AdminTLSCert) verifies client certificates:
	// mutual TLS. A certificate that chains to it is only the first step:
	// its name must also be in AdminClientNames (full admin) or
	// AdminReadOnlyClientNames (read-only).
	AdminClientCA string `yaml:"admin_client_ca"`
	// AdminClientNames are the client certificates that are full admins,
	// by name: a name matches the certificate's subject common name or
	// one of its DNS or e-mail subject alternative names, exactly (case
	// aside); the matched name is the admin recorded ("cert:NAME"). "*"
	// admits every certificate the CA signed (a CA for nothing else).
	// Required with AdminClientCA (this list or the read-only one).
	AdminClientNames []string `yaml:"admin_client_names"`
	// AdminReadOnlyClientNames are client certificates, matched the same
	// way, that may only read: status, nodes, sessions, explain, metrics
	// and the status page; never drain, undrain, reload, upgrade or lock.
	// For dashboards and scrapers.
	AdminReadOnlyClientNames []string `yaml:"admin_readonly_client_names"`
	// AdminAllowPlaintext allows AdminListen on a non-loopback address
	// without TLS (bearer tokens in clear text on the wire): only for a
	// network where nobody can listen, such as a dedicated management
	// link. Without it such a configuration is an error.
	AdminAllowPlaintext bool `yaml:"admin_allow_plaintext"`
	// AdminAllowedHosts are Host names TCP requests may carry besides the
	// listen address's host, localhost, 127.0.0.1, ::1 and the TLS
	// certificate's names (anything else is DNS rebinding, refused).
	AdminAllowedHosts []string `yaml:"admin_allowed_hosts"`
	// AdminMetricsPublic serves /metrics without credentials (a scraper
	// that cannot send a bearer token).
	AdminMetricsPublic bool `yaml:"admin_metrics_public"`
	// AdminPprof serves /debug/pprof/ (authenticated).
	AdminPprof bool `yaml:"admin_pprof"`
	// MaxAuthTries is the number of failed auth attempts per connection
	// (sshd's MaxAuthTries).
	MaxAuthTries int `yaml:"max_auth_tries"`
	// HandshakeTimeout bounds TCP accept to the end of the key exchange:
	// a client that connects and says nothing is gone after it. 0:
	// min(10s, AuthTimeout).
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`
	// AuthTimeout bounds TCP accept to a proven identity (what sshd calls
	// its login grace time), so an unauthenticated connection holds its
	// admission place no longer. 0: min(30s, LoginGraceTime).
	AuthTimeout time.Duration `yaml:"auth_timeout"`
	// LoginGraceTime bounds TCP accept to a relayed session, the node's
	// login included. The three deadlines nest: HandshakeTimeout ≤
	// AuthTimeout ≤ LoginGraceTime.
	LoginGraceTime time.Duration `yaml:"login_grace_time"`
	// MaxConnections caps concurrent client connections.
	MaxConnections int `yaml:"max_connections"`
	// MaxStartups caps connections that have not authenticated yet,
	// from everyone together (like sshd's MaxStartups).
	MaxStartups int `yaml:"max_startups"`
	// PerSourceMaxStartups caps unauthenticated connections from one
	// source (an IPv4 address or an IPv6 /64). Behind a campus NAT many
	// users share one address: raise it, or list the NAT in
	// AdmissionExempt.
	PerSourceMaxStartups int `yaml:"per_source_max_startups"`
	// PerSourceRate is how many new connections per second one source may
	// open on average.
	PerSourceRate float64 `yaml:"per_source_rate"`
	// PerSourceBurst is how many new connections one source may open at
	// once, above PerSourceRate.
	PerSourceBurst int `yaml:"per_source_burst"`
	// AdmissionExempt lists CIDRs whose connections only count against
	// MaxStartups (e.g. a NAT in front of a whole campus).
	AdmissionExempt []string `yaml:"admission_exempt"`
	// MaxPasswordChecks bounds password verifications running at once,
	// whoever they are for: each may hash with argon2id (64 MiB) or hold
	// an LDAP bind. 0: the number of CPUs, at least 2.
	MaxPasswordChecks int `yaml:"max_password_checks"`
	// KexAlgorithms are the key exchanges clients may negotiate, like
	// sshd_config's KexAlgorithms; no weaker than OpenSSH's own defaults:
	// the post-quantum hybrid first, nothing SHA-1.
	KexAlgorithms []string `yaml:"kex_algorithms"`
	// Ciphers clients may negotiate (sshd_config's Ciphers): AEAD first,
	// never CBC.
	Ciphers []string `yaml:"ciphers"`
	// MACs clients may negotiate (sshd_config's MACs): SHA-2 only,
	// encrypt-then-MAC first; AEAD ciphers use none.
	MACs []string `yaml:"macs"`
	// Banner is sent to clients before authentication (optional).
	Banner string `yaml:"banner"`
	// ProxyProtocolFrom lists the addresses (CIDRs) of load balancers that
	// send a PROXY protocol v1/v2 header. Connections from them must carry
	// one; connections from elsewhere must not. Empty: PROXY protocol off.
	ProxyProtocolFrom []string `yaml:"proxy_protocol_from"`
}

// DefaultGateway returns the gateway section's defaults. Name, the three
// deadlines and MaxPasswordChecks are derived after decoding (Derive).
func DefaultGateway() Gateway {
	return Gateway{
		Listen:               ":22",
		AdminSocket:          DefaultAdminSocket,
		MaxAuthTries:         6,
		LoginGraceTime:       60 * time.Second,
		MaxConnections:       10000,
		MaxStartups:          200,
		PerSourceMaxStartups: 20,
		PerSourceRate:        10,
		PerSourceBurst:       40,
		KexAlgorithms:        DefaultKexAlgorithms(),
		Ciphers:              DefaultCiphers(),
		MACs:                 DefaultMACs(),
	}
}

// Derive fills the defaults that depend on the machine or on other keys,
// after decoding (yamlconf.Deriver): Name is the host name; the deadlines
// nest, so a shorter login_grace_time (or auth_timeout) set in the file
// lowers the defaults of those inside it; MaxPasswordChecks is the number
// of CPUs, at least 2.
func (g *Gateway) Derive() {
	if g.Name == "" {
		g.Name, _ = os.Hostname()
	}
	if g.AuthTimeout == 0 {
		g.AuthTimeout = min(30*time.Second, g.LoginGraceTime)
	}
	if g.HandshakeTimeout == 0 {
		g.HandshakeTimeout = min(10*time.Second, g.AuthTimeout)
	}
	if g.MaxPasswordChecks == 0 {
		g.MaxPasswordChecks = max(2, runtime.NumCPU())
	}
}

// Validate reports every problem of the section, each as "gateway.key:
// problem" (errors.Join'ed).
func (g Gateway) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("gateway.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(g.Listen); err != nil {
		add("listen", "not host:port: %v", err)
	}
	g.validateAdmin(add)
	for i, a := range g.ProxyProtocolFrom {
		if _, err := parsePrefix(a); err != nil {
			add(fmt.Sprintf("proxy_protocol_from[%d]", i), "%v", err)
		}
	}
	if len(g.HostKeys) == 0 {
		add("host_keys", "at least one host key file is required (create one with 'frontdoor keygen')")
	}
	switch {
	case g.UserCAKey == "" && g.UserCAKMS == nil:
		add("user_ca_key", "required (or user_ca_kms): this gateway's user CA, which signs backend login certificates (create one with 'frontdoor keygen')")
	case g.UserCAKey != "" && g.UserCAKMS != nil:
		add("user_ca_kms", "set either user_ca_key or user_ca_kms, not both")
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"handshake_timeout", g.HandshakeTimeout}, {"auth_timeout", g.AuthTimeout}, {"login_grace_time", g.LoginGraceTime}} {
		if d.v <= 0 {
			add(d.key, "must be positive")
		}
	}
	if g.HandshakeTimeout > g.AuthTimeout || g.AuthTimeout > g.LoginGraceTime {
		add("auth_timeout", "want handshake_timeout (%s) ≤ auth_timeout (%s) ≤ login_grace_time (%s)",
			g.HandshakeTimeout, g.AuthTimeout, g.LoginGraceTime)
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"max_auth_tries", g.MaxAuthTries}, {"max_connections", g.MaxConnections}, {"max_startups", g.MaxStartups},
		{"per_source_max_startups", g.PerSourceMaxStartups}, {"per_source_burst", g.PerSourceBurst},
		{"max_password_checks", g.MaxPasswordChecks}} {
		if n.v < 1 {
			add(n.key, "must be at least 1")
		}
	}
	if g.PerSourceRate <= 0 {
		add("per_source_rate", "must be positive (connections per second)")
	}
	for i, a := range g.AdmissionExempt {
		if _, err := parsePrefix(a); err != nil {
			add(fmt.Sprintf("admission_exempt[%d]", i), "%v", err)
		}
	}
	for _, al := range []struct {
		key        string
		have, want []string
	}{{"kex_algorithms", g.KexAlgorithms, ssh.SupportedAlgorithms().KeyExchanges},
		{"ciphers", g.Ciphers, ssh.SupportedAlgorithms().Ciphers},
		{"macs", g.MACs, ssh.SupportedAlgorithms().MACs}} {
		if len(al.have) == 0 {
			add(al.key, "must not be empty")
		}
		for i, a := range al.have {
			if !slices.Contains(al.want, a) {
				add(fmt.Sprintf("%s[%d]", al.key, i), "%q is not supported or not secure (supported: %s)", a, strings.Join(al.want, ", "))
			}
		}
	}
	return errors.Join(errs...)
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
func (g Gateway) ProxyProtocolPrefixes() []netip.Prefix { return parsePrefixes(g.ProxyProtocolFrom) }

// AdmissionExemptPrefixes returns AdmissionExempt parsed (validated at load).
func (g Gateway) AdmissionExemptPrefixes() []netip.Prefix { return parsePrefixes(g.AdmissionExempt) }

// parsePrefixes parses a validated list of CIDRs and addresses.
func parsePrefixes(list []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range list {
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

// MaxSocketPath is the longest Unix socket path Linux binds (sun_path).
const MaxSocketPath = 107

// LoopbackHost reports whether a listen address's host is loopback only
// ("localhost", 127.0.0.0/8, ::1); "" and wildcards are not.
func LoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && a.IsLoopback()
}

// validateAdmin: the admin API is never reachable without a credential.
// The socket's credential is the peer's uid; TCP needs a token file or
// mutual TLS, and the TLS files come as a set.
func (g Gateway) validateAdmin(add func(key, format string, args ...any)) {
	if g.AdminSocketEnabled() && len(g.AdminSocket) > MaxSocketPath {
		add("admin_socket", "%d bytes is longer than a Unix socket path may be (%d)", len(g.AdminSocket), MaxSocketPath)
	}
	tcpOnly := []struct {
		key string
		set bool
	}{{"admin_token_file", g.AdminTokenFile != ""}, {"admin_tls_cert", g.AdminTLSCert != ""},
		{"admin_tls_key", g.AdminTLSKey != ""}, {"admin_client_ca", g.AdminClientCA != ""},
		{"admin_allowed_hosts", len(g.AdminAllowedHosts) > 0}, {"admin_metrics_public", g.AdminMetricsPublic},
		{"admin_client_names", len(g.AdminClientNames) > 0}, {"admin_readonly_client_names", len(g.AdminReadOnlyClientNames) > 0},
		{"admin_allow_plaintext", g.AdminAllowPlaintext}}
	if g.AdminListen == "" {
		for _, k := range tcpOnly {
			if k.set {
				add(k.key, "only used with gateway.admin_listen (the Unix socket authenticates by peer uid)")
			}
		}
		return
	}
	if h, _, err := net.SplitHostPort(g.AdminListen); err != nil {
		add("admin_listen", "not host:port: %v", err)
	} else if g.AdminTLSCert == "" && !LoopbackHost(h) && !g.AdminAllowPlaintext {
		add("admin_listen", "%q is not a loopback address and the admin API has no TLS: bearer tokens would cross the network "+
			"in clear text; set admin_tls_cert and admin_tls_key, listen on 127.0.0.1, or set admin_allow_plaintext: true "+
			"for a network nobody else can listen on", g.AdminListen)
	}
	if g.AdminTokenFile == "" && g.AdminClientCA == "" {
		add("admin_listen", "the admin API over TCP needs authentication: set admin_token_file (bearer tokens) "+
			"and/or admin_tls_cert, admin_tls_key and admin_client_ca (mutual TLS); or drop admin_listen and use admin_socket")
	}
	if (g.AdminTLSCert == "") != (g.AdminTLSKey == "") {
		key := "admin_tls_cert" // point at the one that is there
		if g.AdminTLSCert == "" {
			key = "admin_tls_key"
		}
		add(key, "admin_tls_cert and admin_tls_key go together")
	}
	if g.AdminClientCA != "" && g.AdminTLSCert == "" {
		add("admin_client_ca", "mutual TLS needs admin_tls_cert and admin_tls_key too")
	}
	if g.AdminClientCA != "" && len(g.AdminClientNames) == 0 && len(g.AdminReadOnlyClientNames) == 0 {
		add("admin_client_ca", "name the certificates that may use the admin API in admin_client_names (full admins) "+
			"and/or admin_readonly_client_names; [\"*\"] admits every certificate the CA signs")
	}
	if g.AdminClientCA == "" {
		for _, k := range []struct {
			key string
			set bool
		}{{"admin_client_names", len(g.AdminClientNames) > 0}, {"admin_readonly_client_names", len(g.AdminReadOnlyClientNames) > 0}} {
			if k.set {
				add(k.key, "only used with admin_client_ca (mutual TLS)")
			}
		}
	}
	seen := map[string]string{}
	for _, l := range []struct {
		key   string
		names []string
	}{{"admin_client_names", g.AdminClientNames}, {"admin_readonly_client_names", g.AdminReadOnlyClientNames}} {
		for i, n := range l.names {
			key := fmt.Sprintf("%s[%d]", l.key, i)
			if n != "*" && !names.Token.Valid(n) {
				add(key, "%q: want %s, or \"*\"", n, names.Token.Syntax)
				continue
			}
			if prev, dup := seen[strings.ToLower(n)]; dup {
				add(key, "%q is already listed in %s", n, prev)
				continue
			}
			seen[strings.ToLower(n)] = key
		}
	}
	for i, h := range g.AdminAllowedHosts {
		if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err != nil && !names.Host.Valid(strings.TrimSuffix(h, ".")) {
			add(fmt.Sprintf("admin_allowed_hosts[%d]", i), "%q is not a host name or IP address (no port, no scheme)", h)
		}
	}
}

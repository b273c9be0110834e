package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf"
	"golang.org/x/crypto/ssh"
)

// DefaultConfigPath is where `frontdoor agent` looks without --config.
const DefaultConfigPath = "/etc/frontdoor/agent.yaml"

// Config is the agent's YAML configuration.
type Config struct {
	// Node is the login node's name as users and routing know it
	// (alice+NODE). It is also the agent's cluster member name, so
	// cluster.name is ignored. Default: the host name.
	Node string `yaml:"node"`
	// Pool is the pool the node belongs to (policy rules grant pools).
	Pool string `yaml:"pool"`
	// SSHAddr is the node's sshd as gateways dial it, host:port.
	SSHAddr string `yaml:"ssh_addr"`
	// ProbeAddr is where the agent checks for an SSH banner; default
	// SSHAddr. Its port also selects the TCP connections counted as
	// sessions.
	ProbeAddr string `yaml:"probe_addr"`
	// MaxSessions caps live sessions on the node; 0 means no cap.
	MaxSessions int `yaml:"max_sessions"`

	// Interval is how often health is published even without change.
	Interval time.Duration `yaml:"interval"`
	// ProbeInterval is how often the agent measures, probes sshd and checks
	// the drain file; a significant change is published at once.
	ProbeInterval time.Duration `yaml:"probe_interval"`
	// ProbeTimeout bounds the sshd banner check.
	ProbeTimeout time.Duration `yaml:"probe_timeout"`

	// DrainFile marks the node draining while it exists
	// (`frontdoor agent drain` creates it).
	DrainFile string `yaml:"drain_file"`
	// MetricsFile, if set, replaces /proc measurements with numbers read
	// from this YAML/JSON file (see FileSource): the local stack gives each
	// simulated node on one machine its own load this way.
	MetricsFile string `yaml:"metrics_file"`
	// ProcRoot is where /proc is mounted (tests point it elsewhere).
	ProcRoot string `yaml:"proc_root"`

	// HostKey is the node's SSH host private key: the agent signs its
	// health with it, and gateways take the health only if the key is this
	// node's host key by name in their backend known_hosts. So an agent
	// speaks for its own node only. HostCertificate, if set, is the host
	// certificate to present with it (for gateways that trust a host CA).
	HostKey         string `yaml:"host_key"`
	HostCertificate string `yaml:"host_certificate"`

	// SSHDPath and SSHDConfig are the node's sshd and its configuration
	// file: every SSHDCheckInterval the agent asks sshd its version and,
	// on OpenSSH ≥ 9.8, its effective configuration (`sshd -T -f
	// SSHDConfig`), and warns (log, and a warning the gateways show) when
	// PerSourcePenalties are on without every gateway in
	// PerSourcePenaltyExemptList (see sshdcheck.go). SSHDCheckInterval 0
	// turns the check off. Defaults: /usr/sbin/sshd, /etc/ssh/sshd_config,
	// 10m.
	SSHDPath          string        `yaml:"sshd_path"`
	SSHDConfig        string        `yaml:"sshd_config"`
	SSHDCheckInterval time.Duration `yaml:"sshd_check_interval"`
	// GatewayAddrs are the addresses (or names) the node's sshd sees the
	// gateways connect from, for that check. Default: the hosts of
	// cluster.join; set it when the gateways reach the nodes from other
	// addresses than the one the agent sends to.
	GatewayAddrs []string `yaml:"gateway_addrs"`

	Cluster cluster.Config `yaml:"cluster"`
}

// DefaultConfig returns the defaults for every field.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		Node:          host,
		Pool:          "default",
		SSHAddr:       net.JoinHostPort(host, "22"),
		Interval:      5 * time.Second,
		ProbeInterval: time.Second,
		ProbeTimeout:  2 * time.Second,
		DrainFile:     "/var/lib/frontdoor/drain",
		ProcRoot:      "/proc",
		HostKey:       "/etc/ssh/ssh_host_ed25519_key",
		SSHDPath:      "/usr/sbin/sshd",
		SSHDConfig:    "/etc/ssh/sshd_config",

		SSHDCheckInterval: 10 * time.Minute,
		Cluster:           cluster.DefaultConfig(),
	}
}

// LoadConfig reads a YAML file over DefaultConfig; unknown keys are errors.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("agent config: %w", err)
	}
	cfg := DefaultConfig()
	if _, err := yamlconf.Decode(path, b, &cfg); err != nil {
		return Config{}, fmt.Errorf("agent config: %w", err)
	}
	cfg.normalize()
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("agent config %s: %w", path, err)
	}
	return cfg, nil
}

// normalize fills derived fields.
func (c *Config) normalize() {
	c.Cluster.Name = c.Node
	if c.ProbeAddr == "" {
		c.ProbeAddr = c.SSHAddr
	}
}

// Validate reports a configuration the agent cannot run with.
func (c Config) Validate() error {
	var errs []error
	if c.Node == "" {
		errs = append(errs, errors.New("node: must be set"))
	}
	if c.Pool == "" {
		errs = append(errs, errors.New("pool: must be set"))
	}
	if _, _, err := net.SplitHostPort(c.SSHAddr); err != nil {
		errs = append(errs, fmt.Errorf("ssh_addr: %w", err))
	}
	if c.ProbeAddr != "" {
		if _, _, err := net.SplitHostPort(c.ProbeAddr); err != nil {
			errs = append(errs, fmt.Errorf("probe_addr: %w", err))
		}
	}
	if c.MaxSessions < 0 {
		errs = append(errs, errors.New("max_sessions: must not be negative"))
	}
	if c.Interval <= 0 || c.ProbeInterval <= 0 || c.ProbeTimeout <= 0 {
		errs = append(errs, errors.New("interval, probe_interval, probe_timeout: must be positive"))
	}
	if c.DrainFile == "" {
		errs = append(errs, errors.New("drain_file: must be set"))
	}
	if c.SSHDCheckInterval < 0 {
		errs = append(errs, errors.New("sshd_check_interval: must not be negative (0 turns the check off)"))
	}
	if c.SSHDCheckInterval > 0 && c.SSHDPath == "" {
		errs = append(errs, errors.New("sshd_path: must be set while sshd_check_interval is not 0"))
	}
	for i, g := range c.GatewayAddrs {
		if g == "" || strings.ContainsAny(g, " /:") && net.ParseIP(g) == nil {
			errs = append(errs, fmt.Errorf("gateway_addrs[%d]: %q is not an address or host name", i, g))
		}
	}
	if c.HostKey == "" && !c.Cluster.Insecure {
		errs = append(errs, errors.New("host_key: must be set: the agent signs its health with the node's host key"))
	}
	if err := c.Cluster.ValidateFor(cluster.RoleAgent); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// LoadHostKey reads the host key (and certificate) the agent signs with.
func (c Config) LoadHostKey() (ssh.Signer, error) {
	b, err := os.ReadFile(c.HostKey)
	if err != nil {
		return nil, fmt.Errorf("host_key: %w (the agent signs its health with the node's host key: run it as root or point host_key at a key it may read)", err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("host_key %s: %w", c.HostKey, err)
	}
	if c.HostCertificate == "" {
		return s, nil
	}
	cb, err := os.ReadFile(c.HostCertificate)
	if err != nil {
		return nil, fmt.Errorf("host_certificate: %w", err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(cb)
	if err != nil {
		return nil, fmt.Errorf("host_certificate %s: %w", c.HostCertificate, err)
	}
	cert, ok := pub.(*ssh.Certificate)
	if !ok || cert.CertType != ssh.HostCert {
		return nil, fmt.Errorf("host_certificate %s: not a host certificate", c.HostCertificate)
	}
	cs, err := ssh.NewCertSigner(cert, s)
	if err != nil {
		return nil, fmt.Errorf("host_certificate %s: %w", c.HostCertificate, err)
	}
	return cs, nil
}

package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf"
	"golang.org/x/crypto/ssh"
)

// DefaultConfigPath is where `frontdoor agent` looks without --config.
const DefaultConfigPath = "/etc/frontdoor/agent.yaml"

// Config is the agent's YAML configuration (/etc/frontdoor/agent.yaml).
type Config struct {
	// Node is the login node's name as users and routing know it
	// (alice+NODE), and the agent's gossip member name: cluster.name is
	// ignored. Empty: the host name. It must be the name the gateways
	// list the node under, and their known_hosts must have its host key
	// under that name.
	Node string `yaml:"node"`
	// Pool is the pool the node belongs to (policy rules grant pools).
	Pool string `yaml:"pool"`
	// SSHAddr is the node's sshd as gateways dial it, host:port. Empty:
	// the host name, port 22.
	SSHAddr string `yaml:"ssh_addr"`
	// ProbeAddr is where the agent checks for an SSH banner; its port
	// also selects the TCP connections counted as sessions. Empty:
	// SSHAddr.
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
	// from this YAML/JSON file (load1, cpus, mem_avail_frac, sessions,
	// ...): the local stack gives each simulated node on one machine its
	// own load this way.
	MetricsFile string `yaml:"metrics_file"`
	// ProcRoot is where /proc is mounted (tests point it elsewhere).
	ProcRoot string `yaml:"proc_root"`

	// HostKey is the node's SSH host private key: the agent signs its
	// health with it, and gateways take the health only if the key is this
	// node's host key by name in their backend known_hosts. So an agent
	// speaks for its own node only.
	HostKey string `yaml:"host_key"`
	// HostCertificate, if set, is the host certificate to present with
	// HostKey (for gateways that trust a host CA).
	HostCertificate string `yaml:"host_certificate"`

	// SSHDPath is the node's sshd: every SSHDCheckInterval the agent asks
	// it its version and, on OpenSSH ≥ 9.8, its effective configuration
	// (`sshd -T -f SSHDConfig`), and warns (log, and a warning the gateways
	// show) when PerSourcePenalties are on without every gateway in
	// PerSourcePenaltyExemptList (see sshdcheck.go).
	SSHDPath string `yaml:"sshd_path"`
	// SSHDConfig is the node's sshd configuration file, for that check.
	SSHDConfig string `yaml:"sshd_config"`
	// SSHDCheckInterval is how often that check runs; 0 turns it off.
	SSHDCheckInterval time.Duration `yaml:"sshd_check_interval"`
	// GatewayAddrs are the addresses (or names) the node's sshd sees the
	// gateways connect from, for that check. Empty: the hosts of
	// cluster.join; set it when the gateways reach the nodes from other
	// addresses than the one the agent sends to.
	GatewayAddrs []string `yaml:"gateway_addrs"`

	// Cluster is where the agent sends its signed health: the gateways
	// (cluster.join) and the gossip keys; without gateway_keys; its name
	// is always Node.
	Cluster cluster.Config `yaml:"cluster"`
}

// DefaultConfig returns the defaults for every field.
func DefaultConfig() Config {
	return Config{
		Pool:          "default",
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

// Derive fills the defaults that depend on the machine or on other keys,
// after decoding (yamlconf.Deriver): Node and SSHAddr from the host name,
// ProbeAddr from SSHAddr; Cluster.Name is Node.
func (c *Config) Derive() {
	host, _ := os.Hostname()
	if c.Node == "" {
		c.Node = host
	}
	if c.SSHAddr == "" {
		c.SSHAddr = net.JoinHostPort(host, "22")
	}
	if c.ProbeAddr == "" {
		c.ProbeAddr = c.SSHAddr
	}
	c.Cluster.Name = c.Node
}

// LoadConfig reads a YAML file over DefaultConfig, derives what it leaves
// out and validates; every error names the file and line.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("agent config: %w", err)
	}
	cfg := DefaultConfig()
	lines, err := yamlconf.Decode(path, b, &cfg)
	if err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, yamlconf.Locate(path, lines, err)
	}
	return cfg, nil
}

// Validate reports a configuration the agent cannot run with, each error
// as "key: problem" (errors.Join'ed).
func (c Config) Validate() error {
	var errs []error
	if !names.Node.Valid(c.Node) {
		errs = append(errs, fmt.Errorf("node: %q is not a valid node name (%s)", c.Node, names.Node.Syntax))
	}
	if !names.Node.Valid(c.Pool) {
		errs = append(errs, fmt.Errorf("pool: %q is not a valid pool name (%s)", c.Pool, names.Node.Syntax))
	}
	if _, _, err := net.SplitHostPort(c.SSHAddr); err != nil {
		errs = append(errs, fmt.Errorf("ssh_addr: %w", err))
	}
	if _, _, err := net.SplitHostPort(c.ProbeAddr); err != nil {
		errs = append(errs, fmt.Errorf("probe_addr: %w", err))
	}
	if c.MaxSessions < 0 {
		errs = append(errs, errors.New("max_sessions: must not be negative"))
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"interval", c.Interval}, {"probe_interval", c.ProbeInterval}, {"probe_timeout", c.ProbeTimeout}} {
		if d.d <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive", d.key))
		}
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
	if c.Cluster.Name != c.Node {
		errs = append(errs, errors.New("cluster.name: must be the node's name (Derive sets it)"))
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

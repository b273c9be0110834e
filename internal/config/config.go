// Package config loads and validates the gateway configuration file. Every
// validation error names the file and line it is about, so an admin fixing a
// typo at 2 a.m. goes straight to it.
//
// Each section belongs to the package that uses it: the type, its
// DefaultConfig() and its Validate() live there (cluster.Config,
// route.Config, slurm.Config, ...); this package holds the gateway's own
// sections (gateway, backend, nodes, audit, log), puts the sections
// together and checks what one section says about another (a policy rule
// naming a pool no node is in). Defaults are filled in one way: Load starts
// from DefaultConfig() and decodes the file over it (see yamlconf);
// optional sections are pointers, nil when the file does not have them.
// docs/configuration.md is generated from these types (`make docs`).
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/mfa"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/internal/throttle"
	"github.com/frontdoor-hpc/frontdoor/internal/usage"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf"
)

// DefaultPath is where the gateway looks for its configuration.
const DefaultPath = "/etc/frontdoor/gateway.yaml"

// Config is the whole gateway configuration (/etc/frontdoor/gateway.yaml).
// Start from DefaultConfig; Load does.
type Config struct {
	// Gateway is the client-facing SSH server.
	Gateway Gateway `yaml:"gateway"`
	// Backend is how the gateway logs in to login nodes.
	Backend Backend `yaml:"backend"`
	// Directory is the identity source: who users are, their groups and
	// keys.
	Directory source.Config `yaml:"directory"`
	// Nodes are the login nodes known from the configuration. With a
	// cluster section they are the inventory: health is taken only for
	// nodes listed here (or found by discovery).
	Nodes []node.Node `yaml:"nodes"`
	// Discovery finds login nodes through the SageMaker HyperPod API, in
	// addition to Nodes.
	Discovery *discovery.Config `yaml:"discovery"`
	// Cluster is the gossip membership with the other gateways and the
	// login-node agents: health, sessions, affinity, drains and bans.
	// Without it the gateway routes over Nodes alone, assumed healthy.
	Cluster *cluster.Config `yaml:"cluster"`
	// Route tunes node choice: staleness, stickiness, score weights.
	Route route.Config `yaml:"route"`
	// Policy says who may log in and what they get; first matching rule
	// wins.
	Policy policy.Config `yaml:"policy"`
	// Throttle limits authentication failures per user and per source.
	Throttle throttle.Config `yaml:"throttle"`
	// Slurm is how to reach the cluster's Slurm (for `frontdoor slurm`,
	// and GPU use in login banners). Without it frontdoor does not talk to
	// Slurm.
	Slurm *slurm.Config `yaml:"slurm"`
	// Audit is where audit events go besides the log.
	Audit Audit `yaml:"audit"`
	// Usage prices GPU and login-node hours and holds the accounts'
	// budgets, for `frontdoor usage` and budget lines in banners.
	Usage usage.Config `yaml:"usage"`
	// Log is the process log.
	Log Log `yaml:"log"`
	// MFA is the RADIUS servers that check a second factor, for policy
	// rules with mfa: required or optional. Without it no rule may ask
	// for one.
	MFA *mfa.Config `yaml:"mfa"`

	// path and lines remember where things were written, for error messages.
	path  string
	lines yamlconf.Lines
}

// DefaultConfig returns every section's defaults; the optional sections
// are nil.
func DefaultConfig() Config {
	return Config{
		Gateway:   DefaultGateway(),
		Backend:   DefaultBackend(),
		Directory: source.DefaultConfig(),
		Route:     route.DefaultConfig(),
		Policy:    policy.DefaultConfig(),
		Throttle:  throttle.DefaultConfig(),
		Usage:     usage.DefaultConfig(),
		Log:       DefaultLog(),
	}
}

// Derive fills what one section's defaults take from another, after
// decoding (yamlconf.Deriver, called after every section's own Derive):
// the gateway's gossip member name is its gateway.name unless
// cluster.name says otherwise.
func (c *Config) Derive() {
	if c.Cluster != nil && c.Cluster.Name == "" {
		c.Cluster.Name = c.Gateway.Name
	}
}

// Audit configures the audit trail.
type Audit struct {
	// File receives one JSON object per line. Empty: audit events go to the
	// log only.
	File string `yaml:"file"`
	// S3 ships audit events to a bucket as well.
	S3 *s3sink.Config `yaml:"s3"`
}

// Log configures the process log.
type Log struct {
	// Level is the least severe level logged: debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is json (one object per line) or text.
	Format string `yaml:"format"`
}

// DefaultLog returns the log section's defaults.
func DefaultLog() Log { return Log{Level: "info", Format: "json"} }

// Validate reports every problem of the section, each as "log.key:
// problem" (errors.Join'ed).
func (l Log) Validate() error {
	var errs []error
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, l.Level) {
		errs = append(errs, fmt.Errorf("log.level: unknown level %q (want debug, info, warn or error)", l.Level))
	}
	if l.Format != "json" && l.Format != "text" {
		errs = append(errs, fmt.Errorf("log.format: unknown format %q (want json or text)", l.Format))
	}
	return errors.Join(errs...)
}

// Pools lists the pools of the configured nodes, sorted.
func (c *Config) Pools() []string {
	out := node.Pools(c.Nodes)
	slices.Sort(out)
	return out
}

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
	c := DefaultConfig()
	lines, err := yamlconf.Decode(path, data, &c)
	if err != nil {
		return nil, err
	}
	c.path, c.lines = path, lines
	c.resolvePaths(filepath.Dir(path))
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Line returns the line a key path was written on, or 0.
func (c *Config) Line(path string) int { return c.lines.Line(path) }

// Errorf builds an error pointing at the line of a key path.
func (c *Config) Errorf(path, format string, args ...any) error {
	return &Error{File: c.path, Line: c.Line(path), Key: path, Msg: fmt.Sprintf(format, args...)}
}

// Error is one validation problem, located in the file.
type Error = yamlconf.Error

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
	if c.MFA != nil {
		abs(&c.MFA.SecretFile)
	}
	if c.Audit.S3 != nil {
		abs(&c.Audit.S3.SpoolDir)
	}
	if c.Cluster != nil {
		abs(&c.Cluster.LocksFile)
	}
}

// validate runs every section's Validate, locating its problems in the
// file, then checks what sections say about each other.
func (c *Config) validate() error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	section := func(err error) {
		if err != nil {
			errs = append(errs, yamlconf.Locate(c.path, c.lines, err))
		}
	}
	section(c.Gateway.Validate())
	if c.Gateway.UserCAKMS != nil {
		section(c.Gateway.UserCAKMS.Validate())
	}
	section(c.Backend.Validate())
	section(c.Directory.Validate())
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
	if c.Cluster != nil {
		section(c.Cluster.ValidateFor(cluster.RoleGateway))
		if len(c.Nodes) == 0 && !c.Cluster.Insecure && c.Discovery == nil {
			add(c.Errorf("nodes", "no login nodes: with gossip, health is taken only for the nodes listed here (name, addr, pool) or found by discovery, at that address and in that pool"))
		}
	} else if len(c.Nodes) == 0 && c.Discovery == nil {
		add(c.Errorf("nodes", "no login nodes: list them here, configure discovery, or a cluster section for gossip"))
	}
	if c.Discovery != nil {
		section(c.Discovery.Validate())
	}
	section(c.Route.Validate())
	var known policy.Known
	if len(c.Nodes) > 0 {
		known.Pools = c.Pools()
	}
	if c.Slurm != nil && len(c.Slurm.Partitions) > 0 {
		known.Partitions = c.Slurm.Partitions
	}
	known.MFA = c.MFA != nil
	section(c.Policy.Validate(known))
	if c.MFA != nil {
		section(c.MFA.Validate())
		if c.MFA.Timeout >= c.Gateway.LoginGraceTime {
			add(c.Errorf("mfa.timeout", "%v is not shorter than gateway.login_grace_time (%v), which bounds the whole login", c.MFA.Timeout, c.Gateway.LoginGraceTime))
		}
	}
	section(c.Throttle.Validate())
	if c.Slurm != nil {
		section(c.Slurm.Validate())
	}
	if c.Audit.S3 != nil {
		section(c.Audit.S3.Validate())
		if !names.Gateway.Valid(c.Gateway.Name) {
			add(c.Errorf("gateway.name", "%q cannot be part of an audit object key (%s)", c.Gateway.Name, names.Gateway.Syntax))
		}
	}
	section(c.Usage.Validate())
	section(c.Log.Validate())
	return errors.Join(errs...)
}

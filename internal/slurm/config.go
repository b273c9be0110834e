package slurm

import (
	"errors"
	"fmt"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Config is the `slurm:` section of the gateway configuration: how
// frontdoor reaches the cluster's Slurm (its client commands sacctmgr,
// sacct and squeue with parseable output, each with a timeout), for
// `frontdoor slurm` and for GPU use in login banners. Without the section
// frontdoor does not talk to Slurm.
type Config struct {
	// Conf is the slurm.conf the commands use (SLURM_CONF). Empty:
	// Slurm's own default.
	Conf string `yaml:"conf"`
	// BinDir holds sacctmgr, sacct and squeue. Empty: $PATH.
	BinDir string `yaml:"bin_dir"`
	// Cluster is the Slurm cluster name in accounting. Empty: the cluster
	// of slurm.conf.
	Cluster string `yaml:"cluster"`
	// ParentAccount is the account frontdoor creates its accounts under,
	// and the mark of what it manages: accounts elsewhere are left alone.
	ParentAccount string `yaml:"parent_account"`
	// Partitions are the cluster's partitions; policy rules may name only
	// these. Empty: rules are not checked against a list.
	Partitions []string `yaml:"partitions"`
	// Timeout bounds every Slurm command.
	Timeout time.Duration `yaml:"timeout"`
	// SyncInterval is how often `frontdoor slurm sync` reconciles.
	SyncInterval time.Duration `yaml:"sync_interval"`
	// WatchInterval is how often the sync asks the directory whether
	// anything changed (AD: one rootDSE read), reconciling at once if so.
	WatchInterval time.Duration `yaml:"watch_interval"`
	// UsageCache is how long GPU use shown in login banners is cached.
	UsageCache time.Duration `yaml:"usage_cache"`
	// UsageTimeout is how long a login waits for GPU use at most; then
	// the banner says "unknown": a login never waits on a slow Slurm.
	UsageTimeout time.Duration `yaml:"usage_timeout"`
}

// DefaultConfig returns the defaults: Slurm's own slurm.conf and $PATH,
// accounts under "frontdoor", 20s per command, a sync every 10 minutes
// and a directory check every 30s, banner GPU use cached 30s and waited
// for at most 1s.
func DefaultConfig() Config {
	return Config{
		ParentAccount: "frontdoor",
		Timeout:       20 * time.Second,
		SyncInterval:  10 * time.Minute,
		WatchInterval: 30 * time.Second,
		UsageCache:    30 * time.Second,
		UsageTimeout:  time.Second,
	}
}

// SetDefaults sets c to DefaultConfig (yamlconf.Defaulter: a slurm
// section the file has starts from it).
func (c *Config) SetDefaults() { *c = DefaultConfig() }

// Validate reports a section that cannot work, each error as
// "slurm.key: problem" (errors.Join'ed).
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("slurm.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if !names.SlurmAccount.Valid(c.ParentAccount) {
		add("parent_account", "%q is not a valid Slurm account name (%s)", c.ParentAccount, names.SlurmAccount.Syntax)
	} else if c.ParentAccount == "root" {
		add("parent_account", "must not be root: frontdoor would manage every account")
	}
	if c.Cluster != "" && !names.SlurmName.Valid(c.Cluster) {
		add("cluster", "%q is not a valid Slurm cluster name (%s)", c.Cluster, names.SlurmName.Syntax)
	}
	for i, p := range c.Partitions {
		if !names.SlurmName.Valid(p) {
			add(fmt.Sprintf("partitions[%d]", i), "%q is not a valid partition name (%s)", p, names.SlurmName.Syntax)
		}
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"timeout", c.Timeout}, {"sync_interval", c.SyncInterval}, {"watch_interval", c.WatchInterval},
		{"usage_cache", c.UsageCache}, {"usage_timeout", c.UsageTimeout}} {
		if d.d <= 0 {
			add(d.key, "must be positive")
		}
	}
	return errors.Join(errs...)
}

// Client is a Client for the commands c names, each bounded by c.Timeout.
func (c Config) Client() *Client {
	return &Client{Conf: c.Conf, Cluster: c.Cluster, BinDir: c.BinDir, Timeout: c.Timeout}
}

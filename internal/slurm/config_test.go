package slurm

import (
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf/yamlconftest"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   string // "" when valid
	}{
		{"partitions and cluster", func(c *Config) { c.Partitions, c.Cluster = []string{"h100", "General"}, "hyperpod-1" }, ""},
		{"mixed-case parent", func(c *Config) { c.ParentAccount = "FrontDoor" }, `slurm.parent_account: "FrontDoor" is not a valid Slurm account name`},
		{"root parent", func(c *Config) { c.ParentAccount = "root" }, "slurm.parent_account: must not be root"},
		{"empty parent", func(c *Config) { c.ParentAccount = "" }, "slurm.parent_account"},
		{"cluster", func(c *Config) { c.Cluster = "a b" }, `slurm.cluster: "a b" is not a valid Slurm cluster name`},
		{"partition", func(c *Config) { c.Partitions = []string{"ok", "a,b"} }, `slurm.partitions[1]: "a,b" is not a valid partition name`},
		{"timeout", func(c *Config) { c.Timeout = 0 }, "slurm.timeout: must be positive"},
		{"sync", func(c *Config) { c.SyncInterval = -time.Second }, "slurm.sync_interval: must be positive"},
		{"watch", func(c *Config) { c.WatchInterval = 0 }, "slurm.watch_interval"},
		{"usage cache", func(c *Config) { c.UsageCache = 0 }, "slurm.usage_cache"},
		{"usage timeout", func(c *Config) { c.UsageTimeout = 0 }, "slurm.usage_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.change(&c)
			yamlconftest.Problem(t, c.Validate(), tc.want)
		})
	}
	c := DefaultConfig()
	c.Conf, c.Cluster, c.BinDir = "/etc/slurm/slurm.conf", "c1", "/opt/slurm/bin"
	if cl := c.Client(); *cl != (Client{Conf: c.Conf, Cluster: "c1", BinDir: c.BinDir, Timeout: 20 * time.Second}) {
		t.Errorf("client %+v", cl)
	}
}

package usage

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Config is the `usage:` section of the gateway configuration: what things
// cost and what each account may spend.
type Config struct {
	// Rates price GPU-hours and login-node hours.
	Rates Rates `yaml:"rates"`
	// Budgets by Slurm account.
	Budgets map[string]Budget `yaml:"budgets"`
	// CapacityGPUs is the cluster's GPU count, for idle GPU-hours. 0: read
	// it from Slurm now (sinfo GRES), which is wrong for a past window in
	// which the cluster grew or shrank.
	CapacityGPUs int `yaml:"capacity_gpus"`
	// CapacityInstanceType prices idle GPU-hours (one of
	// rates.instance_types). Empty: idle GPU-hours are shown unpriced.
	CapacityInstanceType string `yaml:"capacity_instance_type"`
	// Currency labels every amount (the rates' currency): a three-letter
	// code.
	Currency string `yaml:"currency"`
	// AuditLookback is how far before the window audit records are read
	// for sessions that started earlier and overlap it; 0 to 8784h.
	AuditLookback time.Duration `yaml:"audit_lookback"`
	// OpenSessionMax caps a session without a session.end record (still
	// running, or its gateway crashed): it counts until the window's end
	// or now, but at most this long after its start; 1m to 8784h.
	OpenSessionMax time.Duration `yaml:"open_session_max"`
}

// DefaultConfig returns the defaults: nothing priced, amounts in USD,
// audit records read a week before the window, an unfinished session
// counted for at most a day.
func DefaultConfig() Config {
	return Config{Currency: "USD", AuditLookback: 7 * 24 * time.Hour, OpenSessionMax: 24 * time.Hour}
}

// Rates are configured prices per hour, in Config.Currency.
type Rates struct {
	// InstanceTypes by name (ml.p5.48xlarge): the hourly price and GPUs of
	// one instance. A GPU-hour costs hourly ÷ gpus.
	InstanceTypes map[string]InstanceRate `yaml:"instance_types"`
	// Partitions maps a Slurm partition to the instance type of its nodes
	// (HyperPod: one instance group per partition).
	Partitions map[string]string `yaml:"partitions"`
	// DefaultGPUHourly prices a GPU-hour in a partition not listed. 0:
	// such GPU-hours are shown unpriced (and said so).
	DefaultGPUHourly float64 `yaml:"default_gpu_hourly"`
	// LoginNodeHourly prices one login node for an hour; its hours are
	// shared among the users on it at the time.
	LoginNodeHourly float64 `yaml:"login_node_hourly"`
}

// InstanceRate is one instance type's price.
type InstanceRate struct {
	// Hourly is the price of one instance for an hour (on-demand or
	// reserved); required.
	Hourly float64 `yaml:"hourly"`
	// GPUs is the number of GPUs of one instance, 1 to 64.
	GPUs int `yaml:"gpus"`
}

// Budget is one account's spending limit.
type Budget struct {
	// Monthly is the amount per calendar month; a window is charged the
	// covered fraction of each month it touches.
	Monthly float64 `yaml:"monthly"`
	// WarnAt is the fraction of the budget at which warnings start, in
	// (0, 1].
	WarnAt float64 `yaml:"warn_at"`
}

// DefaultWarnAt is a budget's warn_at unless it says otherwise.
const DefaultWarnAt = 0.8

// SetDefaults sets b to a budget's defaults (yamlconf.Defaulter: every
// budgets entry starts from them).
func (b *Budget) SetDefaults() { *b = Budget{WarnAt: DefaultWarnAt} }

var (
	// instanceTypeRE: ml.p5.48xlarge, p4d.24xlarge.
	instanceTypeRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*(\.[a-z0-9-]+)+$`)
	currencyRE     = regexp.MustCompile(`^[A-Z]{3}$`)
)

// Validate reports a section that cannot work, each error as
// "usage.key: problem" (errors.Join'ed, sorted by key).
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("usage.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	price := func(key string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e6 {
			add(key, "must be a price between 0 and 1000000 per hour")
		}
	}
	for _, name := range sortedKeys(c.Rates.InstanceTypes) {
		r := c.Rates.InstanceTypes[name]
		key := "rates.instance_types." + name
		if !instanceTypeRE.MatchString(name) {
			add(key, "%q is not an instance type name (like ml.p5.48xlarge)", name)
		}
		price(key+".hourly", r.Hourly)
		if r.Hourly == 0 {
			add(key+".hourly", "required (the on-demand or reserved price of one instance)")
		}
		if r.GPUs < 1 || r.GPUs > 64 {
			add(key+".gpus", "must be between 1 and 64 (GPUs per instance)")
		}
	}
	for _, p := range sortedKeys(c.Rates.Partitions) {
		it := c.Rates.Partitions[p]
		key := "rates.partitions." + p
		if !names.SlurmName.Valid(p) {
			add(key, "%q is not a Slurm partition name (%s)", p, names.SlurmName.Syntax)
		}
		if _, ok := c.Rates.InstanceTypes[it]; !ok {
			add(key, "instance type %q is not in rates.instance_types", it)
		}
	}
	price("rates.default_gpu_hourly", c.Rates.DefaultGPUHourly)
	price("rates.login_node_hourly", c.Rates.LoginNodeHourly)
	for _, a := range sortedKeys(c.Budgets) {
		b := c.Budgets[a]
		key := "budgets." + a
		if !names.SlurmAccount.Valid(a) {
			add(key, "%q is not a Slurm account name (%s)", a, names.SlurmAccount.Syntax)
		}
		if math.IsNaN(b.Monthly) || b.Monthly <= 0 || b.Monthly > 1e12 {
			add(key+".monthly", "must be a positive amount")
		}
		if math.IsNaN(b.WarnAt) || b.WarnAt <= 0 || b.WarnAt > 1 {
			add(key+".warn_at", "must be a fraction in (0, 1], like 0.8")
		}
	}
	if c.CapacityGPUs < 0 || c.CapacityGPUs > 1_000_000 {
		add("capacity_gpus", "must be between 0 (from Slurm) and 1000000")
	}
	if c.CapacityInstanceType != "" {
		if _, ok := c.Rates.InstanceTypes[c.CapacityInstanceType]; !ok {
			add("capacity_instance_type", "instance type %q is not in rates.instance_types", c.CapacityInstanceType)
		}
	}
	if !currencyRE.MatchString(c.Currency) {
		add("currency", "%q is not a three-letter currency code (like USD)", c.Currency)
	}
	if c.AuditLookback < 0 || c.AuditLookback > 366*24*time.Hour {
		add("audit_lookback", "must be between 0 and 8784h")
	}
	if c.OpenSessionMax < time.Minute || c.OpenSessionMax > 366*24*time.Hour {
		add("open_session_max", "must be between 1m and 8784h")
	}
	return errors.Join(errs...)
}

// GPUHourly is the price of one GPU-hour in partition, and whether one is
// configured.
func (c Config) GPUHourly(partition string) (float64, bool) {
	if it, ok := c.Rates.Partitions[partition]; ok {
		if r, ok := c.Rates.InstanceTypes[it]; ok && r.GPUs > 0 {
			return r.Hourly / float64(r.GPUs), true
		}
	}
	if c.Rates.DefaultGPUHourly > 0 {
		return c.Rates.DefaultGPUHourly, true
	}
	return 0, false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

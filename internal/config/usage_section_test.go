package config

import (
	"strings"
	"testing"
	"time"
)

func TestUsageSection(t *testing.T) {
	y := good + `usage:
  rates:
    instance_types:
      ml.p5.48xlarge: {hourly: 98.32, gpus: 8}
    partitions:
      h100: ml.p5.48xlarge
    login_node_hourly: 0.5
  budgets:
    nlp: {monthly: 5000}
  capacity_gpus: 16
`
	c, err := Parse("gateway.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := c.Usage
	if u.Currency != "USD" || u.Budgets["nlp"].WarnAt != 0.8 || u.OpenSessionMax != 24*time.Hour || u.CapacityGPUs != 16 {
		t.Errorf("usage defaults: %+v", u)
	}
	if p, ok := u.GPUHourly("h100"); !ok || p != 98.32/8 {
		t.Errorf("h100 GPU-hour: %v", p)
	}
	if c, err := Parse("gateway.yaml", []byte(good)); err != nil || len(c.Usage.Budgets) > 0 || c.Usage.Currency != "USD" {
		t.Errorf("config without usage: %+v %v", c.Usage, err)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"gpus", "gpus: 8}", "gpus: 0}", `gateway.yaml:21: usage.rates.instance_types.ml.p5.48xlarge.gpus: must be between 1 and 64`},
		{"partition", "h100: ml.p5.48xlarge", "h100: ml.p4d.24xlarge", `gateway.yaml:23: usage.rates.partitions.h100: instance type "ml.p4d.24xlarge" is not in rates.instance_types`},
		{"price", "login_node_hourly: 0.5", "login_node_hourly: -2", `gateway.yaml:24: usage.rates.login_node_hourly: must be a price`},
		{"budget", "{monthly: 5000}", "{monthly: 5000, warn_at: 2}", `gateway.yaml:26: usage.budgets.nlp.warn_at: must be a fraction`},
		{"capacity", "capacity_gpus: 16", "capacity_gpus: -1", `gateway.yaml:27: usage.capacity_gpus`},
		{"typo", "capacity_gpus: 16", "capacity_gpu: 16", `gateway.yaml:27: usage.capacity_gpu: unknown key (did you mean "capacity_gpus"?)`},
		{"type", "{monthly: 5000}", "{monthly: lots}", `gateway.yaml:26: usage.budgets.nlp.monthly`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("gateway.yaml", []byte(strings.Replace(y, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

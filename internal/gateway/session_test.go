package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

func visionDecision(t *testing.T, jobDefaults bool) policy.Decision {
	t.Helper()
	cfg := policy.Config{Rules: []policy.Rule{{Name: "vision", Groups: []string{"vision-lab"}, Pools: []string{"gpu"},
		Slurm: &policy.Slurm{Account: "vision", Partitions: []string{"general", "h100"}, DefaultPartition: "h100",
			GPUsPerUser: 4, GPUsPerAccount: 8, SetJobDefaults: jobDefaults}}}}
	d, err := cfg.Evaluate("bob", []string{"vision-lab"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSessionEnv(t *testing.T) {
	n := node.Node{Name: "login3", Pool: "gpu", Addr: "10.0.1.13:22"}
	env := sessionEnv(visionDecision(t, false), n, "s1")
	for k, want := range map[string]string{"FRONTDOOR_NODE": "login3", "FRONTDOOR_POOL": "gpu", "FRONTDOOR_SESSION": "s1",
		"FRONTDOOR_RULE": "vision", "FRONTDOOR_ACCOUNT": "vision", "FRONTDOOR_PARTITION": "h100",
		"FRONTDOOR_PARTITIONS": "general,h100", "FRONTDOOR_QOS": "fd-vision", "FRONTDOOR_GPU_LIMIT": "4"} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	if _, ok := env["SBATCH_ACCOUNT"]; ok {
		t.Error("job defaults set without set_job_defaults")
	}
	env = sessionEnv(visionDecision(t, true), n, "s1")
	for _, k := range JobDefaultEnv {
		if env[k] == "" {
			t.Errorf("set_job_defaults: %s unset", k)
		}
	}
	if env["SBATCH_PARTITION"] != "h100" || env["SLURM_ACCOUNT"] != "vision" || env["SALLOC_QOS"] != "fd-vision" {
		t.Errorf("job defaults: %v", env)
	}
	// Without a Slurm grant: only the node's part.
	env = sessionEnv(policy.Decision{Rule: "everyone"}, n, "s1")
	if len(env) != 4 {
		t.Errorf("no grant: %v", env)
	}
}

type slowUsage struct{ delay time.Duration }

func (s slowUsage) GPUsHeld(ctx context.Context, user, account string) (int, int, error) {
	select {
	case <-time.After(s.delay):
		return 2, 6, nil
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

type failingUsage struct{}

func (failingUsage) GPUsHeld(context.Context, string, string) (int, int, error) {
	return 0, 0, errors.New("slurmctld down")
}

func TestSessionBanner(t *testing.T) {
	n := node.Node{Name: "login3", Pool: "gpu"}
	d := visionDecision(t, false)
	b := sessionBanner("bob", d, n, slowUsage{}, time.Second, func(a string) string { return "budget line for " + a })()
	for _, want := range []string{"bob on login3 (pool gpu", "account vision", "partitions general,h100 (default h100)",
		"GPU limit: 4 per user, 8 for account vision", "GPUs held now: you 2, vision 6", "budget line for vision"} {
		if !strings.Contains(b, want) {
			t.Errorf("banner lacks %q:\n%s", want, b)
		}
	}
	// A Slurm slower than the wait, or down, costs the login nothing but
	// the figure.
	start := time.Now()
	b = sessionBanner("bob", d, n, slowUsage{delay: time.Hour}, 50*time.Millisecond, nil)()
	if !strings.Contains(b, "GPUs held now: unknown") || time.Since(start) > 10*time.Second {
		t.Errorf("slow Slurm: %q after %v", b, time.Since(start))
	}
	if b = sessionBanner("bob", d, n, failingUsage{}, time.Second, nil)(); !strings.Contains(b, "unknown") {
		t.Errorf("failing Slurm: %q", b)
	}
	if b = sessionBanner("dave", policy.Decision{Rule: "everyone"}, n, slowUsage{}, time.Second, nil)(); strings.Contains(b, "Slurm") {
		t.Errorf("no grant: %q", b)
	}
}

func TestAllowDirect(t *testing.T) {
	n := node.Node{Name: "login1", Addr: "10.0.1.11:22"}
	for _, tc := range []struct {
		to    []string
		host  string
		allow bool
	}{
		{[]string{"node"}, "localhost", true},
		{[]string{"node"}, "127.0.0.1", true},
		{[]string{"node"}, "login1", true},
		{[]string{"node"}, "10.0.1.11", true},
		{[]string{"node"}, "10.0.1.12", false},
		{[]string{"node"}, "db.example.edu", false},
		{[]string{"*.example.edu"}, "db.example.edu", true},
		{[]string{"*.example.edu"}, "example.edu", false},
		{[]string{"*.example.edu"}, "evilexample.edu", false},
		{[]string{"*.example.edu"}, "localhost", false}, // node not listed: not even the node
		{[]string{"node", "10.0.0.0/16"}, "10.0.200.1", true},
		{[]string{"node", "10.0.0.0/16"}, "10.1.0.1", false},
		{[]string{"node", "10.0.0.0/16"}, "::ffff:10.0.3.3", true},
		{[]string{"jupyter.internal"}, "JUPYTER.internal.", true},
	} {
		f := allowDirect(n, tc.to)
		if got := f(tc.host, 8888); got != tc.allow {
			t.Errorf("forward_to %v, %s: allowed %v, want %v", tc.to, tc.host, got, tc.allow)
		}
	}
	if allowDirect(n, []string{"any"}) != nil {
		t.Error("any: want no filter")
	}
}

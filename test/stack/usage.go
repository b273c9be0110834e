package stack

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/usage/costtest"
	slurmh "github.com/frontdoor-hpc/frontdoor/test/harness/slurm"
)

// AWSInfo is the stack's AWS endpoint (stack.json "aws"): an in-process
// fake of Cost Explorer and AWS Budgets, so `frontdoor usage --actual`
// and `frontdoor budgets plan | apply` work without AWS. Env is what
// points the SDK (and the AWS CLI) at it: the SDK's endpoint variables
// and the credentials the fake accepts. The gateways inherit it; their
// usage.aws names no endpoint.
type AWSInfo struct {
	Endpoint  string `json:"endpoint"`
	Region    string `json:"region"`
	AccountID string `json:"account_id"`
	Cluster   string `json:"cluster"`
	Env       string `json:"env"`
}

// stackCluster is the value of the cluster tag on the stack's "bill".
const stackCluster = "hpc-stack"

// startCostFake serves the fake with a bill of every day from the first
// of last month to today: each account's tagged compute, shared compute,
// untagged login nodes, the gateways. The amounts keep every account far
// below its budget's warn_at whatever the day of the month, so banners
// carry no budget line unless someone runs (a lot of) jobs.
func startCostFake() (*costtest.Server, AWSInfo) {
	f := costtest.New("us-east-1")
	today := time.Now().UTC().Truncate(24 * time.Hour)
	first := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0)
	var bill []costtest.Cost
	for d := first; !d.After(today); d = d.AddDate(0, 0, 1) {
		for _, c := range []struct{ account, role, amount string }{
			{"nlp", "compute", "120.50"}, {"vision", "compute", "310.25"}, {"students", "storage", "1.15"},
			{"shared", "compute", "150.00"}, {"", "login", "12.00"}, {"shared", "gateway", "4.80"},
		} {
			bill = append(bill, costtest.Cost{Day: d, Cluster: stackCluster, Account: c.account, Role: c.role, Unblended: c.amount})
		}
	}
	f.SetCosts(bill...)
	// The gateways (children) find the fake as an admin's shell would,
	// through the SDK's own variables; nothing in the stack talks to AWS.
	env := [][2]string{
		{"AWS_ACCESS_KEY_ID", costtest.AccessKeyID}, {"AWS_SECRET_ACCESS_KEY", costtest.SecretAccessKey},
		{"AWS_ENDPOINT_URL_COST_EXPLORER", f.URL}, {"AWS_ENDPOINT_URL_BUDGETS", f.URL},
	}
	var line []string
	for _, kv := range env {
		os.Setenv(kv[0], kv[1])
		line = append(line, kv[0]+"="+kv[1])
	}
	os.Unsetenv("AWS_SESSION_TOKEN")
	return f, AWSInfo{Endpoint: f.URL, Region: f.Region, AccountID: costtest.AccountID, Cluster: stackCluster,
		Env: strings.Join(line, " ")}
}

// usageSection is a gateway's `usage:` section: rates for the stack's
// partitions, a budget per account with a notification address, and
// usage.aws for the fake's bill (the endpoint from the environment, the
// answers cached in the gateway's directory).
func usageSection(info AWSInfo, gdir string) map[string]any {
	return map[string]any{
		"rates": map[string]any{
			"instance_types": map[string]any{
				"ml.p5.48xlarge": map[string]any{"hourly": 98.32, "gpus": 8},
				"ml.g5.12xlarge": map[string]any{"hourly": 7.09, "gpus": 4},
			},
			"partitions":        map[string]string{slurmh.PartitionH100: "ml.p5.48xlarge", slurmh.PartitionGeneral: "ml.g5.12xlarge"},
			"login_node_hourly": 0.50,
		},
		"budgets": map[string]any{
			"nlp":      map[string]any{"monthly": 20000, "notify": []string{"pi-nlp@example.edu"}},
			"vision":   map[string]any{"monthly": 20000, "warn_at": 0.9, "notify": []string{"pi-vision@example.edu"}},
			"students": map[string]any{"monthly": 5000, "notify": []string{"teaching@example.edu"}},
		},
		"capacity_gpus":          slurmh.GPUs,
		"capacity_instance_type": "ml.p5.48xlarge",
		"aws": map[string]any{
			"cluster": info.Cluster, "account_id": info.AccountID, "region": info.Region,
			"cache_dir": filepath.Join(gdir, "cost-cache"),
		},
	}
}

package discovery_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery/discoverytest"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// TestMain gives the SDK's default credential chain the fake's keys
// through the environment, and nothing else to find: no shared config
// files, no instance metadata service.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "discovery-test")
	if err != nil {
		panic(err)
	}
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": discoverytest.AccessKeyID, "AWS_SECRET_ACCESS_KEY": discoverytest.SecretAccessKey,
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const region = "us-west-2"

// testConfig is a hyperpod section over the defaults.
func testConfig(cluster, endpoint string, groups ...discovery.InstanceGroup) discovery.Config {
	cfg := discovery.DefaultConfig()
	cfg.Kind, cfg.Cluster, cfg.Endpoint, cfg.InstanceGroups = discovery.KindHyperPod, cluster, endpoint, groups
	return cfg
}

func newSource(t *testing.T, fake *discoverytest.Server, groups ...discovery.InstanceGroup) *discovery.Source {
	t.Helper()
	cfg := testConfig(fake.Cluster, fake.URL, groups...)
	cfg.Region, cfg.MaxAttempts, cfg.Timeout = region, 3, 20*time.Second
	src, err := discovery.New(context.Background(), cfg, discovery.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func byID(nodes []discovery.Node) map[string]discovery.Node {
	m := map[string]discovery.Node{}
	for _, n := range nodes {
		m[n.InstanceID] = n
	}
	return m
}

func changed(src *discovery.Source) bool {
	select {
	case <-src.Changed():
		return true
	default:
		return false
	}
}

// The whole life of a login node across refreshes, through the real SDK
// against an endpoint speaking the real protocol: pages, a throttled
// call the SDK retries, exact group matching behind the substring filter,
// one describe per node, Pending → Running → ShuttingDown → gone.
func TestHyperPodLifecycle(t *testing.T) {
	fake := discoverytest.Start(t, region, "ml-cluster")
	fake.SetPageSize(2)
	fake.SetNodes(
		discoverytest.Node{Group: "login", InstanceID: "i-0aaa00000000000a1", Status: "Running", IP: "10.1.0.11", Hostname: "ip-10-1-0-11.us-west-2.compute.internal", InstanceType: "ml.m5.2xlarge"},
		discoverytest.Node{Group: "login", InstanceID: "i-0bbb00000000000b2", Status: "Pending", IP: "10.1.0.12", Hostname: "ip-10-1-0-12.us-west-2.compute.internal", InstanceType: "ml.m5.2xlarge"},
		discoverytest.Node{Group: "login-gpu", InstanceID: "i-0ccc00000000000c3", Status: "Running", IP: "10.1.0.13", Hostname: "ip-10-1-0-13", InstanceType: "ml.g5.xlarge"},
		discoverytest.Node{Group: "login", InstanceID: "i-0ddd00000000000d4", Status: "SystemUpdating", Message: "patching", IP: "10.1.0.14", InstanceType: "ml.m5.2xlarge"},
		discoverytest.Node{Group: "login", InstanceID: "i-0eee00000000000e5", Status: "DeepHealthCheckInProgress", IP: "10.1.0.15", Hostname: "ip-10-1-0-15", InstanceType: "ml.m5.2xlarge"},
	)
	src := newSource(t, fake, discovery.InstanceGroup{Name: "login", Pool: "general"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(src.Collectors()...)
	ctx := context.Background()

	fake.Throttle("ListClusterNodes", 1)
	if err := src.Refresh(ctx); err != nil {
		t.Fatalf("refresh with one throttled call: %v", err)
	}
	// 5 nodes match "login" as a substring, pages of 2 → 3 pages, +1 throttled attempt.
	if got := fake.Calls("ListClusterNodes"); got != 4 {
		t.Errorf("ListClusterNodes calls = %d, want 4 (3 pages + 1 retried throttle)", got)
	}
	if f := fake.Filters(); len(f) == 0 || f[0] != "login" {
		t.Errorf("InstanceGroupNameContains = %v, want login", f)
	}
	nodes := src.Nodes()
	if len(nodes) != 4 {
		t.Fatalf("nodes = %+v, want the 4 of group login exactly (login-gpu only matches the substring)", nodes)
	}
	if !changed(src) {
		t.Error("Changed did not fire after the first refresh")
	}
	m := byID(nodes)
	a := m["i-0aaa00000000000a1"]
	want := discovery.Node{Node: node.Node{Name: "ip-10-1-0-11", Addr: "10.1.0.11:22", Pool: "general"}, InstanceID: "i-0aaa00000000000a1",
		InstanceType: "ml.m5.2xlarge", Status: "Running", Eligible: true}
	if a != want {
		t.Errorf("running node = %+v, want %+v", a, want)
	}
	for id, wantReason := range map[string]string{"i-0bbb00000000000b2": "pending", "i-0ddd00000000000d4": "system updating: HyperPod is patching the instance (patching)",
		"i-0eee00000000000e5": "deep health check"} {
		n := m[id]
		if n.Eligible || !strings.Contains(n.Reason, wantReason) {
			t.Errorf("%s: eligible=%v reason=%q, want not eligible, reason with %q", id, n.Eligible, n.Reason, wantReason)
		}
	}
	if n := m["i-0ddd00000000000d4"]; n.Name != "i-0ddd00000000000d4" {
		t.Errorf("node without a DNS host name is named %q, want its instance ID", n.Name)
	}
	if n := m["i-0bbb00000000000b2"]; n.Addr != "10.1.0.12:22" || n.Name != "ip-10-1-0-12" {
		t.Errorf("pending node = %+v: want its address and name known already", n)
	}

	// Pending → Running.
	fake.SetStatus("i-0bbb00000000000b2", "Running", "")
	if err := src.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := byID(src.Nodes())["i-0bbb00000000000b2"]; !n.Eligible || n.Status != "Running" || n.Reason != "" {
		t.Errorf("after Running: %+v, want eligible", n)
	}
	if !changed(src) {
		t.Error("Changed did not fire after Pending → Running")
	}
	// Nothing changes → no signal.
	if err := src.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if changed(src) {
		t.Error("Changed fired after a refresh that changed nothing")
	}
	// Running → ShuttingDown.
	fake.SetStatus("i-0bbb00000000000b2", "ShuttingDown", "")
	if err := src.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := byID(src.Nodes())["i-0bbb00000000000b2"]; n.Eligible || !strings.HasPrefix(n.Reason, "shutting down") {
		t.Errorf("after ShuttingDown: %+v, want not eligible, shutting down", n)
	}
	if v := metricValue(t, reg, "frontdoor_discovery_nodes", "false", "ShuttingDown"); v != 1 {
		t.Errorf("frontdoor_discovery_nodes{ShuttingDown,false} = %v, want 1", v)
	}
	// Gone.
	fake.Remove("i-0bbb00000000000b2")
	if err := src.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := byID(src.Nodes())["i-0bbb00000000000b2"]; ok || len(src.Nodes()) != 3 {
		t.Errorf("after removal: %+v", src.Nodes())
	}
	for _, id := range []string{"i-0aaa00000000000a1", "i-0bbb00000000000b2", "i-0ddd00000000000d4", "i-0eee00000000000e5"} {
		if got := fake.Describes(id); got != 1 {
			t.Errorf("DescribeClusterNode %s answered %d times over 5 refreshes, want 1", id, got)
		}
	}
	if got := fake.Describes("i-0ccc00000000000c3"); got != 0 {
		t.Errorf("node of another group described %d times", got)
	}
	if v := metricValue(t, reg, "frontdoor_discovery_last_success_timestamp_seconds"); time.Since(time.Unix(int64(v), 0)) > time.Minute {
		t.Errorf("last success metric = %v", v)
	}
}

// A refresh that fails keeps the last good list and says so.
func TestHyperPodOutageKeepsLastGoodList(t *testing.T) {
	fake := discoverytest.Start(t, region, "ml-cluster")
	fake.SetNodes(discoverytest.Node{Group: "login", InstanceID: "i-01", Status: "Running", IP: "10.1.0.11", Hostname: "ip-10-1-0-11"})
	src := newSource(t, fake, discovery.InstanceGroup{Name: "login", Pool: "general"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(src.Collectors()...)
	ctx := context.Background()
	if err := src.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	good := src.Nodes()
	okAt, _ := src.Status()
	changed(src)

	fake.Fail(true)
	before := fake.Calls("ListClusterNodes")
	err := src.Refresh(ctx)
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InternalFailure" {
		t.Fatalf("refresh during outage: %v, want the API's InternalFailure", err)
	}
	if got := fake.Calls("ListClusterNodes") - before; got != 3 {
		t.Errorf("calls during outage = %d, want 3 (max_attempts)", got)
	}
	if got := src.Nodes(); len(got) != 1 || got[0] != good[0] {
		t.Errorf("nodes after failed refresh = %+v, want the last good %+v", got, good)
	}
	if changed(src) {
		t.Error("Changed fired after a failed refresh")
	}
	last, lastErr := src.Status()
	if !last.Equal(okAt) || lastErr == nil {
		t.Errorf("Status = %v, %v; want the earlier success and an error", last, lastErr)
	}
	if v := metricValue(t, reg, "frontdoor_discovery_errors_total", "list"); v != 1 {
		t.Errorf("errors_total{list} = %v, want 1", v)
	}
	fake.Fail(false)
	if err := src.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, lastErr := src.Status(); lastErr != nil {
		t.Errorf("error kept after recovery: %v", lastErr)
	}
}

// Several instance groups: no server-side filter, a pool per group,
// groups not configured ignored; an ARN works as the cluster name and
// gives the region.
func TestHyperPodGroupsAndARN(t *testing.T) {
	fake := discoverytest.Start(t, region, "ml-cluster")
	fake.SetNodes(
		discoverytest.Node{Group: "login", InstanceID: "i-01", Status: "Running", IP: "10.1.0.11", Hostname: "ip-10-1-0-11"},
		discoverytest.Node{Group: "login-gpu", InstanceID: "i-02", Status: "Running", IP: "10.1.0.12", Hostname: "ip-10-1-0-12"},
		discoverytest.Node{Group: "worker-p5", InstanceID: "i-03", Status: "Running", IP: "10.1.0.13", Hostname: "ip-10-1-0-13"},
		discoverytest.Node{Group: "login", InstanceID: "i-04", Status: "Failure", Message: "EC2 health check failed", IP: "10.1.0.14"},
	)
	cfg := testConfig(fake.ARN, fake.URL, discovery.InstanceGroup{Name: "login", Pool: "cpu"}, discovery.InstanceGroup{Name: "login-gpu", Pool: "gpu"})
	if cfg.Derive(); cfg.Region != region {
		t.Fatalf("region from ARN = %q", cfg.Region)
	}
	src, err := discovery.New(context.Background(), cfg, discovery.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := byID(src.Nodes())
	if len(m) != 3 || m["i-01"].Pool != "cpu" || m["i-02"].Pool != "gpu" {
		t.Errorf("nodes = %+v", src.Nodes())
	}
	if n := m["i-04"]; n.Eligible || n.Reason != "failure: instance failed (EC2 health check failed)" {
		t.Errorf("failed node = %+v", n)
	}
	if f := fake.Filters(); len(f) != 0 {
		t.Errorf("filter %v sent with two groups", f)
	}
}

// A describe that fails leaves that node unusable for now, the others
// fine, and is retried on the next refresh.
func TestHyperPodDescribeFailureRetried(t *testing.T) {
	fake := discoverytest.Start(t, region, "ml-cluster")
	fake.SetNodes(discoverytest.Node{Group: "login", InstanceID: "i-01", Status: "Running", IP: "10.1.0.11", Hostname: "ip-10-1-0-11"})
	src := newSource(t, fake, discovery.InstanceGroup{Name: "login", Pool: discovery.DefaultPool})
	fake.Throttle("DescribeClusterNode", 3) // all three attempts
	if err := src.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := src.Nodes()[0]; n.Eligible || !strings.Contains(n.Reason, "address not known") || n.Pool != "default" {
		t.Errorf("node with failed describe = %+v", n)
	}
	if err := src.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := src.Nodes()[0]; !n.Eligible || n.Addr != "10.1.0.11:22" {
		t.Errorf("after a good describe: %+v", n)
	}
}

// Run refreshes by itself and signals a change.
func TestHyperPodRun(t *testing.T) {
	fake := discoverytest.Start(t, region, "ml-cluster")
	fake.SetNodes(discoverytest.Node{Group: "login", InstanceID: "i-01", Status: "Pending", IP: "10.1.0.11", Hostname: "ip-10-1-0-11"})
	cfg := testConfig("ml-cluster", fake.URL, discovery.InstanceGroup{Name: "login", Pool: discovery.DefaultPool})
	cfg.Region, cfg.RefreshInterval = region, time.Second
	src, err := discovery.New(context.Background(), cfg, discovery.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { src.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	wait := func(what string, ok func([]discovery.Node) bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case <-src.Changed():
				if ok(src.Nodes()) {
					return
				}
			case <-deadline:
				t.Fatalf("timed out waiting for %s; nodes %+v", what, src.Nodes())
			}
		}
	}
	wait("the pending node", func(n []discovery.Node) bool { return len(n) == 1 && n[0].Status == "Pending" })
	fake.SetStatus("i-01", "Running", "")
	wait("the node running", func(n []discovery.Node) bool { return len(n) == 1 && n[0].Eligible })
}

// metricValue returns the value of the one series of name whose label
// values are labels (in label-name order, as Prometheus sorts them).
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var vals []string
			for _, lp := range m.GetLabel() {
				vals = append(vals, lp.GetValue())
			}
			if strings.Join(vals, ",") == strings.Join(labels, ",") {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

package e2e_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery/discoverytest"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// TestDiscoveredNodes: a gateway that lists no nodes learns them from the
// SageMaker API (a fake speaking its wire protocol). A node appears while
// Pending (no logins), goes Running (logins land on it, its host key
// checked by the discovered name), then ShuttingDown: new logins stop, the
// session already on it goes on.
func TestDiscoveredNodes(t *testing.T) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": discoverytest.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY": discoverytest.SecretAccessKey, "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	ctx := testCtx(t, 3*time.Minute)
	fake := discoverytest.Start(t, "us-west-2", "ml-cluster")
	fake.SetNodes(discoverytest.Node{Group: "login-group", InstanceID: "i-0aaa", Status: "Pending",
		IP: login1.Host(), Hostname: "login1.ec2.internal", InstanceType: "ml.m5.2xlarge"})

	dir := filepath.Join(t.TempDir(), "gw")
	os.MkdirAll(dir, 0o755)
	kh := filepath.Join(dir, "discovered_known_hosts")
	if err := os.WriteFile(kh, []byte(harness.NodeKnownHostsLine("login1", login1.HostKey())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	usersFile := filepath.Join(dir, "users.yaml")
	if err := harness.WriteUsersFile(usersFile, alice); err != nil {
		t.Fatal(err)
	}
	g, err := harness.StartGateway(ctx, harness.GatewayOptions{Dir: dir, Config: harness.GatewayConfig{
		Name: "gw-discovery", Keys: keys, UsersFile: usersFile,
		Rules: []policy.Rule{{Name: "everyone", Groups: []string{"*"}, Pools: []string{"general"}}},
		Edit: func(c *config.Config) {
			c.Backend.KnownHosts = []string{kh}
			d := discovery.DefaultConfig()
			d.Kind, d.Cluster, d.Region, d.Endpoint = "hyperpod", "ml-cluster", "us-west-2", fake.URL
			d.RefreshInterval, d.Jitter, d.SSHPort = time.Second, 0, login1.Port()
			d.InstanceGroups = []discovery.InstanceGroup{{Name: "login-group", Pool: "general"}}
			c.Discovery = &d
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c := g.Client(alice)
	notTaking := func(want bool) error {
		for _, n := range g.Parts().Nodes() {
			if n.Name == "login1" {
				if (n.NotTaking != "") != want {
					return fmt.Errorf("login1: %+v", n)
				}
				return nil
			}
		}
		return fmt.Errorf("login1 not listed: %+v", g.Parts().Nodes())
	}

	// Pending: listed with the reason, no logins.
	if err := harness.WaitFor(ctx, 30*time.Second, func() error { return notTaking(true) }); err != nil {
		t.Fatal(err)
	}
	refused(t, run(c.SSH(ctx, aliceName, "true"), nil), "")

	// Running: logins land on it.
	fake.SetStatus("i-0aaa", "Running", "")
	if err := harness.WaitFor(ctx, 30*time.Second, func() error { return notTaking(false) }); err != nil {
		t.Fatal(err)
	}
	r := run(c.SSH(ctx, aliceName, "echo $FRONTDOOR_NODE"), nil)
	mustExit(t, r, 0)
	if got := strings.TrimSpace(string(r.Stdout)); got != "login1" {
		t.Fatalf("landed on %q", got)
	}

	// A session held open, then the node goes ShuttingDown.
	held := c.SSH(ctx, aliceName, `echo ready; while read -r l; do echo "got $l"; done`)
	in, err := held.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := held.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); held.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("held session: %q %v", lines.Text(), lines.Err())
	}
	fake.SetStatus("i-0aaa", "ShuttingDown", "scaling down")
	if err := harness.WaitFor(ctx, 30*time.Second, func() error { return notTaking(true) }); err != nil {
		t.Fatal(err)
	}
	refused(t, run(c.SSH(ctx, aliceName, "true"), nil), "")
	fmt.Fprintln(in, "still-alive")
	if !lines.Scan() || lines.Text() != "got still-alive" {
		t.Fatalf("the session on the node going away: %q %v", lines.Text(), lines.Err())
	}
	if p := fake.Problems(); len(p) > 0 {
		t.Fatalf("requests the real API would refuse: %v", p)
	}
}

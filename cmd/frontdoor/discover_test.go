package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery/discoverytest"
)

// frontdoor discover against the fake SageMaker endpoint: the table and
// the JSON say the same thing.
func TestDiscoverCommand(t *testing.T) {
	dir := t.TempDir()
	awsTestEnv(t, discoverytest.AccessKeyID, discoverytest.SecretAccessKey)
	fake := discoverytest.Start(t, "us-east-1", "research")
	fake.SetNodes(
		discoverytest.Node{Group: "login", InstanceID: "i-0aaa", Status: "Running", IP: "10.2.0.5", Hostname: "ip-10-2-0-5.ec2.internal", InstanceType: "ml.m5.xlarge"},
		discoverytest.Node{Group: "login", InstanceID: "i-0bbb", Status: "ShuttingDown", IP: "10.2.0.6", Hostname: "ip-10-2-0-6.ec2.internal", InstanceType: "ml.m5.xlarge"},
	)
	cfg := `gateway: {name: gw1, host_keys: [host], user_ca_key: ca}
backend: {known_hosts: [kh]}
directory: {static: {file: users.yaml}}
policy: {rules: [{name: all, groups: ["*"], pools: [general]}]}
discovery:
  kind: hyperpod
  cluster: research
  region: us-east-1
  endpoint: ` + fake.URL + `
  instance_groups: [{name: login, pool: general}]
`
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := runDiscover(context.Background(), []string{"--config", path}, &table); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.Contains(lines[1], "ip-10-2-0-5") || !strings.Contains(lines[1], "10.2.0.5:22") || !strings.HasSuffix(lines[1], "yes") ||
		!strings.Contains(lines[2], "i-0bbb") || !strings.Contains(lines[2], "no: shutting down") {
		t.Errorf("table:\n%s", table.String())
	}
	var js bytes.Buffer
	if err := runDiscover(context.Background(), []string{"--config", path, "-o", "json"}, &js); err != nil {
		t.Fatal(err)
	}
	var nodes []discovery.Node
	if err := json.Unmarshal(js.Bytes(), &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || !nodes[0].Eligible || nodes[1].Eligible || nodes[1].Status != "ShuttingDown" || nodes[0].Pool != "general" {
		t.Errorf("json: %+v", nodes)
	}
}

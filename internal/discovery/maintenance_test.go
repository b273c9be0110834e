package discovery_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery/discoverytest"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// Which statuses drain, which end discovery's drain, which leave a node
// alone; what users are told.
func TestMaintenance(t *testing.T) {
	cfg := discovery.DefaultConfig()
	n := func(name, status string) discovery.Node {
		return discovery.Node{Node: node.Node{Name: name}, Status: status}
	}
	got := cfg.Maintenance([]discovery.Node{n("a", "Running"), n("b", "SystemUpdating"), n("c", "ShuttingDown"),
		n("d", "Pending"), n("e", "Failure"), n("f", "DeepHealthCheckInProgress"), n("", "ShuttingDown"), n("g", "SomethingNew")})
	want := []discovery.NodeMaintenance{{Node: "a"},
		{Node: "b", Drain: true, Message: "HyperPod is updating this node's software"},
		{Node: "c", Drain: true, Message: "HyperPod is replacing or removing this node"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	cfg.DrainStatuses = []string{"Failure"}
	if got := cfg.Maintenance([]discovery.Node{n("e", "Failure")}); len(got) != 1 || got[0].Message != "HyperPod reports the node Failure" {
		t.Fatalf("%+v", got)
	}
	cfg.DrainStatuses = nil
	if got := cfg.Maintenance([]discovery.Node{n("b", "SystemUpdating"), n("a", "Running")}); len(got) != 1 || got[0].Drain {
		t.Fatalf("drains off: %+v", got)
	}
}

func TestValidateDrains(t *testing.T) {
	base := testConfig("ml-cluster", "", discovery.InstanceGroup{Name: "login", Pool: "general"})
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*discovery.Config)
		want string
	}{
		{"off", func(c *discovery.Config) { c.DrainStatuses, c.DrainDeadline = nil, 0 }, ""},
		{"Running", func(c *discovery.Config) { c.DrainStatuses = []string{"Running"} }, `discovery.drain_statuses[0]: "Running" is not`},
		{"unknown", func(c *discovery.Config) { c.DrainStatuses = []string{"Rebooting"} }, `discovery.drain_statuses[0]: "Rebooting"`},
		{"twice", func(c *discovery.Config) { c.DrainStatuses = []string{"ShuttingDown", "ShuttingDown"} }, `discovery.drain_statuses[1]: "ShuttingDown" listed twice`},
		{"deadline too short", func(c *discovery.Config) { c.DrainDeadline = time.Second }, "discovery.drain_deadline: must be between 10s and 24h0m0s"},
		{"deadline too long", func(c *discovery.Config) { c.DrainDeadline = 48 * time.Hour }, "discovery.drain_deadline"},
		{"no deadline", func(c *discovery.Config) { c.DrainDeadline = 0 }, "discovery.drain_deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			err := c.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}

// Through the real SDK against the fake: a node going SystemUpdating is
// one to drain; Running again, one whose drain ends.
func TestMaintenanceFromTheAPI(t *testing.T) {
	fake := discoverytest.Start(t, region, "ml-cluster")
	fake.SetNodes(discoverytest.Node{Group: "login", InstanceID: "i-0aaa00000000000a1", Status: "Running", IP: "10.1.0.11",
		Hostname: "ip-10-1-0-11.us-west-2.compute.internal", InstanceType: "ml.m5.2xlarge"})
	src := newSource(t, fake, discovery.InstanceGroup{Name: "login", Pool: "general"})
	ctx := context.Background()
	for _, step := range []struct {
		status string
		want   []discovery.NodeMaintenance
	}{
		{"Running", []discovery.NodeMaintenance{{Node: "ip-10-1-0-11"}}},
		{"SystemUpdating", []discovery.NodeMaintenance{{Node: "ip-10-1-0-11", Drain: true, Message: "HyperPod is updating this node's software"}}},
		{"Running", []discovery.NodeMaintenance{{Node: "ip-10-1-0-11"}}},
	} {
		fake.SetStatus("i-0aaa00000000000a1", step.status, "")
		if err := src.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := src.Maintenance(); !slices.Equal(got, step.want) {
			t.Fatalf("%s: %+v, want %+v", step.status, got, step.want)
		}
	}
	if src.DrainDeadline() != 5*time.Minute {
		t.Fatalf("default deadline %s", src.DrainDeadline())
	}
}

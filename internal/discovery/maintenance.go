package discovery

import (
	"fmt"
	"slices"
	"time"
)

// Maintenance HyperPod announces through the node's status: a node that
// the listing shows in one of Config.DrainStatuses is about to be patched
// (SystemUpdating: UpdateClusterSoftware) or replaced (ShuttingDown:
// BatchReplaceClusterNodes, a node marked for replacement, a scale-down).
// The gateways drain it with Config.DrainDeadline and tell its users
// (internal/maintenance); when it is Running again, or has left the
// listing, the drain ends. The SageMaker API has no field announcing
// maintenance ahead of these statuses (ImageVersionStatus says an update
// exists, not that one is coming), so the status is the first word.

// DrainBy is the author of discovery's own drains, as the status and
// `frontdoor nodes` show it: only drains by it are ended by discovery.
const DrainBy = "hyperpod"

// Drain bounds of DrainDeadline.
const (
	minDrainDeadline = 10 * time.Second
	maxDrainDeadline = 24 * time.Hour
)

// drainableStatuses are the statuses DrainStatuses may name: every
// HyperPod instance status but Running.
var drainableStatuses = []string{"SystemUpdating", "ShuttingDown", "Pending", "DeepHealthCheckInProgress", "Failure", "NotFound"}

func (c Config) validateDrains() []error {
	var errs []error
	for i, s := range c.DrainStatuses {
		if !slices.Contains(drainableStatuses, s) {
			errs = append(errs, fmt.Errorf("discovery.drain_statuses[%d]: %q is not a HyperPod instance status other than Running (%v)", i, s, drainableStatuses))
		} else if slices.Index(c.DrainStatuses, s) != i {
			errs = append(errs, fmt.Errorf("discovery.drain_statuses[%d]: %q listed twice", i, s))
		}
	}
	if len(c.DrainStatuses) > 0 && (c.DrainDeadline < minDrainDeadline || c.DrainDeadline > maxDrainDeadline) {
		errs = append(errs, fmt.Errorf("discovery.drain_deadline: must be between %s and %s, got %s", minDrainDeadline, maxDrainDeadline, c.DrainDeadline))
	}
	return errs
}

// NodeMaintenance is what discovery says of one node's drain.
type NodeMaintenance struct {
	Node string
	// Drain: drain it, telling users Message; else end discovery's drain
	// of it (it runs again).
	Drain   bool
	Message string
}

// Maintenance lists, for the nodes of a refresh, those to drain and those
// whose drain by discovery should end. Nodes in other statuses (pending,
// failed, unless configured) are left as they are.
func (c Config) Maintenance(nodes []Node) []NodeMaintenance {
	var out []NodeMaintenance
	for _, n := range nodes {
		switch {
		case n.Name == "":
		case slices.Contains(c.DrainStatuses, n.Status):
			out = append(out, NodeMaintenance{Node: n.Name, Drain: true, Message: maintenanceMessage(n.Status)})
		case n.Status == "Running":
			out = append(out, NodeMaintenance{Node: n.Name})
		}
	}
	return out
}

// maintenanceMessage is what the users of a node in status are told. The
// API's own status message is not passed on: it is free text nobody here
// wrote, and the terminal is the user's.
func maintenanceMessage(status string) string {
	switch status {
	case "SystemUpdating":
		return "HyperPod is updating this node's software"
	case "ShuttingDown":
		return "HyperPod is replacing or removing this node"
	}
	return "HyperPod reports the node " + status
}

// Maintenance is Config.Maintenance over the last good node list.
func (s *Source) Maintenance() []NodeMaintenance { return s.cfg.Maintenance(s.Nodes()) }

// DrainDeadline is how long the sessions on a node HyperPod is about to
// patch or replace go on.
func (s *Source) DrainDeadline() time.Duration { return s.cfg.DrainDeadline }

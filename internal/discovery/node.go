package discovery

import (
	"net"

	"strconv"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// Node is one login node as discovery sees it: the node itself (Name is
// the short name of the instance's PrivateDnsHostname, ip-10-1-2-3, else
// its instance ID, see NodeName; Addr is its sshd at the private IP, empty
// until known; Pool is its instance group's pool) and what HyperPod says
// about the instance.
type Node struct {
	node.Node
	InstanceID   string `json:"instance_id"`
	InstanceType string `json:"instance_type"`
	// Status is HyperPod's instance status (Running, Pending, …).
	Status string `json:"status"`
	// Eligible says the node may receive new logins; Reason says why not.
	Eligible bool   `json:"eligible"`
	Reason   string `json:"reason,omitempty"`
}

// NodeName derives a node's name. The short name of the private DNS host
// name comes first because it is the name everything else on a HyperPod
// cluster uses for the node: its own hostname (so the agent, which
// defaults to the hostname, gossips under the same name), Slurm's node
// name (sinfo, sacct) and the nodes' logs. The instance ID is the fallback
// when the host name is missing or is not a valid node name; it is also
// unique but means nothing to users.
func NodeName(privateDNSHostname, instanceID string) string {
	short, _, _ := strings.Cut(privateDNSHostname, ".")
	if names.Node.Valid(short) {
		return strings.ToLower(short)
	}
	if names.Node.Valid(instanceID) {
		return instanceID
	}
	return ""
}

// sshAddr is ip:port for a private IP the API returned, or "" if it is not
// an IP address.
func sshAddr(ip string, port int) string {
	if net.ParseIP(ip) == nil {
		return ""
	}
	return net.JoinHostPort(ip, strconv.Itoa(port))
}

// eligibility turns a HyperPod instance status into eligible or the reason
// not. Only Running nodes take logins: Pending and
// DeepHealthCheckInProgress nodes are not ready, SystemUpdating ones are
// being patched (and may reboot), ShuttingDown ones are leaving, Failure
// and NotFound ones are broken or gone, and a status this code does not
// know is treated as not ready rather than guessed at.
func eligibility(status, message string) (bool, string) {
	var reason string
	switch status {
	case "Running":
		return true, ""
	case "Pending":
		reason = "pending: instance is being provisioned"
	case "SystemUpdating":
		reason = "system updating: HyperPod is patching the instance"
	case "DeepHealthCheckInProgress":
		reason = "deep health check in progress"
	case "ShuttingDown":
		reason = "shutting down: instance is leaving the cluster"
	case "Failure":
		reason = "failure: instance failed"
	case "NotFound":
		reason = "not found: instance is gone"
	case "":
		reason = "no status reported"
	default:
		reason = "unknown status " + strconv.Quote(status)
	}
	if message != "" {
		reason += " (" + message + ")"
	}
	return false, reason
}

package gateway

import (
	"fmt"
	"net"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/proxy"
)

// What a relayed session gets from the gateway besides bytes: the
// environment the node's shell sees, the banner an interactive login
// shows, where -L/-D may lead, and when an idle session is closed. All of
// it follows from the login's policy decision and node.

// sessionEnv is the environment sent to the node for every session
// channel. The deploy/ sshd drop-in carries the matching AcceptEnv.
func sessionEnv(lr *loginResult, node Target, session string) map[string]string {
	env := map[string]string{
		"FRONTDOOR_NODE":    node.Name,
		"FRONTDOOR_POOL":    node.Pool,
		"FRONTDOOR_SESSION": session,
		"FRONTDOOR_RULE":    lr.policy.Rule,
	}
	return env
}

// sessionBanner is the short banner of an interactive login.
func sessionBanner(lr *loginResult, node Target) func() string {
	return func() string {
		return fmt.Sprintf("frontdoor: %s on %s (pool %s, access %q)", lr.ident.Name, node.Name, node.Pool, lr.policy.Rule)
	}
}

// allowDirect is where the user's -L and -D may lead: by default the login
// node's own services only (localhost, its name and address).
func allowDirect(node Target) func(host string, port uint32) bool {
	own := []string{node.Name}
	if h, _, err := net.SplitHostPort(node.Addr); err == nil {
		own = append(own, strings.Trim(h, "[]"))
	}
	return proxy.LocalDestinations(own...)
}

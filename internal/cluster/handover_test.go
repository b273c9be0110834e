package cluster

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"
)

// TestSessionsHandedOver: a gateway process that hands its member name and
// gossip port to a new process (an upgrade) goes without a goodbye
// (Crash); the new process starts with the sessions it takes over
// (Options.Sessions). The other gateway counts them the whole time — the
// member never looks dead, and the first push/pull re-asserts the count
// instead of clearing it as a ghost — and counts them down as the new
// process publishes each end. Without Options.Sessions the same restart
// clears them (TestSessionsAffinityDrainBanSurviveRestart).
func TestSessionsHandedOver(t *testing.T) {
	old := start(t, gatewayConfig("gw1"), RoleGateway)
	gw2 := start(t, gatewayConfig("gw2", old), RoleGateway)
	old.SetSessions("bob", "n1", 2)
	eventually(t, waitLong, func() error {
		if n := gw2.SessionsElsewhere("bob"); n != 2 {
			return fmt.Errorf("gw2 counts %d of bob's sessions, want 2", n)
		}
		return nil
	})

	// The old process stops gossiping without leaving; the new one binds
	// the same ports under the same name, with bob's sessions.
	cfg := gatewayConfig("gw1", gw2)
	_, port, _ := net.SplitHostPort(old.LocalAddr())
	cfg.BindPort, _ = strconv.Atoi(port)
	_, port, _ = net.SplitHostPort(old.GatewayAddr())
	cfg.GatewayPort, _ = strconv.Atoi(port)
	old.Crash()
	o := testOptions(t, cfg, RoleGateway)
	o.Sessions = []Session{{User: "bob", Node: "n1", N: 2}}
	successor := startWith(t, cfg, o)

	// Through the first exchanges and a few push/pull rounds, gw2 never
	// loses them.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if n := gw2.SessionsElsewhere("bob"); n != 2 {
			t.Fatalf("during the handover gw2 counts %d of bob's sessions, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// One ends in the old process; the successor publishes the new count.
	successor.SetSessions("bob", "n1", 1)
	eventually(t, waitLong, func() error {
		if n := gw2.SessionsElsewhere("bob"); n != 1 {
			return fmt.Errorf("gw2 counts %d of bob's sessions, want 1", n)
		}
		return nil
	})
	successor.SetSessions("bob", "n1", 0)
	eventually(t, waitLong, func() error {
		if n := gw2.SessionsElsewhere("bob"); n != 0 {
			return fmt.Errorf("gw2 counts %d of bob's sessions, want 0", n)
		}
		return nil
	})
}

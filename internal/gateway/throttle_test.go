package gateway

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
)

// startCluster starts n gossip members on loopback, joined, unencrypted
// (the cluster package tests encryption).
func startCluster(t *testing.T, n int) []*cluster.Cluster {
	t.Helper()
	var cls []*cluster.Cluster
	for i := range n {
		cfg := cluster.DefaultConfig()
		cfg.Name = "gw" + string(rune('1'+i))
		cfg.BindAddr, cfg.BindPort, cfg.GatewayPort, cfg.Insecure = "127.0.0.1", 0, 0, true
		cfg.GatewaySyncInterval = 200 * time.Millisecond
		if i > 0 {
			cfg.GatewayJoin = []string{cls[0].GatewayAddr()}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cl, err := cluster.Start(ctx, cfg, cluster.Options{Role: cluster.RoleGateway})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		cls = append(cls, cl)
	}
	return cls
}

// A password guesser spreading attempts over gateways meets one limit: the
// gateway whose throttle trips bans the account on all of them.
func TestPasswordLimitsHoldClusterWide(t *testing.T) {
	cls := startCluster(t, 2)
	const throttle = "throttle: {user_failures: 2, user_window: 10m, source_failures: 1000, base_delay: 1ms, max_delay: 1ms}\n"
	nodes := `[{name: login1, addr: "127.0.0.1:1", pool: general}]`
	gw1 := startTestGatewayIn(t, cls[0], throttle, nodes)
	gw2 := startTestGatewayIn(t, cls[1], throttle, nodes)

	for range 2 {
		if _, err := gw1.dial("alice", ssh.Password("wrong guess")); err == nil {
			t.Fatal("wrong password accepted")
		}
	}
	// gw2 has seen no failure itself, yet refuses even the right password
	// once the ban has arrived by gossip.
	deadline := time.Now().Add(10 * time.Second)
	for {
		gw2.dial("alice", ssh.Password(alicePassword))
		if reason := lastAuthReason(t, gw2.audit); strings.Contains(reason, "banned cluster-wide") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gw2 never refused alice's password as banned; last reason %q", lastAuthReason(t, gw2.audit))
		}
	}
	// Key logins are not what locks AD accounts: still allowed (no node is
	// up, so a proven key login ends with the "no login node" banner).
	if banner, _ := gw2.dial("alice", ssh.PublicKeys(gw2.userKey)); !strings.Contains(banner, "no login node") {
		t.Fatalf("key login of a banned account: banner %q", banner)
	}
}

func lastAuthReason(t *testing.T, auditFile string) string {
	t.Helper()
	b, err := os.ReadFile(auditFile)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var ev struct{ Type, Method, Reason string }
		if json.Unmarshal([]byte(lines[i]), &ev) == nil && ev.Type == "auth" && ev.Method == "password" {
			return ev.Reason
		}
	}
	return ""
}

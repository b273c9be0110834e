package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
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

// fastThrottle: the allowances of the defaults (2 per account and source,
// 3 per account), no backoff to wait out, short refusal delays.
const fastThrottle = "throttle: {user_failures: 3, user_window: 10m, source_failures: 1000, base_delay: 1ms, max_delay: 1ms}\n"

var fastRefusals = []string{"key_refusal_delay: 50ms", "password_refusal_delay: 50ms"}

func from(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000} }

// password runs one password attempt as user from ip and returns the
// reason audited for it ("" when it logged in: no node answers here, so a
// proven login ends in the no-node banner).
func (tg *testGateway) password(t *testing.T, ip, user, pw string) string {
	t.Helper()
	c := testConnFrom(t, tg, from(ip))
	_, err := c.authPassword(meta{user}, []byte(pw))
	var banner *ssh.BannerError
	if errors.As(err, &banner) {
		return ""
	}
	return lastAuthReason(t, tg.audit)
}

// A stranger failing from one address (on both gateways) never keeps the
// owner off: the owner's right password from another address works at
// once, also through the other gateway. Failures from several addresses
// escalate to the account, cluster-wide.
func TestStrangerCannotLockOwnerOut(t *testing.T) {
	cls := startCluster(t, 2)
	nodes := `[{name: login1, addr: "127.0.0.1:1", pool: general}]`
	gw1 := startTestGatewayWith(t, cls[0], nil, fastThrottle, nodes, fastRefusals...)
	gw2 := startTestGatewayWith(t, cls[1], nil, fastThrottle, nodes, fastRefusals...)
	var reasons []string
	for i := range 6 {
		g := gw1
		if i%2 == 1 {
			g = gw2
		}
		reasons = append(reasons, g.password(t, "127.0.0.66", "alice", fmt.Sprintf("guess %d", i)))
	}
	t.Logf("stranger from 127.0.0.66: %q", reasons)
	if !strings.Contains(reasons[len(reasons)-1], "from this address") {
		t.Fatalf("the stranger's last attempt: %q, want refused for the account from that address", reasons[len(reasons)-1])
	}
	for _, g := range []*testGateway{gw1, gw2} {
		if r := g.password(t, "127.0.0.67", "alice", alicePassword); r != "" {
			t.Fatalf("the owner from another address: %q, want logged in", r)
		}
	}
	// Two more sources: the account escalates and the ban reaches gw2.
	gw1.password(t, "127.0.0.68", "alice", "guess a")
	gw1.password(t, "127.0.0.68", "alice", "guess b")
	gw1.password(t, "127.0.0.69", "alice", "guess c")
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := gw2.password(t, "127.0.0.70", "alice", alicePassword)
		if strings.Contains(r, "account banned cluster-wide") && !strings.Contains(r, "from this address") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after failures from three addresses, gw2 says %q, want the account banned", r)
		}
	}
}

// notCheckedDirectory is a directory whose DC is away while down is set:
// password checks fail with directory.ErrNotChecked, as internal/directory/ad
// answers when no domain controller could be asked.
type notCheckedDirectory struct {
	directory.Directory
	down *atomic.Bool
}

func (d notCheckedDirectory) VerifyPassword(ctx context.Context, name, pw string) (directory.Identity, error) {
	if d.down.Load() {
		return directory.Identity{}, &directory.Error{Kind: directory.ErrUnavailable,
			Reason: "ad: offline, password logins need a domain controller", Err: directory.ErrNotChecked}
	}
	return d.Directory.VerifyPassword(ctx, name, pw)
}

// An answer the directory never gave is not a failed password: refusals
// during an outage count against nothing, ban nobody, and the right
// password works the moment the directory is back (issue 20).
func TestOutageIsNotAFailedPassword(t *testing.T) {
	cls := startCluster(t, 1)
	var down atomic.Bool
	down.Store(true)
	tg := startTestGatewayWith(t, cls[0], func(d directory.Directory) directory.Directory { return notCheckedDirectory{d, &down} },
		fastThrottle, `[{name: login1, addr: "127.0.0.1:1", pool: general}]`, fastRefusals...)
	for i := range 10 {
		if r := tg.password(t, "127.0.0.71", "alice", alicePassword); !strings.Contains(r, "need a domain controller") {
			t.Fatalf("attempt %d during the outage: %q", i, r)
		}
	}
	if n := tg.gw.pw.Load().throttle.Len(); n != 0 {
		t.Errorf("the outage left %d throttle entries", n)
	}
	for _, k := range []string{banUser + "alice", banPair + "alice|127.0.0.71", banAddr + "127.0.0.71"} {
		if _, banned := cls[0].Banned(k); banned {
			t.Errorf("the outage ended in a ban: %s", k)
		}
	}
	down.Store(false)
	if r := tg.password(t, "127.0.0.71", "alice", alicePassword); r != "" {
		t.Fatalf("right password once the directory is back: %q", r)
	}
}

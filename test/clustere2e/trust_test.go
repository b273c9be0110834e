package clustere2e_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// refusals reads frontdoor_gossip_refused_total by reason from a gateway.
func (w *world) refusals(ctx context.Context, g *gw) (map[string]float64, error) {
	body, err := harness.AdminGet(ctx, g.admin, "/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range refusedLine.FindAllStringSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] = v
	}
	return out, nil
}

var refusedLine = regexp.MustCompile(`(?m)^frontdoor_gossip_refused_total\{reason="([a-z_]+)"\} ([0-9.e+]+)$`)

// writeAgentConfig writes an agent configuration for this world's gossip.
func (w *world) writeAgentConfig(t *testing.T, path string, fields map[string]any) {
	t.Helper()
	host := fields["bind"].(string)
	delete(fields, "bind")
	_, ps, _ := net.SplitHostPort(freeAddr(t, host))
	port, _ := strconv.Atoi(ps)
	cs := w.clusterSection("", host, port, []string{w.gws[0].gossipAddr, w.gws[1].gossipAddr})
	delete(cs, "name")
	fields["cluster"] = cs
	b, err := yaml.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRogueAgents: agents hold the gossip key, and a login node's root may
// be lost. Two liars join with real `frontdoor agent` processes: one for a
// node no gateway lists (with a key of its own and a load that would win
// every login), and login2's own agent reconfigured to claim login1's
// address and another pool. The gateways refuse both, count why, and keep
// routing by what they know: logins never reach an address the inventory
// did not give, and login2 goes stale rather than moving.
func TestRogueAgents(t *testing.T) {
	w := newWorld(t, 1.0, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	login1, login2 := w.node("login1"), w.node("login2")

	// The unlisted node, signing with its own key.
	dir := filepath.Join(w.dir, "login9")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "host_key")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	metrics := filepath.Join(dir, "metrics.yaml")
	if err := os.WriteFile(metrics, []byte("load1: 0\ncpus: 64\nmem_avail_frac: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg9 := filepath.Join(dir, "agent.yaml")
	w.writeAgentConfig(t, cfg9, map[string]any{"node": "login9", "pool": "general", "ssh_addr": login1.sshd.Addr(),
		"metrics_file": metrics, "drain_file": filepath.Join(dir, "drain"), "interval": "1s", "probe_interval": "250ms",
		"host_key": key, "bind": login1.host})
	p, err := startProc(filepath.Join(dir, "agent.log"), bin, "agent", "--config", cfg9)
	if err != nil {
		t.Fatal(err)
	}
	w.track(p, nil)

	// login2's agent, its root lost, now claims login1's sshd and pool gpu.
	login2.agent.kill()
	restarted := time.Now()
	w.writeAgentConfig(t, login2.agentCfg, map[string]any{"node": "login2", "pool": "gpu", "ssh_addr": login1.sshd.Addr(),
		"metrics_file": login2.metrics, "drain_file": login2.drain, "interval": "1s", "probe_interval": "250ms",
		"host_key": login2.sshd.HostKeyPath(), "bind": login2.host})
	if err := w.startAgent(login2); err != nil {
		t.Fatal(err)
	}

	for _, g := range w.gws {
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := w.refusals(ctx, g)
			if err == nil && r["unknown_node"] > 0 && r["addr_mismatch"] > 0 {
				t.Logf("%s refused: %v", g.name, r)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: refusals %v (err %v), want unknown_node and addr_mismatch", g.name, r, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		v, err := w.fetchView(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := v["login9"]; ok {
			t.Fatalf("%s lists the unlisted login9: %+v", g.name, v["login9"])
		}
		// login2's restarted agent may withdraw its old health (a signed
		// tombstone is its own node's to send), but nothing it claims now
		// is taken.
		if n2, ok := v["login2"]; ok {
			if n2.Addr != login2.sshd.Addr() || n2.Pool != "general" {
				t.Fatalf("%s: login2 at %s in %s, want the inventory's %s in general", g.name, n2.Addr, n2.Pool, login2.sshd.Addr())
			}
			if n2.HealthAt.After(restarted) {
				t.Fatalf("%s took login2's health after its lying restart (measured %v, restart %v)", g.name, n2.HealthAt, restarted)
			}
		}
	}
	// Logins land on login1 (where login1's sshd really is) or on login2
	// at its own address, never through a claimed one; once login2's
	// health is stale, on login1 only.
	for _, g := range w.gws {
		if _, err := w.waitView(g, 30*time.Second, func(v view) error {
			if v.usable("login2") == nil {
				return fmt.Errorf("login2 still usable")
			}
			return v.usable("login1")
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.burst(ctx, 4); count(got, "login1") != len(got) {
		t.Fatalf("logins went to %v, want login1 only", got)
	}
}

// TestDiscoveredNodeWithAgent: login2 is not configured on the gateways;
// HyperPod discovery (a fake SageMaker API) lists it Running. Its agent's
// signed health is taken for the discovered name and address, it takes
// logins, and when HyperPod marks it ShuttingDown it takes no new ones
// while the session on it goes on.
func TestDiscoveredNodeWithAgent(t *testing.T) {
	w := newWorldOpts(t, worldOpts{discovered: []string{"login2"}}, 1.0, 0.1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, g := range w.gws {
		v, err := w.fetchView(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if n := v["login2"]; n.NoAgent || n.Addr != w.node("login2").sshd.Addr() {
			t.Fatalf("%s: login2 %+v, want its agent's health at the discovered address", g.name, n)
		}
	}
	u := w.freshUser()
	h := w.hold(ctx, w.gws[0], u.Name+"+login2", u)
	w.fake.SetStatus("i-login2", "ShuttingDown", "scaling down")
	for _, g := range w.gws {
		if _, err := w.waitView(g, 30*time.Second, func(v view) error {
			if v["login2"].NotTaking == "" {
				return fmt.Errorf("login2 still taking logins: %+v", v["login2"])
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.burst(ctx, 4); count(got, "login2") > 0 {
		t.Fatalf("new logins sent to a node HyperPod is shutting down: %v", got)
	}
	if err := h.ping("still-here"); err != nil {
		t.Fatalf("the session on login2: %v", err)
	}
}

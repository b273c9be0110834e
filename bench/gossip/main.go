// Command gossip benchmarks gossiped health and routing in one process on
// loopback: N agents and M gateways as real memberlist members with the
// production timing profile (cluster.DefaultConfig), encrypted.
//
// It measures how fast a health change reaches every gateway, how fast a
// crashed node is out of every gateway's candidates, how evenly a burst of
// logins spreads (next to blind round-robin, per-flow hashing as a Network
// Load Balancer does, and per-gateway least-connections), and how many
// reconnects through another gateway land on the same node. Results go to
// a JSON file.
//
//	go run ./bench/gossip -out bench/results/gossip.json
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

func main() {
	var o opts
	flag.StringVar(&o.out, "out", "bench/results/gossip.json", "JSON result file")
	flag.IntVar(&o.agents, "agents", 50, "login-node agents")
	flag.IntVar(&o.gateways, "gateways", 3, "gateways")
	flag.IntVar(&o.trials, "trials", 100, "health propagation trials")
	flag.IntVar(&o.kills, "kills", 5, "dead-node trials")
	flag.IntVar(&o.logins, "logins", 1000, "logins per placement burst")
	flag.Uint64Var(&o.seed, "seed", 1, "random seed")
	flag.IntVar(&o.choices, "choices", route.DefaultConfig().Choices, "route power-of-d choices")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/gossip:", err)
		os.Exit(1)
	}
}

type opts struct {
	out                                     string
	agents, gateways, trials, kills, logins int
	seed                                    uint64
	choices                                 int
}

func run(ctx context.Context, o opts) error {
	b := &bench{o: o, rnd: mrand.New(mrand.NewPCG(o.seed, 42)), rcfg: route.DefaultConfig()}
	b.rcfg.Choices = o.choices
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return err
	}
	b.key = base64.StdEncoding.EncodeToString(k)
	gk := make([]byte, 32)
	rand.Read(gk)
	b.gatewayKey = base64.StdEncoding.EncodeToString(gk)
	b.inv = &benchInventory{keys: map[string]ssh.PublicKey{}}
	defer b.close()

	res := Result{Targets: Targets{HealthP99MS: 1000, DeadNodeMS: 5000, MaxOnMean: 1.15, StickyPercent: 100}}
	dc := cluster.DefaultConfig()
	res.Setup = Setup{
		Agents: o.agents, Gateways: o.gateways, Encrypted: true, Seed: o.seed,
		GossipIntervalMS: ms(dc.GossipInterval), GossipNodes: dc.GossipNodes,
		ProbeIntervalMS: ms(dc.ProbeInterval), ProbeTimeoutMS: ms(dc.ProbeTimeout),
		SuspicionMult: dc.SuspicionMult, PushPullMS: ms(dc.PushPullInterval),
		AgentIntervalMS: ms(agentInterval), Choices: b.rcfg.Choices,
		HeartbeatMS: ms(dc.HeartbeatInterval), NodeDeadAfterMS: ms(dc.NodeDeadAfter),
		CPUs: runtime.NumCPU(),
	}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.Setup.LoadAvgAtStart = strings.TrimSpace(string(la))
	}

	start := time.Now()
	var err error
	// Agents republish every agentInterval like the real agent, from the
	// moment they exist (and the cluster re-sends it every heartbeat).
	pubCtx, stopPub := context.WithCancel(ctx)
	var pubWG sync.WaitGroup
	defer func() { stopPub(); pubWG.Wait() }()
	if err := b.startCluster(ctx, func() {
		pubWG.Go(func() {
			t := time.NewTicker(agentInterval)
			defer t.Stop()
			for {
				select {
				case <-pubCtx.Done():
					return
				case <-t.C:
					b.publishAll()
				}
			}
		})
	}); err != nil {
		return err
	}
	res.StartupConvergeMS = ms(time.Since(start))
	logf("cluster of %d converged in %.0f ms", o.agents+o.gateways, res.StartupConvergeMS)
	if res.Steady, err = steadyCost(ctx, 30*time.Second); err != nil {
		return err
	}
	logf("steady state: %.0f UDP packets/s (%.0f kB/s), %.2f TCP streams/s, %.3f cores busy",
		res.Steady.UDPPacketsPerS, res.Steady.UDPBytesPerS/1000, res.Steady.TCPStreamsPerS, res.Steady.CPUCores)

	if res.HealthPropagationMS, err = b.propagation(ctx); err != nil {
		return err
	}
	logf("health to every gateway: p50 %.0f ms, p99 %.0f ms", res.HealthPropagationMS.P50, res.HealthPropagationMS.P99)

	for _, sc := range []string{"empty", "skewed"} {
		p, err := b.placement(ctx, sc)
		if err != nil {
			return err
		}
		res.Placement = append(res.Placement, p...)
		if sc == "empty" {
			// Reconnects are measured on the sessions of the first burst.
			if res.Sticky, err = b.sticky(ctx); err != nil {
				return err
			}
			logf("sticky reconnects: live %.1f%%, after end %.1f%%", 100*res.Sticky.LiveShare, 100*res.Sticky.AfterEndShare)
		}
		if err := b.reset(ctx); err != nil {
			return err
		}
	}
	for _, p := range res.Placement {
		logf("placement %-6s %-28s rate %5.0f/s: max/mean %.3f (max %d, mean %.1f; best possible %.3f)", p.Scenario, p.Strategy, p.RatePerS, p.MaxOnMean, p.Max, p.Mean, p.BestMaxOnMean)
	}

	res.RefusedLogins = b.refused
	if res.DeadNodeExclusionMS, err = b.deadNodes(ctx); err != nil {
		return err
	}
	logf("dead node out of every gateway: p50 %.0f ms, max %.0f ms", res.DeadNodeExclusionMS.P50, res.DeadNodeExclusionMS.Max)

	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.out, append(out, '\n'), 0o644); err != nil {
		return err
	}
	logf("wrote %s", o.out)
	return nil
}

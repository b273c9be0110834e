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
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
	"golang.org/x/crypto/ssh"
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

// Result is the JSON written to -out.
type Result struct {
	Setup               Setup        `json:"setup"`
	StartupConvergeMS   float64      `json:"startup_convergence_ms"`
	HealthPropagationMS Dist         `json:"health_propagation_ms"`
	DeadNodeExclusionMS Dist         `json:"dead_node_exclusion_ms"`
	Placement           []Placement  `json:"placement"`
	Sticky              StickyResult `json:"sticky_reconnect"`
	RefusedLogins       int          `json:"refused_logins"`
	Steady              Cost         `json:"steady_cost"`
	Targets             Targets      `json:"targets"`
}

type Setup struct {
	Agents           int     `json:"agents"`
	Gateways         int     `json:"gateways"`
	GossipIntervalMS float64 `json:"gossip_interval_ms"`
	GossipNodes      int     `json:"gossip_nodes"`
	ProbeIntervalMS  float64 `json:"probe_interval_ms"`
	ProbeTimeoutMS   float64 `json:"probe_timeout_ms"`
	SuspicionMult    int     `json:"suspicion_mult"`
	PushPullMS       float64 `json:"push_pull_interval_ms"`
	AgentIntervalMS  float64 `json:"agent_publish_interval_ms"`
	HeartbeatMS      float64 `json:"heartbeat_interval_ms"`
	NodeDeadAfterMS  float64 `json:"node_dead_after_ms"`
	Encrypted        bool    `json:"encrypted"`
	Choices          int     `json:"route_choices"`
	Seed             uint64  `json:"seed"`
	LoadAvgAtStart   string  `json:"loadavg_at_start"` // the machine is shared; read results with it
	CPUs             int     `json:"cpus"`
}

type Dist struct {
	N int `json:"n"`
	// Missed counts trials that did not finish within the trial timeout;
	// they are included in the quantiles at the timeout value.
	Missed int     `json:"missed"`
	P50    float64 `json:"p50"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

type Placement struct {
	Scenario  string  `json:"scenario"` // empty: idle nodes; skewed: uneven sessions before the burst
	Strategy  string  `json:"strategy"`
	RatePerS  float64 `json:"rate_per_s,omitempty"`
	Max       int     `json:"max_sessions"`
	Mean      float64 `json:"mean_sessions"`
	MaxOnMean float64 `json:"max_over_mean"`
	// BestMaxOnMean is the best any placement could do from the same
	// starting sessions (water-filling).
	BestMaxOnMean float64 `json:"best_possible_max_over_mean"`
}

type StickyResult struct {
	N              int     `json:"n"`
	LiveShare      float64 `json:"share_with_live_session"`
	AfterEndShare  float64 `json:"share_after_session_ended"`
	NLBExpectShare float64 `json:"per_flow_hash_expected_share"`
}

type Targets struct {
	HealthP99MS   float64 `json:"health_p99_ms"`
	DeadNodeMS    float64 `json:"dead_node_ms"`
	MaxOnMean     float64 `json:"max_over_mean"`
	StickyPercent float64 `json:"sticky_percent"`
}

const agentInterval = 5 * time.Second // agent.DefaultConfig().Interval

// agentSim is a login node: a real cluster member publishing health whose
// session count is the benchmark's ground truth.
type agentSim struct {
	name string
	c    *cluster.Cluster

	mu      sync.Mutex // mu protects the following
	initial int        // sessions not through the gateways
	live    int        // sessions placed by the benchmark
	marker  float64    // Load5 carries the propagation trial marker
	dead    bool
}

func (a *agentSim) publish() error {
	// Held across PublishHealth so a concurrent publish cannot write an
	// older marker with a newer version.
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return nil
	}
	return a.c.PublishHealth(cluster.Health{
		Pool: "general", Addr: a.name + ":22", SSHDUp: true, At: time.Now(),
		Sessions: a.initial + a.live, CPUs: 8, Load1: 1, Load5: a.marker, MemAvailFrac: 0.8,
	})
}

type bench struct {
	refused int // logins refused in bursts (no candidate): overload symptoms
	o       opts
	rnd     *mrand.Rand
	key     string
	// gatewayKey seals gateway state and inv judges the agents' signed
	// health, as in production: the figures include that cost.
	gatewayKey string
	inv        *benchInventory
	gws        []*cluster.Cluster
	agents     []*agentSim
	rcfg       route.Config
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

// benchInventory lists every simulated node at NAME:22 in pool general,
// with a host key made for it.
type benchInventory struct {
	mu   sync.Mutex
	keys map[string]ssh.PublicKey
}

func (inv *benchInventory) add(name string) (ssh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	inv.mu.Lock()
	inv.keys[name] = s.PublicKey()
	inv.mu.Unlock()
	return s, nil
}

func (inv *benchInventory) Node(name string) (cluster.InventoryNode, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	_, ok := inv.keys[name]
	return cluster.InventoryNode{Name: name, Addr: name + ":22", Pool: "general"}, ok
}

func (inv *benchInventory) CheckHostKey(name string, key ssh.PublicKey) error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if k, ok := inv.keys[name]; !ok || string(k.Marshal()) != string(key.Marshal()) {
		return errors.New("not the node's host key")
	}
	return nil
}

func (b *bench) memberConfig(name string, join ...string) cluster.Config {
	c := cluster.DefaultConfig()
	c.Name = name
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.GatewayPort = 0
	c.Join = join
	c.Label = "frontdoor-bench"
	c.SecretKeys = []string{b.key}
	return c
}

func (b *bench) startCluster(ctx context.Context, agentsUp func()) error {
	log := slog.New(slog.DiscardHandler)
	for i := range b.o.gateways {
		cfg := b.memberConfig(fmt.Sprintf("gw%d", i+1))
		if i > 0 {
			cfg.GatewayJoin = []string{b.gws[0].GatewayAddr()}
		}
		cfg.GatewayKeys = []string{b.gatewayKey}
		c, err := cluster.Start(ctx, cfg, cluster.Options{Role: cluster.RoleGateway, Logger: log, Inventory: b.inv})
		if err != nil {
			return err
		}
		b.gws = append(b.gws, c)
	}
	// Every agent sends to every gateway, as agent.yaml's join lists them.
	var gateways []string
	for _, g := range b.gws {
		gateways = append(gateways, g.LocalAddr())
	}
	for i := range b.o.agents {
		name := fmt.Sprintf("login%02d", i+1)
		hk, err := b.inv.add(name)
		if err != nil {
			return err
		}
		c, err := cluster.Start(ctx, b.memberConfig(name, gateways...), cluster.Options{Role: cluster.RoleAgent, Logger: log, HostKey: hk})
		if err != nil {
			return err
		}
		a := &agentSim{name: name, c: c}
		b.agents = append(b.agents, a)
		if err := a.publish(); err != nil {
			return err
		}
	}
	agentsUp()
	return waitFor(ctx, 2*time.Minute, func() error {
		for _, gw := range b.gws {
			if n := len(gw.Members()); n != b.o.gateways {
				return fmt.Errorf("%s sees %d gateways", gw.Name(), n)
			}
			if n := len(candidates(gw.Nodes(), time.Now(), b.rcfg)); n != b.o.agents {
				return fmt.Errorf("%s sees %d candidate nodes", gw.Name(), n)
			}
		}
		return nil
	})
}

func (b *bench) close() {
	var wg sync.WaitGroup
	for _, a := range b.agents {
		wg.Go(func() { a.c.Close() })
	}
	for _, g := range b.gws {
		wg.Go(func() { g.Close() })
	}
	wg.Wait()
}

func (b *bench) publishAll() {
	for _, a := range b.agents {
		if err := a.publish(); err != nil {
			logf("publish %s: %v", a.name, err)
		}
	}
}

// propagation changes one node's health and times until every gateway
// holds the new value.
func (b *bench) propagation(ctx context.Context) (Dist, error) {
	var lat []float64
	missed := 0
	defer func() { logf("propagation: %d trials missed", missed) }()
	for i := range b.o.trials {
		a := b.agents[b.rnd.IntN(len(b.agents))]
		marker := float64(1000 + i)
		a.mu.Lock()
		a.marker = marker
		a.mu.Unlock()
		t0 := time.Now()
		if err := a.publish(); err != nil {
			return Dist{}, err
		}
		err := poll(ctx, 10*time.Second, time.Millisecond, func() bool {
			for _, gw := range b.gws {
				if h, ok := gw.HealthOf(a.name); !ok || h.Load5 != marker {
					return false
				}
			}
			return true
		})
		if err != nil {
			if ctx.Err() != nil {
				return Dist{}, ctx.Err()
			}
			missed++
			logf("propagation trial %d (%s): %v", i, a.name, err)
			if missed >= 10 {
				logf("propagation: giving up after %d misses: the machine is too loaded to measure", missed)
				lat = append(lat, ms(time.Since(t0)))
				break
			}
		}
		lat = append(lat, ms(time.Since(t0)))
		// Spread trials over gossip rounds.
		time.Sleep(time.Duration(b.rnd.IntN(50)) * time.Millisecond)
	}
	d := dist(lat)
	d.Missed = missed
	return d, nil
}

// deadNodes crashes agents one at a time and times until no gateway
// counts them as candidates.
func (b *bench) deadNodes(ctx context.Context) (Dist, error) {
	var lat []float64
	for i := range min(b.o.kills, len(b.agents)-1) {
		a := b.agents[len(b.agents)-1-i]
		a.mu.Lock()
		a.dead = true
		a.mu.Unlock()
		t0 := time.Now()
		if err := a.c.Crash(); err != nil {
			return Dist{}, err
		}
		err := poll(ctx, 60*time.Second, 5*time.Millisecond, func() bool {
			for _, gw := range b.gws {
				if slices.Contains(candidates(gw.Nodes(), time.Now(), b.rcfg), a.name) {
					return false
				}
			}
			return true
		})
		if err != nil {
			return Dist{}, fmt.Errorf("dead node %s: %w", a.name, err)
		}
		lat = append(lat, ms(time.Since(t0)))
	}
	return dist(lat), nil
}

// candidates returns the names route.Decide would consider.
func candidates(nodes []route.Node, now time.Time, cfg route.Config) []string {
	d, _ := route.Decide(route.Request{Pools: []string{"general"}, Now: now}, nodes, cfg, nil)
	var out []string
	for _, v := range d.Verdicts {
		if v.Candidate {
			out = append(out, v.Node)
		}
	}
	return out
}

// login is one placed session, kept for the reconnect test.
type login struct {
	user string
	gw   int
	node string
	end  func()
}

var sessionsMu sync.Mutex // guards lastLogins
var lastLogins []login

// placement runs the baselines in simulation and frontdoor for real.
func (b *bench) placement(ctx context.Context, scenario string) ([]Placement, error) {
	n := len(b.agents)
	initial := make([]int, n)
	if scenario == "skewed" {
		// A few busy nodes, most lightly used: u² shape, 0..40 sessions.
		for i := range initial {
			u := b.rnd.Float64()
			initial[i] = int(40 * u * u)
		}
	}
	for i, a := range b.agents {
		a.mu.Lock()
		a.initial, a.live = initial[i], 0
		a.mu.Unlock()
	}
	if err := b.freshHealth(ctx); err != nil {
		return nil, err
	}
	var out []Placement
	add := func(strategy string, rate float64, counts []int) {
		mx, mean := imbalance(initial, counts)
		out = append(out, Placement{Scenario: scenario, Strategy: strategy, RatePerS: rate, Max: mx, Mean: mean,
			MaxOnMean: float64(mx) / mean, BestMaxOnMean: float64(waterFill(initial, b.o.logins)) / mean})
	}
	logins, g := b.o.logins, b.o.gateways

	// Blind round-robin over nodes (one rotation per gateway).
	counts := make([]int, n)
	next := make([]int, g)
	for i := range next {
		next[i] = b.rnd.IntN(n)
	}
	for i := range logins {
		gw := i % g
		counts[next[gw]]++
		next[gw] = (next[gw] + 1) % n
	}
	add("round-robin", 0, counts)

	// Per-flow hashing: each TCP flow has a fresh source port, so a
	// 5-tuple hash is uniform over nodes.
	counts = make([]int, n)
	for range logins {
		counts[b.rnd.IntN(n)]++
	}
	add("per-flow-hash (NLB)", 0, counts)

	// Per-gateway least-connections: each gateway knows only its own.
	counts = make([]int, n)
	own := make([][]int, g)
	for i := range own {
		own[i] = make([]int, n)
	}
	for i := range logins {
		gw := i % g
		best := 0
		for j := range n {
			if own[gw][j] < own[gw][best] || (own[gw][j] == own[gw][best] && b.rnd.IntN(2) == 0) {
				best = j
			}
		}
		own[gw][best]++
		counts[best]++
	}
	add("per-gateway-least-conn", 0, counts)

	// frontdoor, for real, at two arrival rates; between them the
	// sessions are ended and agents re-measure.
	for ri, rate := range []float64{100, 1000} {
		if ri > 0 {
			if err := b.reset(ctx); err != nil {
				return nil, err
			}
			for i, a := range b.agents {
				a.mu.Lock()
				a.initial = initial[i]
				a.mu.Unlock()
			}
			if err := b.freshHealth(ctx); err != nil {
				return nil, err
			}
		}
		placed, err := b.burst(ctx, scenario, logins, rate)
		if err != nil {
			return nil, err
		}
		add("frontdoor (gossip + p2c)", rate, placed)
		if os.Getenv("BENCH_DEBUG") != "" {
			for i := range placed {
				if initial[i]+placed[i] > 40 {
					logf("debug %s: initial %d placed %d", b.agents[i].name, initial[i], placed[i])
				}
			}
		}
		logf("frontdoor %s burst at %.0f/s done", scenario, rate)
	}
	return out, nil
}

// burst sends logins through the gateways in turn at rate per second.
func (b *bench) burst(ctx context.Context, scenario string, logins int, rate float64) ([]int, error) {
	idx := map[string]int{}
	for i, a := range b.agents {
		idx[a.name] = i
	}
	g := len(b.gws)
	var wg sync.WaitGroup
	errs := make([]error, g)
	results := make([][]login, g)
	interval := time.Duration(float64(time.Second) * float64(g) / rate)
	var failed atomic.Int64
	t0 := time.Now()
	for gi := range g {
		rnd := mrand.New(mrand.NewPCG(b.o.seed, uint64(gi)))
		wg.Go(func() {
			gw := b.gws[gi]
			for i := gi; i < logins; i += g {
				// Pace against the start so slow iterations do not
				// lower the rate.
				if d := time.Until(t0.Add(time.Duration(i/g) * interval)); d > 0 {
					time.Sleep(d)
				}
				if ctx.Err() != nil {
					errs[gi] = ctx.Err()
					return
				}
				user := fmt.Sprintf("%s-u%04d", scenario, i)
				d, err := route.Decide(route.Request{User: user, Pools: []string{"general"}, Affinity: gw.Affinity(user), Now: time.Now()},
					gw.Nodes(), b.rcfg, rnd)
				if err != nil {
					why := map[string]int{}
					for _, v := range d.Verdicts {
						why[v.Why]++
					}
					logf("login %s on %s refused: %v (verdicts %v)", user, gw.Name(), err, why)
					failed.Add(1)
					continue
				}
				node := d.Order[0]
				gw.NoteRouted(node)
				a := b.agents[idx[node]]
				a.mu.Lock()
				a.live++
				a.mu.Unlock()
				results[gi] = append(results[gi], login{user: user, gw: gi, node: node, end: gw.StartSession(user, node)})
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if n := failed.Load(); n > 0 {
		logf("%s burst at %.0f/s: %d logins refused", scenario, rate, n)
		b.refused += int(n)
	}
	counts := make([]int, len(b.agents))
	sessionsMu.Lock()
	lastLogins = lastLogins[:0]
	for _, r := range results {
		for _, l := range r {
			counts[idx[l.node]]++
			lastLogins = append(lastLogins, l)
		}
	}
	sessionsMu.Unlock()
	return counts, nil
}

// sticky reconnects users of the last burst through another gateway,
// first while their session lives (a second VS Code connection), then
// after it ended.
func (b *bench) sticky(ctx context.Context) (StickyResult, error) {
	sessionsMu.Lock()
	ls := slices.Clone(lastLogins)
	sessionsMu.Unlock()
	b.rnd.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
	ls = ls[:min(300, len(ls))]
	rnd := mrand.New(mrand.NewPCG(b.o.seed, 99))
	same := func(l login) (bool, error) {
		other := b.gws[(l.gw+1+rnd.IntN(len(b.gws)-1))%len(b.gws)]
		d, err := route.Decide(route.Request{User: l.user, Pools: []string{"general"}, Affinity: other.Affinity(l.user), Now: time.Now()},
			other.Nodes(), b.rcfg, rnd)
		if err != nil {
			return false, err
		}
		if d.Order[0] != l.node && os.Getenv("BENCH_DEBUG") != "" {
			why := ""
			for _, v := range d.Verdicts {
				if v.Node == l.node {
					why = v.Why
				}
			}
			a := other.Affinity(l.user)
			logf("debug sticky miss %s via %s: was %s, affinity %+v, reason %q, verdict %q", l.user, other.Name(), l.node, a, d.Reason, why)
		}
		return d.Order[0] == l.node, nil
	}
	var live, after int
	for _, l := range ls {
		ok, err := same(l)
		if err != nil {
			return StickyResult{}, err
		}
		if ok {
			live++
		}
	}
	for _, l := range ls {
		l.end()
		b.agentOf(l.node).addLive(-1)
		l.end = func() {}
	}
	// Reconnect right after the ends were issued: the affinity written at
	// session start is already everywhere; the end needs no propagation.
	for _, l := range ls {
		ok, err := same(l)
		if err != nil {
			return StickyResult{}, err
		}
		if ok {
			after++
		}
	}
	sessionsMu.Lock()
	for i := range lastLogins {
		for _, l := range ls {
			if lastLogins[i].user == l.user {
				lastLogins[i].end = func() {}
			}
		}
	}
	sessionsMu.Unlock()
	n := float64(len(ls))
	return StickyResult{N: len(ls), LiveShare: float64(live) / n, AfterEndShare: float64(after) / n, NLBExpectShare: 1 / float64(len(b.agents))}, ctx.Err()
}

func (b *bench) agentOf(name string) *agentSim {
	for _, a := range b.agents {
		if a.name == name {
			return a
		}
	}
	return nil
}

func (a *agentSim) addLive(d int) {
	a.mu.Lock()
	a.live += d
	a.mu.Unlock()
}

// reset ends every session of the last burst and waits until agents have
// published a measurement after that, so routed counts from the burst no
// longer apply.
func (b *bench) reset(ctx context.Context) error {
	sessionsMu.Lock()
	for _, l := range lastLogins {
		l.end()
	}
	lastLogins = lastLogins[:0]
	sessionsMu.Unlock()
	for _, a := range b.agents {
		a.mu.Lock()
		a.live = 0
		a.mu.Unlock()
	}
	return b.freshHealth(ctx)
}

// freshHealth publishes every agent's health now and waits until every
// gateway has it with no routed logins pending.
func (b *bench) freshHealth(ctx context.Context) error {
	time.Sleep(2 * time.Millisecond) // measurements strictly after earlier routing (ms clock)
	since := time.Now()
	b.publishAll()
	err := waitFor(ctx, 30*time.Second, func() error {
		for _, gw := range b.gws {
			for _, n := range gw.Nodes() {
				if !n.Alive {
					continue
				}
				if n.HealthAt.Before(since) || n.RecentlyRouted != 0 {
					return fmt.Errorf("%s: %s not re-measured", gw.Name(), n.Name)
				}
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		logf("warning: carrying on without fresh health everywhere: %v", err)
		return nil
	}
	return err
}

func imbalance(initial, added []int) (int, float64) {
	mx, sum := 0, 0
	for i := range initial {
		t := initial[i] + added[i]
		mx = max(mx, t)
		sum += t
	}
	return mx, float64(sum) / float64(len(initial))
}

// waterFill is the lowest possible maximum after adding logins sessions.
func waterFill(initial []int, logins int) int {
	for m := slices.Max(initial); ; m++ {
		room := 0
		for _, x := range initial {
			room += max(0, m-x)
		}
		if room >= logins {
			return m
		}
	}
}

func dist(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(p*float64(len(s)-1) + 0.5)
		return s[i]
	}
	return Dist{N: len(s), P50: q(0.5), P99: q(0.99), Max: s[len(s)-1]}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// poll checks cond every step until it holds or within passes.
func poll(ctx context.Context, within, step time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(step):
		}
	}
	return nil
}

func waitFor(ctx context.Context, within time.Duration, cond func() error) error {
	var last error
	err := poll(ctx, within, 20*time.Millisecond, func() bool { last = cond(); return last == nil })
	if err != nil {
		return fmt.Errorf("%w: %v", err, last)
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

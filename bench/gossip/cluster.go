package main

// The benchmark's cluster: gateways and agents as real memberlist members
// in this process, encrypted, with the production timing profile. Gateways
// judge the agents' signed health against an inventory, and agents
// republish on the real agent's interval, so the figures include that cost.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

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

func (inv *benchInventory) Node(name string) (node.Node, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	_, ok := inv.keys[name]
	return node.Node{Name: name, Addr: name + ":22", Pool: "general"}, ok
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

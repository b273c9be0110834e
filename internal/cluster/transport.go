package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/memberlist"
)

// The two transports, both memberlist instances (encryption, labels,
// compression and the wire format come with it):
//
//	                 gateway                          agent
//	gateway pool     GatewayPort, gateway keys,       —
//	                 label+"/gateways"; SWIM among
//	                 the gateways, gateway state
//	agent port       BindPort, secret_keys, label;    BindPort, secret_keys, label;
//	                 takes signed health; the old     never joined: sends its
//	                 single pool (SinglePoolCompat)   health to each of Join
//
// A gateway's agent port joins nothing unless SinglePoolCompat: agents of
// this release are in no pool, and agents of the previous one join it
// themselves (their seeds are the gateways). Its membership is never used
// for anything but finding gateways of the previous release
// (SinglePoolCompat).

// gatewayLabelSuffix separates the gateways' pool from the agent port even
// without encryption (insecure labs), so a misdirected agent is refused.
const gatewayLabelSuffix = "/gateways"

// gatewayPoolKeys derives the gateways' pool keys from gateway_keys: a key
// for this one use, so the same gateway key also seals (trust.go) without
// the two uses meeting.
func gatewayPoolKeys(keys [][]byte) [][]byte {
	out := make([][]byte, 0, len(keys))
	for _, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte("frontdoor gateway pool v1"))
		out = append(out, m.Sum(nil))
	}
	return out
}

// startTransports creates the memberlist instances of this member's role.
func (c *Cluster) startTransports() error {
	cfg := c.cfg
	secret, err := decodeKeys("secret_keys", cfg.SecretKeys)
	if err != nil {
		return err
	}
	mc, err := cfg.memberlistConfig(cfg.BindPort, cfg.Label, secret)
	if err != nil {
		return err
	}
	c.keyring = mc.Keyring
	ad := &agentPortDelegate{c: c}
	mc.Delegate, mc.Events = ad, ad
	mc.Logger = log.New(&logWriter{log: c.log.With("transport", "agent_port")}, "", 0)
	if c.agentPort, err = memberlist.Create(mc); err != nil {
		return fmt.Errorf("cluster: start %s on %s:%d: %w", cfg.Name, cfg.BindAddr, cfg.BindPort, err)
	}
	if c.role != RoleGateway {
		return nil
	}
	gk, err := decodeKeys("gateway_keys", cfg.GatewayKeys)
	if err != nil {
		c.agentPort.Shutdown()
		return err
	}
	gc, err := cfg.memberlistConfig(cfg.GatewayPort, cfg.Label+gatewayLabelSuffix, gatewayPoolKeys(gk))
	if err != nil {
		c.agentPort.Shutdown()
		return err
	}
	gd := &gatewayDelegate{c: c}
	gc.Delegate, gc.Events = gd, gd
	gc.Logger = log.New(&logWriter{log: c.log.With("transport", "gateway_pool")}, "", 0)
	if c.gw, err = memberlist.Create(gc); err != nil {
		c.agentPort.Shutdown()
		return fmt.Errorf("cluster: start the gateways' pool of %s on %s:%d: %w", cfg.Name, cfg.BindAddr, cfg.GatewayPort, err)
	}
	return nil
}

// gatewaySeeds is GatewayJoin, or the hosts of Join at GatewayPort.
func (c Config) gatewaySeeds() []string {
	if len(c.GatewayJoin) > 0 || c.GatewayPort == 0 {
		return c.GatewayJoin
	}
	var out []string
	for _, j := range c.Join {
		if host, _, err := net.SplitHostPort(j); err == nil {
			out = append(out, net.JoinHostPort(host, strconv.Itoa(c.GatewayPort)))
		}
	}
	return out
}

// resolveTargets resolves an agent's Join into the addresses it sends to.
// A name that does not resolve now keeps its previous addresses.
func (c *Cluster) resolveTargets(ctx context.Context) {
	c.mu.Lock()
	prev := c.targets
	c.mu.Unlock()
	var out []memberlist.Address
	for _, j := range c.cfg.Join {
		host, port, err := net.SplitHostPort(j)
		if err != nil {
			continue
		}
		var ips []string
		if net.ParseIP(host) != nil {
			ips = []string{host}
		} else if ips, err = net.DefaultResolver.LookupHost(ctx, host); err != nil {
			c.log.Warn("cluster: cannot resolve a gateway; keeping its previous addresses", "gateway", j, "err", err)
			for _, a := range prev {
				if a.Name == j {
					out = append(out, a)
				}
			}
			continue
		}
		for _, ip := range ips {
			// Name carries the configured entry, to find it again above;
			// memberlist ignores it unless node names are required.
			out = append(out, memberlist.Address{Addr: net.JoinHostPort(ip, port), Name: j})
		}
	}
	slices.SortFunc(out, func(a, b memberlist.Address) int { return strings.Compare(a.Addr, b.Addr) })
	out = slices.CompactFunc(out, func(a, b memberlist.Address) bool { return a.Addr == b.Addr })
	c.mu.Lock()
	c.targets = out
	c.mu.Unlock()
}

package cluster

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"log"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

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

// gatewayPoolKeys derives the gateways' pool keys from gateway_keys: a key
// for this one use, so the same gateway key also seals (seal.go) without
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

// logWriter turns memberlist's "[LEVEL] memberlist: ..." lines into slog.
// Warnings and errors are limited to logBurst a logWindow, the rest
// counted in one line: memberlist logs every packet it refuses (a wrong
// key or label) at error level, so anyone who can send the gateways a
// packet could otherwise flood their log.
type logWriter struct {
	log *slog.Logger

	mu         sync.Mutex // mu protects the following
	window     time.Time  // start of the current window
	n          int        // lines logged in it
	suppressed int        // lines dropped in it
}

const (
	logWindow = 10 * time.Second
	logBurst  = 20
)

func (w *logWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	lvl := slog.LevelDebug
	switch {
	case bytes.HasPrefix(p, []byte("[ERR]")):
		lvl = slog.LevelError
	case bytes.HasPrefix(p, []byte("[WARN]")):
		lvl = slog.LevelWarn
	}
	if lvl > slog.LevelDebug {
		now := time.Now()
		w.mu.Lock()
		if now.Sub(w.window) >= logWindow {
			if w.suppressed > 0 {
				w.log.Warn("cluster: memberlist warnings and errors suppressed", "count", w.suppressed, "window", logWindow)
			}
			w.window, w.n, w.suppressed = now, 0, 0
		}
		w.n++
		drop := w.n > logBurst
		if drop {
			w.suppressed++
		}
		w.mu.Unlock()
		if drop {
			return len(p), nil
		}
	}
	w.log.Log(context.Background(), lvl, line)
	return len(p), nil
}

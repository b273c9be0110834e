package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/directory/ad"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/harness/samba"
	"github.com/frontdoor-hpc/frontdoor/test/harness/slowlink"
	"github.com/frontdoor-hpc/frontdoor/test/harness/stats"
)

// timingAlpha is the significance of the KS comparisons.
const timingAlpha = 1e-3

// timingWorkers clients probe at once, each from its own address
// (127.0.0.200 on), so the per-source limits do not mix into the figures.
const timingWorkers = 8

// refusalTiming measures, for account and made-up names: the directory's
// own lookups through a slow link (what a stranger could tell apart), then
// the gateway's refusals of a stranger's key and of a wrong password,
// nothing cached and (for keys) the account cached against made-up names
// asked afresh, with the DC 40 ms and then 250 ms away.
func (b *bench) refusalTiming(ctx context.Context, account string, n int) ([]Timing, error) {
	var out []Timing
	dcLDAPS := net.JoinHostPort(b.dc.Addr(), strconv.Itoa(samba.LDAPSPort))
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	stranger, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	keyAuth := ssh.PublicKeys(stranger)
	pwAuth := ssh.Password("Wrong-Passw0rd!")
	for _, delay := range []time.Duration{40 * time.Millisecond, 250 * time.Millisecond} {
		link, err := slowlink.Start(dcLDAPS, delay)
		if err != nil {
			return nil, err
		}
		defer link.Close()
		with := func(ttl time.Duration) func(*ad.Config) { return viaLink(link, b.dc, ttl) }
		if delay == 40*time.Millisecond {
			t, err := b.directLookups(ctx, link, account, n)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		cold, err := b.gateway(ctx, fmt.Sprintf("gw-timing-cold-%v", delay), with(time.Millisecond))
		if err != nil {
			return nil, err
		}
		probes := []struct {
			name string
			g    *gw
			auth ssh.AuthMethod
		}{
			{"stranger's key, nothing cached", cold, keyAuth},
			{"wrong password, nothing cached", cold, pwAuth},
		}
		if delay == 40*time.Millisecond {
			cached, err := b.gateway(ctx, "gw-timing-cached", with(10*time.Minute))
			if err != nil {
				return nil, err
			}
			// The account answers from the cache from now on.
			if err := refusal(ctx, cached.addr, account, b.keys.HostPublicKey, keyAuth, ""); err != nil {
				return nil, err
			}
			probes = append(probes, struct {
				name string
				g    *gw
				auth ssh.AuthMethod
			}{"stranger's key, account cached, made-up names asked", cached, keyAuth})
		}
		for _, p := range probes {
			log.Printf("authbench: refusal timing: %s, DC link %v", p.name, delay)
			acct, madeUp, err := b.timeRefusals(ctx, p.g, account, p.auth, n)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			out = append(out, timing(p.name, delay, acct, madeUp))
		}
	}
	return out, nil
}

// viaLink points a directory at dc through link, identities cached for
// ttl, made-up names never.
func viaLink(link *slowlink.Link, dc *samba.DC, ttl time.Duration) func(*ad.Config) {
	return func(a *ad.Config) {
		a.URLs, a.TLSServerName = []string{"ldaps://" + link.Addr()}, dc.Addr()
		a.CacheTTL, a.NegativeCacheTTL = ttl, time.Millisecond
	}
}

// directLookups times the directory itself through link: the oracle.
func (b *bench) directLookups(ctx context.Context, link *slowlink.Link, account string, n int) (Timing, error) {
	c := harness.ADConfig(b.dc)
	viaLink(link, b.dc, time.Millisecond)(&c)
	d, err := ad.New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		return Timing{}, err
	}
	defer d.Close()
	var acct, madeUp []time.Duration
	for range n {
		for _, name := range []string{account, ghostName()} {
			start := time.Now()
			_, err := d.Lookup(ctx, name)
			took := time.Since(start)
			if (err == nil) != (name == account) {
				return Timing{}, fmt.Errorf("direct lookup of %s: %v", name, err)
			}
			if name == account {
				acct = append(acct, took)
			} else {
				madeUp = append(madeUp, took)
			}
		}
	}
	return timing("the directory itself (no gateway): one lookup", 40*time.Millisecond, acct, madeUp), nil
}

// timeRefusals times n refusals for account and n for made-up names,
// interleaved, timingWorkers at once.
func (b *bench) timeRefusals(ctx context.Context, g *gw, account string, auth ssh.AuthMethod, n int) (acct, madeUp []time.Duration, err error) {
	return stats.Interleaved(n, timingWorkers, func(w, i int) (time.Duration, error) {
		user := account
		if i%2 == 1 {
			user = ghostName()
		}
		start := time.Now()
		err := refusal(ctx, g.addr, user, b.keys.HostPublicKey, auth, "127.0.0."+strconv.Itoa(200+w))
		return time.Since(start), err
	})
}

// refusal connects from src (or any address) and tries auth as user; it
// succeeds when the gateway refuses, as it must.
func refusal(ctx context.Context, addr, user string, hostKey ssh.PublicKey, auth ssh.AuthMethod, src string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d := net.Dialer{}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	cc, chans, reqs, err := ssh.NewClientConn(nc, addr, &ssh.ClientConfig{
		User: user, Auth: []ssh.AuthMethod{auth}, HostKeyCallback: ssh.FixedHostKey(hostKey),
		Config: ssh.Config{KeyExchanges: []string{kex}},
	})
	if err == nil {
		ssh.NewClient(cc, chans, reqs).Close()
		return errors.New("logged in")
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

var ghosts atomic.Int64

// ghostName is a made-up account name, new each time, as long as a real
// one could be (sAMAccountName: at most 20 characters).
func ghostName() string {
	return fmt.Sprintf("fdab-g%d-%d", time.Now().Unix()%100000, ghosts.Add(1))
}

func timing(probe string, delay time.Duration, acct, madeUp []time.Duration) Timing {
	c := stats.Compare(acct, madeUp, timingAlpha)
	return Timing{Probe: probe, LinkMs: float64(delay.Milliseconds()), Account: quantiles(c.A), MadeUp: quantiles(c.B),
		KSD: round(c.D), Critical: round(c.Critical), Alpha: c.Alpha, Separate: c.Separate()}
}

func quantiles(s stats.Summary) Quantiles {
	ms := func(d time.Duration) float64 { return round(float64(d.Microseconds()) / 1000) }
	return Quantiles{N: s.N, P10: ms(s.P10), P50: ms(s.P50), P90: ms(s.P90), P99: ms(s.P99), Max: ms(s.Max)}
}

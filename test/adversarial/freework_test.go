package adversarial_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// What a stranger can make the gateway do before proving anything is
// bounded, and a login from another address stays fast while each attack
// runs (issue 21, "Free work"). The gateway's directory is the suite's DC
// behind a 20 ms link, nothing cached (every name costs LDAP searches), so
// queued lookups would show. From 127.0.0.2, for attackSpan each:
//
//   - re-keying: connections that ask for key exchange after key exchange
//     (each costs the gateway a key agreement and a host-key signature);
//     the gateway ends each after its fourth, before authentication;
//   - random names: connections sending none for a new, well-formed name
//     each time (each an LDAP search); the per-source lookup limit refuses
//     most of them unseen;
//   - noise and hellos: connections that send HTTP, or an SSH version and
//     nothing more, open no node connection; complete SSH hellos open at
//     most speculative_per_source.
//
// Meanwhile bob logs in from 127.0.0.3 (key, query and signature, then
// `id -un` on the node), each login within loginBound of the quiet
// baseline. (That the lookup gate serves another source ahead of a
// flood's queue is shown exactly by internal/gateway's
// TestLookupGateFairness; here it holds end to end.)
func TestPreAuthWorkBounded(t *testing.T) {
	const (
		attackSpan = 4 * time.Second
		attackers  = 4
		perSource  = 2 // backend.speculative_per_source's default
	)
	link := dcLink(t, 20*time.Millisecond)
	// key_refusal_delay above the default: bob's lookups are cold, and on
	// a loaded 2-core machine under attack they may take longer than
	// 500 ms without being queued behind the attacker's.
	g := newGateway(t, gwOptions{Edit: func(c *config.Config) {
		throughLink(c, link)
		c.Directory.AD.CacheTTL, c.Directory.AD.NegativeCacheTTL = time.Millisecond, time.Millisecond
		c.Gateway.KeyRefusalDelay = time.Second
	}})
	var baseline time.Duration
	for range 3 {
		baseline = max(baseline, timedLogin(t, g, "127.0.0.3"))
	}
	loginBound := 2*baseline + 2*time.Second
	t.Logf("bob's login from 127.0.0.3, quiet: %v (bound while attacked %v)", baseline.Round(time.Millisecond), loginBound.Round(time.Millisecond))

	// during runs attack from 127.0.0.2 on attackers goroutines for
	// attackSpan, and bob's logins from 127.0.0.3 meanwhile.
	during := func(t *testing.T, attack func(ctx context.Context)) {
		ctx, cancel := context.WithTimeout(t.Context(), attackSpan)
		defer cancel()
		var wg sync.WaitGroup
		for range attackers {
			wg.Add(1)
			go func() { defer wg.Done(); attack(ctx) }()
		}
		var worst time.Duration
		for ctx.Err() == nil {
			worst = max(worst, timedLogin(t, g, "127.0.0.3"))
		}
		wg.Wait()
		t.Logf("bob's slowest login from 127.0.0.3 during the attack: %v", worst.Round(time.Millisecond))
		if worst > loginBound {
			t.Errorf("a login from another address took %v during the attack (quiet: %v)", worst, baseline)
		}
	}

	t.Run("re-keying", func(t *testing.T) {
		var conns, most atomic.Int32
		during(t, func(ctx context.Context) {
			for ctx.Err() == nil {
				n, err := rekeyFlood(ctx, g, "127.0.0.2")
				if err != nil {
					continue // refused by admission: try again
				}
				conns.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
			}
		})
		t.Logf("re-keying: %d connections, at most %d key exchanges each; gateway refusals: %v", conns.Load(), most.Load(), limited(t, g, "kex"))
		if most.Load() != 4 {
			t.Errorf("at most %d key exchanges on one connection before authentication, want exactly 4", most.Load())
		}
		if limited(t, g, "kex") == 0 {
			t.Error("the gateway counted no refused key exchange")
		}
	})

	t.Run("random names", func(t *testing.T) {
		var names atomic.Int64
		before := limited(t, g, "lookup_rate") + limited(t, g, "lookup_queue")
		during(t, func(ctx context.Context) {
			for ctx.Err() == nil {
				rc, err := tryDialRaw(ctx, g, "127.0.0.2")
				if err != nil {
					continue
				}
				if rc.RequestService("ssh-userauth") == nil {
					for ctx.Err() == nil {
						if r, err := rc.Auth(rawssh.NoneRequest(ghost())); err != nil || r.Kind != rawssh.ReplyFailure {
							break // max_auth_tries ends the connection
						}
						names.Add(1)
					}
				}
				rc.Close()
			}
		})
		refused := limited(t, g, "lookup_rate") + limited(t, g, "lookup_queue") - before
		t.Logf("random names: %d sent from one address; %v refused unseen by the per-source lookup limits", names.Load(), refused)
		if refused == 0 || float64(names.Load())-refused > 40+10*attackSpan.Seconds()+1 {
			t.Errorf("%d names sent, %v refused: more were looked up than the per-source rate allows", names.Load(), refused)
		}
	})

	t.Run("noise and hellos", func(t *testing.T) {
		base := nodeConns(t)
		var held []net.Conn
		var rcs []*rawssh.RawConn
		defer func() {
			for _, c := range held {
				c.Close()
			}
			for _, rc := range rcs {
				rc.Close()
			}
		}()
		for _, noise := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "SSH-2.0-scanner\r\n", "\x00\x01\x02garbage"} {
			for range 4 {
				c, err := dialTCP(t.Context(), g, "127.0.0.2")
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, c)
				c.Write([]byte(noise))
			}
		}
		peak := peakNodeConns(t, base, time.Second)
		t.Logf("noise and bare versions: %d connections from one address; node connections: %d", len(held), peak)
		if peak != 0 {
			t.Errorf("connections that sent no SSH hello opened %d node connections", peak)
		}
		for range 6 {
			rc, err := tryDialRaw(t.Context(), g, "127.0.0.2")
			if err != nil {
				t.Fatal(err)
			}
			rcs = append(rcs, rc)
		}
		peak = peakNodeConns(t, base, time.Second)
		t.Logf("complete hellos: %d connections from one address; node connections: %d (speculative_per_source %d)", len(rcs), peak, perSource)
		if peak == 0 || peak > perSource {
			t.Errorf("%d node connections for one address's hellos, want 1..%d", peak, perSource)
		}
		if took := timedLogin(t, g, "127.0.0.3"); took > loginBound {
			t.Errorf("a login from another address took %v meanwhile", took)
		}
	})
}

// timedLogin is loginAs bob from src, timed.
func timedLogin(t *testing.T, g *harness.Gateway, src string) time.Duration {
	t.Helper()
	start := time.Now()
	loginAs(t, g, src, bob)
	return time.Since(start)
}

// rekeyFlood connects from src and asks for key exchanges until the
// gateway ends the connection, and returns how many completed (each ends
// in a host key the client verifies).
func rekeyFlood(ctx context.Context, g *harness.Gateway, src string) (int32, error) {
	nc, err := dialTCP(ctx, g, src)
	if err != nil {
		return 0, err
	}
	nc.SetDeadline(time.Now().Add(dialTimeout))
	var n atomic.Int32
	fixed := rawssh.FixedHostKey(hostKey(g))
	rc, err := rawssh.NewRawConn(nc, g.Addr(), &rawssh.ClientConfig{HostKeyCallback: func(h string, a net.Addr, k rawssh.PublicKey) error {
		n.Add(1)
		return fixed(h, a, k)
	}})
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for {
			if _, err := rc.ReadPacket(); err != nil {
				return
			}
		}
	}()
	for {
		before := n.Load()
		rc.Rekey()
		tick := time.NewTicker(5 * time.Millisecond)
		for n.Load() == before {
			select {
			case <-closed:
				tick.Stop()
				return n.Load(), nil
			case <-ctx.Done():
				tick.Stop()
				return n.Load(), nil
			case <-tick.C:
			}
		}
		tick.Stop()
	}
}

// peakNodeConns watches the TCP table for span and returns the most node
// connections seen above base.
func peakNodeConns(t *testing.T, base int, span time.Duration) int {
	t.Helper()
	peak := 0
	deadline := time.Now().Add(span)
	for time.Now().Before(deadline) {
		peak = max(peak, nodeConns(t)-base)
		tm := time.NewTimer(50 * time.Millisecond)
		<-tm.C
	}
	return peak
}

// limited is the gateway's count of pre-auth requests refused for reason
// (frontdoor_preauth_limited_total).
func limited(t *testing.T, g *harness.Gateway, reason string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	for _, c := range g.Server().Collectors() {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "frontdoor_preauth_limited_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

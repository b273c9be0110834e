package clustere2e_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// killedLogin is one login of TestNodeKillUnderLogins.
type killedLogin struct {
	start, authed time.Time // authed: zero if authentication failed
	took          time.Duration
	node          string
	err           error
}

// TestNodeKillUnderLogins: kill -9 the preferred node's sshd and agent
// while logins arrive through both gateways, before and after the
// gateways know (node_dead_after). Every login that had not reached the
// node when it died must succeed elsewhere: a login routed to a node
// whose dial fails falls back to the next node of its decision at once.
// (A login that had authenticated on the node is a session there; those
// may end.) The soak's node-kill fault: 46 of 362 failed.
func TestNodeKillUnderLogins(t *testing.T) {
	// login3 is the least loaded: every fresh user goes there first. Every
	// client here is 127.0.0.1: its per-source limits must not be what
	// refuses them.
	w := newWorldOpts(t, worldOpts{edit: func(c *config.Config) {
		g := &c.Gateway
		g.PerSourceMaxStartups, g.PerSourceBurst, g.PerSourceRate = 1000, 1000, 1000
		g.PerSourceLookups, g.PerSourceLookupBurst, g.PerSourceLookupRate = g.MaxLookups, 1000, 1000
	}}, 2.0, 2.0, 0.2)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const workers = 6
	us := make([]*harness.User, workers)
	for i := range us {
		us[i] = w.freshUser()
	}
	var mu sync.Mutex
	var logins []killedLogin
	loginOnce := func(g *gw, u *harness.User) killedLogin {
		l := killedLogin{start: time.Now()}
		c, err := harness.DialSSH(ctx, g.sshAddr, u.Name, keys.HostPublicKey, ssh.PublicKeys(u.Signer))
		if err != nil {
			l.err = fmt.Errorf("login %s via %s: %w", u.Name, g.name, err)
			return l
		}
		defer c.Close()
		l.authed = time.Now()
		s, err := c.NewSession()
		if err != nil {
			l.err = fmt.Errorf("session %s via %s: %w", u.Name, g.name, err)
			return l
		}
		defer s.Close()
		out, err := s.Output(`echo "$SSH_CONNECTION"`)
		if err != nil {
			l.err = fmt.Errorf("command %s via %s: %w", u.Name, g.name, err)
			return l
		}
		l.node, l.err = w.nodeFromSSHConnection(string(out))
		return l
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range us {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				l := loginOnce(w.gws[(i+n)%len(w.gws)], u)
				l.took = time.Since(l.start)
				mu.Lock()
				logins = append(logins, l)
				mu.Unlock()
			}
		}()
	}
	onNode := func(node string, from time.Time) error {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range logins {
			if l.node == node && l.start.After(from) {
				return nil
			}
		}
		return fmt.Errorf("no login on %s yet", node)
	}
	// The loop runs, and reaches the node to be killed.
	if err := harness.WaitFor(ctx, 30*time.Second, func() error { return onNode("login3", time.Time{}) }); err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	killed := time.Now()
	w.node("login3").kill()
	// Past the dead-node bound, and until logins have landed elsewhere.
	err := harness.WaitFor(ctx, 2*time.Minute, func() error {
		if time.Since(killed) < 2*deadBound {
			return fmt.Errorf("%s after the kill", time.Since(killed).Round(time.Second))
		}
		return onNode("login1", killed.Add(deadBound))
	})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}

	var before, after, failed, endedOnNode int
	var slowest time.Duration
	for _, l := range logins {
		if l.start.Before(killed) {
			before++
		} else {
			after++
		}
		switch {
		case l.err == nil:
			if l.node == "login3" && l.start.After(killed) {
				t.Errorf("a login started %s after the kill landed on the dead node", l.start.Sub(killed).Round(time.Millisecond))
			}
		case !l.authed.IsZero() && l.authed.Before(killed):
			endedOnNode++ // a session on the node when it died
		default:
			failed++
			t.Errorf("login started %s after the kill failed after %s: %v", l.start.Sub(killed).Round(time.Millisecond),
				l.took.Round(time.Millisecond), l.err)
		}
		if !l.start.Before(killed) && l.err == nil {
			slowest = max(slowest, l.authed.Sub(l.start))
		}
	}
	t.Logf("%d logins before the kill, %d after; %d failed, %d were sessions on the node when it died; slowest authentication after it %s",
		before, after, failed, endedOnNode, slowest.Round(time.Millisecond))
	if after < workers {
		t.Fatalf("only %d logins after the kill", after)
	}
}

package adversarial_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/ad"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/harness/samba"
	"github.com/frontdoor-hpc/frontdoor/test/harness/slowlink"
	"github.com/frontdoor-hpc/frontdoor/test/harness/stats"
)

// Does any answer before proof tell a stranger whether a name exists
// (issue 21, "Who exists")? Against the real Samba DC behind a slow link
// (every answer of the DC 40 ms late, so an account's three searches and
// bind cost visibly more than an unknown name's one search), strangers at
// eight addresses time the gateway's answer to none, to a key query (cold,
// cached against expired, and the second on a connection), to a wrong
// password and to a wrong keyboard-interactive answer, for an account that
// exists and for made-up names, interleaved. A two-sample
// Kolmogorov–Smirnov test must not tell the two apart (significance 1e-4,
// 40 samples each), and every refusal comes no earlier than its configured
// delay. The same link with a 250 ms delay makes the directory slower than
// the delays: the answers are still indistinguishable (refused unseen at
// the delay).
//
// So that the test can fail, it first shows the oracle it closes: the same
// directory, asked directly through the link, does tell the names apart
// (the KS test separates them). BENCHMARKS.md has the figures of `make
// bench` (authbench) for the same measurement with more samples.
func TestRefusalTimingIndependent(t *testing.T) {
	const (
		samples = 40 // per class and probe
		workers = 8
		alpha   = 1e-4
		delay   = 40 * time.Millisecond
		slow    = 250 * time.Millisecond
	)
	ctx := t.Context()
	victim := testActor(ctx, t, "adv-timing")
	link := dcLink(t, delay)
	slowLink := dcLink(t, slow)

	// The oracle: the directory itself, through the link.
	dir := linkedDirectory(t, link)
	var exists, madeUp []time.Duration
	for range 30 {
		for _, name := range []string{victim.name, ghost()} {
			start := time.Now()
			_, err := dir.Lookup(ctx, name)
			d := time.Since(start)
			if (err == nil) != (name == victim.name) {
				t.Fatalf("direct lookup of %s: %v", name, err)
			}
			if name == victim.name {
				exists = append(exists, d)
			} else {
				madeUp = append(madeUp, d)
			}
		}
	}
	oracle := stats.Compare(exists, madeUp, alpha)
	t.Logf("directory lookups through a %v link, account vs made-up: %s | %s | KS D %.3f (critical %.3f)", delay, oracle.A, oracle.B, oracle.D, oracle.Critical)
	if !oracle.Separate() {
		t.Fatalf("the directory itself does not tell the names apart through the link: the test below could not fail")
	}

	opts := func(l *slowlink.Link, cacheTTL time.Duration) gwOptions {
		return gwOptions{Edit: func(c *config.Config) {
			throughLink(c, l)
			a := &c.Directory.AD
			a.CacheTTL, a.NegativeCacheTTL, a.PoolSize = cacheTTL, time.Millisecond, 8
			c.Gateway.MaxLookups = 8
			c.Throttle.UserFailures, c.Throttle.UserSourceFailures, c.Throttle.SourceFailures = 100000, 100000, 100000
		}}
	}
	cold := newGateway(t, opts(link, time.Millisecond))
	cached := newGateway(t, opts(link, 10*time.Minute))
	verySlow := newGateway(t, opts(slowLink, time.Millisecond))
	cfg := cold.Config().Gateway
	keyDelay, pwDelay := cfg.KeyRefusalDelay, cfg.PasswordRefusalDelay
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	stranger, err := rawssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	// Warm the cache of the cached gateway: the account answers from
	// memory, made-up names (negative_cache_ttl 1ms) from the DC.
	rc := dialRaw(t, cached, "")
	userauth(t, rc)
	send(t, rc, "warm-up", rawssh.PublicKeyQuery(victim.name, stranger, ""))
	rc.Close()

	for _, p := range []probe{
		{"none", cold, 0, keyDelay / 2, func(rc *rawssh.RawConn, user string) (time.Duration, error) {
			return timeAuth(rc, rawssh.NoneRequest(user))
		}},
		{"key query, cold", cold, keyDelay, 0, keyProbe(stranger)},
		{"key query, account cached vs made-up name from the DC", cached, keyDelay, 0, keyProbe(stranger)},
		{"second key query on one connection", cold, 0, keyDelay / 2, func(rc *rawssh.RawConn, user string) (time.Duration, error) {
			if _, err := timeAuth(rc, rawssh.PublicKeyQuery(user, stranger, "")); err != nil {
				return 0, err
			}
			return timeAuth(rc, rawssh.PublicKeyQuery(user, stranger, ""))
		}},
		{"wrong password", cold, pwDelay, 0, func(rc *rawssh.RawConn, user string) (time.Duration, error) {
			return timeAuth(rc, rawssh.PasswordRequest(user, "Wrong-Passw0rd!"))
		}},
		{"wrong keyboard-interactive answer", cold, pwDelay, 0, func(rc *rawssh.RawConn, user string) (time.Duration, error) {
			r, err := rc.Auth(rawssh.KeyboardInteractiveRequest(user))
			if err != nil || r.Kind != rawssh.ReplyInfoRequest {
				return 0, fmt.Errorf("keyboard-interactive: %v %v", r, err)
			}
			start := time.Now()
			r, err = rc.Respond("Wrong-Passw0rd!")
			return replyTime(start, r, err)
		}},
		{"key query, directory slower than the delay", verySlow, keyDelay, 0, keyProbe(stranger)},
		{"wrong password, directory slower than the delay", verySlow, pwDelay, 0, func(rc *rawssh.RawConn, user string) (time.Duration, error) {
			return timeAuth(rc, rawssh.PasswordRequest(user, "Wrong-Passw0rd!"))
		}},
	} {
		t.Run(p.name, func(t *testing.T) {
			e, m := p.measure(t, victim.name, samples, workers)
			c := stats.Compare(e, m, alpha)
			t.Logf("%s: account %s | made-up %s | KS D %.3f (critical %.3f at %g)", p.name, c.A, c.B, c.D, c.Critical, alpha)
			if c.Separate() {
				t.Errorf("the answer times tell an account from a made-up name: KS D %.3f > %.3f", c.D, c.Critical)
			}
		})
	}
}

// probe is one kind of answer before proof, timed on fresh connections.
type probe struct {
	name string
	gw   *harness.Gateway
	// Every sample must take at least atLeast and, if atMost is set, at
	// most that.
	atLeast, atMost time.Duration
	run             func(rc *rawssh.RawConn, user string) (time.Duration, error)
}

// measure times samples answers for account and as many for made-up
// names, interleaved, from workers sources at once (127.0.0.150 on).
func (p probe) measure(t *testing.T, account string, samples, workers int) (existing, madeUp []time.Duration) {
	t.Helper()
	existing, madeUp, err := stats.Interleaved(samples, workers, func(w, i int) (time.Duration, error) {
		user := account
		if i%2 == 1 {
			user = ghost()
		}
		d, err := p.sample(t.Context(), "127.0.0."+strconv.Itoa(150+w), user)
		if err == nil && (d < p.atLeast || p.atMost > 0 && d > p.atMost) {
			err = fmt.Errorf("%s answered after %v, want between %v and %v", user, d, p.atLeast, p.atMost)
		}
		return d, err
	})
	if err != nil {
		t.Error(err)
	}
	return existing, madeUp
}

func (p probe) sample(ctx context.Context, src, user string) (time.Duration, error) {
	rc, err := tryDialRaw(ctx, p.gw, src)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	if err := rc.RequestService("ssh-userauth"); err != nil {
		return 0, err
	}
	return p.run(rc, user)
}

func keyProbe(k rawssh.PublicKey) func(*rawssh.RawConn, string) (time.Duration, error) {
	return func(rc *rawssh.RawConn, user string) (time.Duration, error) {
		return timeAuth(rc, rawssh.PublicKeyQuery(user, k, ""))
	}
}

// timeAuth sends req and returns how long the refusal took.
func timeAuth(rc *rawssh.RawConn, req rawssh.AuthRequest) (time.Duration, error) {
	start := time.Now()
	r, err := rc.Auth(req)
	return replyTime(start, r, err)
}

func replyTime(start time.Time, r *rawssh.AuthReply, err error) (time.Duration, error) {
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if r.Kind != rawssh.ReplyFailure {
		return 0, fmt.Errorf("got %s, want refused", r.Kind)
	}
	return d, nil
}

var ghosts atomic.Int64

// ghost is a made-up user name, new for every call, as long as a real
// account's name could be (sAMAccountName: 20 characters at most).
func ghost() string {
	return fmt.Sprintf("adv-g%d-%d", time.Now().Unix()%100000, ghosts.Add(1))
}

// dcLink is a slow link to the suite's DC (LDAPS), closed when the test
// ends.
func dcLink(t *testing.T, delay time.Duration) *slowlink.Link {
	t.Helper()
	l, err := slowlink.Start(net.JoinHostPort(dc.Addr(), strconv.Itoa(samba.LDAPSPort)), delay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// throughLink points c's directory at the suite's DC through l.
func throughLink(c *config.Config, l *slowlink.Link) {
	a := &c.Directory.AD
	a.URLs, a.TLSServerName = []string{"ldaps://" + l.Addr()}, dc.Addr()
}

// linkedDirectory is the gateways' AD directory reached through l, with
// nothing cached.
func linkedDirectory(t *testing.T, l *slowlink.Link) *ad.Directory {
	t.Helper()
	c := harness.ADConfig(dc)
	c.URLs, c.TLSServerName = []string{"ldaps://" + l.Addr()}, dc.Addr()
	c.CacheTTL, c.NegativeCacheTTL = time.Millisecond, time.Millisecond
	d, err := ad.New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

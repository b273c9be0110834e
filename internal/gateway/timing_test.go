package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
)

// slowDirectory answers for the names in delay only after that delay, as
// a directory does when an account costs more searches than an unknown
// name, or when it is overloaded.
type slowDirectory struct {
	directory.Directory
	delay map[string]time.Duration
}

func (d slowDirectory) wait(ctx context.Context, name string) error {
	t := time.NewTimer(d.delay[name])
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d slowDirectory) Lookup(ctx context.Context, name string) (directory.Identity, error) {
	if err := d.wait(ctx, name); err != nil {
		return directory.Identity{}, err
	}
	return d.Directory.Lookup(ctx, name)
}

func (d slowDirectory) VerifyPassword(ctx context.Context, name, pw string) (directory.Identity, error) {
	if err := d.wait(ctx, name); err != nil {
		return directory.Identity{}, err
	}
	return d.Directory.VerifyPassword(ctx, name, pw)
}

// Timing bounds of these tests: refusals go no earlier than their delay,
// and not much later (a loaded 2-core machine adds scheduling delay, the
// same for every name).
const (
	testKeyDelay = 300 * time.Millisecond
	testPwDelay  = 400 * time.Millisecond
	lateSlack    = 250 * time.Millisecond
)

// timingGateway is a test gateway with the refusal delays above and a
// directory slowed per name by delay. The throttle's backoff is 1ms: the tests send wrong passwords from one
// source in a row, and its waits are not what they measure.
func timingGateway(t *testing.T, delay map[string]time.Duration) *testGateway {
	t.Helper()
	return startTestGatewayWith(t, nil, func(d directory.Directory) directory.Directory { return slowDirectory{d, delay} },
		"throttle: {base_delay: 1ms, max_delay: 1ms}\n",
		`[{name: login1, addr: "127.0.0.1:1", pool: general}]`,
		"key_refusal_delay: "+testKeyDelay.String(), "password_refusal_delay: "+testPwDelay.String())
}

// timed runs f and returns how long it took.
func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

func within(t *testing.T, what string, took, at time.Duration) {
	t.Helper()
	if took < at || took > at+lateSlack {
		t.Errorf("%s answered after %v, want %v (+%v at most)", what, took.Round(time.Millisecond), at, lateSlack)
	}
}

// Every refusal before proof goes at a time that does not depend on the
// name: none at once; a key's first refusal for a name at
// key_refusal_delay, whether the name exists, is unknown, or the directory
// is slower than the delay (then the key is refused unseen); later ones at
// once; passwords at password_refusal_delay.
func TestRefusalTimesAreFixed(t *testing.T) {
	tg := timingGateway(t, map[string]time.Duration{
		"alice": 50 * time.Millisecond, // an account: several searches
		"bob":   2 * testKeyDelay,      // a directory slower than the delay
	})
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	stranger, _ := ssh.NewSignerFromKey(priv)
	wrong := stranger.PublicKey()

	c := testConn(t, tg)
	within(t, "none for alice", timed(func() { c.authNone(meta{"alice"}) }), 0)
	within(t, "first wrong key for alice", timed(func() { c.authPublicKey(meta{"alice"}, wrong) }), testKeyDelay)
	within(t, "second wrong key for alice", timed(func() { c.authPublicKey(meta{"alice"}, wrong) }), 0)
	within(t, "first key for a made-up name", timed(func() { c.authPublicKey(meta{"nobody"}, wrong) }), testKeyDelay)
	within(t, "second key for it", timed(func() { c.authPublicKey(meta{"nobody"}, wrong) }), 0)
	cert := &ssh.Certificate{Key: wrong, CertType: ssh.UserCert, ValidPrincipals: []string{"alice"}, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, stranger); err != nil {
		t.Fatal(err)
	}
	within(t, "a user certificate (the client's own input)", timed(func() { c.authPublicKey(meta{"alice"}, cert) }), 0)

	// none, then the query a moment later: the refusal is due
	// key_refusal_delay after the none.
	c = testConn(t, tg)
	noneAt := time.Now()
	c.authNone(meta{"nobody"})
	tm := time.NewTimer(100 * time.Millisecond)
	<-tm.C
	queryAt := time.Now()
	within(t, "key refusal 100ms after none", timed(func() { c.authPublicKey(meta{"nobody"}, wrong) }), noneAt.Add(testKeyDelay).Sub(queryAt))

	// A directory slower than the delay: bob's own key is refused unseen
	// at the delay, and again at once while the lookup runs; once it has
	// answered, the key is accepted.
	c = testConn(t, tg)
	bob := tg.bobKey.PublicKey()
	var err error
	within(t, "bob's key, slow directory", timed(func() { _, err = c.authPublicKey(meta{"bob"}, bob) }), testKeyDelay)
	if err == nil {
		t.Fatal("accepted before the directory answered")
	}
	if n := testutil.ToFloat64(tg.gw.metrics.limited.WithLabelValues("lookup_late")); n != 1 {
		t.Errorf("frontdoor_preauth_limited_total{reason=\"lookup_late\"} = %v after one key refused unseen, want 1", n)
	}
	if _, err := c.authPublicKey(meta{"bob"}, bob); err == nil {
		t.Fatal("accepted before the directory answered")
	}
	waitUntil(c.ctx, c.lookups["bob"].done, time.Now().Add(10*time.Second))
	if _, err := c.authPublicKey(meta{"bob"}, bob); err != nil {
		t.Fatalf("bob's key once the directory answered: %v", err)
	}

	// Passwords: a wrong one for an account, one for a made-up name, and
	// one the slow directory has not checked by the delay.
	for _, user := range []string{"alice", "nobody", "bob"} {
		c = testConn(t, tg)
		within(t, "wrong password for "+user, timed(func() { c.authPassword(meta{user}, []byte("wrong")) }), testPwDelay)
	}
	// A right password logs in without waiting for the delay (no node
	// answers here, so the login ends in a refusal banner, fast).
	c = testConn(t, tg)
	took := timed(func() { _, err = c.authPassword(meta{"alice"}, []byte(alicePassword)) })
	var banner *ssh.BannerError
	if !errors.As(err, &banner) || took >= testPwDelay {
		t.Errorf("right password: %v after %v, want the no-node banner before %v", err, took, testPwDelay)
	}
}

// A client cycling names on one connection gets no lookups beyond
// maxNamesPerConn, and no different timing for them.
func TestNamesPerConnectionBounded(t *testing.T) {
	tg := timingGateway(t, nil)
	c := testConn(t, tg)
	for i := range maxNamesPerConn + 4 {
		c.authNone(meta{fmt.Sprintf("name%d", i)})
	}
	if len(c.lookups) != maxNamesPerConn {
		t.Fatalf("%d names looked up on one connection, want %d", len(c.lookups), maxNamesPerConn)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	k, _ := ssh.NewSignerFromKey(priv)
	within(t, "a key for a name beyond the bound", timed(func() { c.authPublicKey(meta{"alice"}, k.PublicKey()) }), testKeyDelay)
}

// cachingDirectory is slowDirectory with a cache that knows every account
// at once (directory.Staler), as AD's does for users seen before.
type cachingDirectory struct{ slowDirectory }

func (d cachingDirectory) Stale(name string) (directory.Identity, bool) {
	id, err := d.Directory.Lookup(context.Background(), name)
	return id, err == nil
}

// A directory slower than key_refusal_delay: a user the cache knows may go
// on to prove their key at the delay (the login then waits for the fresh
// answer), a stranger's key is refused at the delay all the same.
func TestLateDirectoryStaleAnswer(t *testing.T) {
	tg := startTestGatewayWith(t, nil, func(d directory.Directory) directory.Directory {
		return cachingDirectory{slowDirectory{d, map[string]time.Duration{"bob": 2 * testKeyDelay}}}
	}, "", `[{name: login1, addr: "127.0.0.1:1", pool: general}]`,
		"key_refusal_delay: "+testKeyDelay.String(), "password_refusal_delay: "+testPwDelay.String())
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	stranger, _ := ssh.NewSignerFromKey(priv)

	c := testConn(t, tg)
	var err error
	within(t, "a stranger's key for bob", timed(func() { _, err = c.authPublicKey(meta{"bob"}, stranger.PublicKey()) }), testKeyDelay)
	if err == nil {
		t.Fatal("a stranger's key was accepted")
	}
	c = testConn(t, tg)
	bob := tg.bobKey.PublicKey()
	var perms *ssh.Permissions
	within(t, "bob's key from the cache", timed(func() { perms, err = c.authPublicKey(meta{"bob"}, bob) }), testKeyDelay)
	if err != nil || perms.Extensions[extPrincipal] != "bob" {
		t.Fatalf("bob's key with the directory late and bob cached: %v %v", perms, err)
	}
	// After the proof the login waits for the fresh answer (and then
	// finds no node here: the no-node banner).
	took := timed(func() { _, err = c.authVerifiedKey(meta{"bob"}, bob, perms, "ssh-ed25519") })
	var banner *ssh.BannerError
	if !errors.As(err, &banner) || took < testKeyDelay/2 {
		t.Fatalf("signed request: %v after %v, want the no-node banner once the directory answered", err, took)
	}
}

// offlineDirectory is a directory that cannot be reached: it says so
// (directory.Offliner) and checks no password.
type offlineDirectory struct{ directory.Directory }

func (offlineDirectory) Offline() bool { return true }

func (offlineDirectory) VerifyPassword(context.Context, string, string) (directory.Identity, error) {
	return directory.Identity{}, &directory.Error{Kind: directory.ErrUnavailable, Reason: "test: offline"}
}

// While the directory is unreachable a refused password says why, in the
// same words and at the same time for an account and a made-up name; a
// key login goes on.
func TestPasswordRefusedWhileOffline(t *testing.T) {
	tg := startTestGatewayWith(t, nil, func(d directory.Directory) directory.Directory { return offlineDirectory{d} },
		"throttle: {base_delay: 1ms, max_delay: 1ms}\n", `[{name: login1, addr: "127.0.0.1:1", pool: general}]`,
		"key_refusal_delay: "+testKeyDelay.String(), "password_refusal_delay: "+testPwDelay.String())
	var msgs []string
	for _, user := range []string{"alice", "nobody"} {
		c := testConn(t, tg)
		var err error
		took := timed(func() { _, err = c.authPassword(meta{user}, []byte(alicePassword)) })
		within(t, "password for "+user+" while offline", took, testPwDelay)
		var banner *ssh.BannerError
		if !errors.As(err, &banner) || !strings.Contains(banner.Message, login.MsgPasswordsUnavailable) {
			t.Fatalf("password for %s while offline: %v, want the line saying passwords cannot be checked", user, err)
		}
		msgs = append(msgs, banner.Message)
	}
	if msgs[0] != msgs[1] {
		t.Errorf("an account and a made-up name told apart: %q, %q", msgs[0], msgs[1])
	}
	b, _ := os.ReadFile(tg.audit)
	if strings.Contains(string(b), `"reason":"bad password"`) {
		t.Errorf("an offline check audited as a bad password:\n%s", b)
	}
}

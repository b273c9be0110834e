package ad

// Integration tests against a real Samba AD DC, started once for the
// package. They fail (never skip) when samba is missing: `make deps`.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/test/harness/samba"
	"github.com/frontdoor-hpc/frontdoor/test/harness/slowlink"
)

// dcAddr is this package's DC address; other packages use other ones.
const dcAddr = "127.0.2.2"

// testTimeout is the per-DC timeout. It is shorter than production's 5 s to
// keep the outage tests quick, and long enough for a loaded 2-core machine.
const testTimeout = 2 * time.Second

// slack is what a bounded-time assertion allows on top of the timeouts: room
// for a loaded machine, yet less than one more timeout, so paying a timeout
// twice still fails.
const slack = 1900 * time.Millisecond

var (
	dc    *samba.DC
	users = map[string]samba.User{}
	keys  = map[string]ssh.PublicKey{}
)

// Test accounts, all with password pw(name).
func pw(name string) string { return "Pw-" + name + "-0k!" }

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Fuzzing (go test -fuzz: the coordinator and its workers) runs only
	// fuzz targets, which need no DC; each process would otherwise start
	// one on the same address.
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return m.Run()
	}
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "frontdoor-ad-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	dc, err = samba.Start(ctx, samba.Options{Dir: dir, Addr: dcAddr})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: cannot start the Samba AD DC these tests need (run `make deps`): %v\n", err)
		if b, rerr := os.ReadFile(dir + "/samba.log"); rerr == nil {
			os.Stderr.Write(tail(b, 4000))
		}
		return 1
	}
	defer dc.Close()
	if err := populate(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: populating the DC: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "samba DC at %s ready in %v\n", dc.URL(), time.Since(start).Round(time.Millisecond))
	return m.Run()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// populate creates:
//
//	gpu-users ⊃ nlp-lab ⊃ alice      (nested)
//	bob (disabled), carol (expired), dave (must change password),
//	frank (UPN f.smith@…), locky (for lockout), erin (no keys)
func populate(ctx context.Context) error {
	steps := []func() error{
		func() error { return dc.CreateGroup(ctx, "gpu-users") },
		func() error { return dc.CreateGroup(ctx, "nlp-lab", "gpu-users") },
		// Lockout after 5 bad passwords; tests give alice at most 2.
		func() error { return dc.SetLockoutThreshold(ctx, 5, 30*time.Minute) },
	}
	for _, name := range []string{"alice", "bob", "carol", "dave", "frank", "locky", "erin"} {
		name := name
		steps = append(steps, func() error {
			groups := []string{"nlp-lab"}
			if name == "erin" {
				groups = nil
			}
			u, err := dc.CreateUser(ctx, name, pw(name), groups...)
			users[name] = u
			if err != nil || name == "erin" {
				return err
			}
			pub, _, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			k, err := ssh.NewPublicKey(pub)
			if err != nil {
				return err
			}
			keys[name] = k
			return dc.SetSSHKey(ctx, name, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))+" "+name+"@laptop")
		})
	}
	steps = append(steps,
		func() error { return dc.Disable(ctx, "bob") },
		func() error { return dc.Expire(ctx, "carol") },
		func() error { return dc.ExpirePassword(ctx, "dave") },
		func() error { return dc.SetAttribute(ctx, "frank", "userPrincipalName", "f.smith@hpc.example.edu") },
	)
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return testLoggerB()
}

func testLoggerB() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func baseConfig() Config {
	c := DefaultConfig()
	c.URLs, c.BaseDN, c.BindDN, c.BindPassword = []string{dc.URL()}, dc.BaseDN(), dc.AdminDN(), dc.AdminPassword()
	c.CAFile, c.Domain, c.Timeout = dc.CAFile(), dc.Domain(), testTimeout
	c.RetryMin, c.RetryMax = 100*time.Millisecond, 500*time.Millisecond
	c.Derive()
	return c
}

func newDir(t *testing.T, mut func(*Config)) *Directory {
	t.Helper()
	return newDirClock(t, mut, time.Now)
}

// newDirClock is newDir measuring cache ages on now.
func newDirClock(t *testing.T, mut func(*Config), now func() time.Time) *Directory {
	t.Helper()
	cfg := baseConfig()
	if mut != nil {
		mut(&cfg)
	}
	d, err := newDirectory(cfg, testLogger(t), now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// waitWatched waits until the directory watch has its first USN. Tests
// that rely on their first lookup being cached call it first: the watch
// drops every identity cached before it knew a USN (watch.go).
func waitWatched(t *testing.T, d *Directory) {
	t.Helper()
	select {
	case <-d.watched:
	case <-time.After(30 * time.Second):
		t.Fatal("the directory watch read no USN within 30s")
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantErr(t *testing.T, err, kind error, reason string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("err = %v, want %v", err, kind)
	}
	if reason != "" && directory.Reason(err) != reason {
		t.Fatalf("reason = %q, want %q", directory.Reason(err), reason)
	}
}

func hasKey(id directory.Identity, k ssh.PublicKey) bool {
	for _, got := range id.Keys {
		if string(got.Marshal()) == string(k.Marshal()) {
			return true
		}
	}
	return false
}

func TestPasswordLogin(t *testing.T) {
	d := newDir(t, nil)
	start := time.Now()
	id, err := d.VerifyPassword(ctxT(t), "alice", pw("alice"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cold password login: %v", time.Since(start))
	if id.Name != "alice" || id.Source != "ad" || id.Cached || id.UID != users["alice"].UID || id.GID != samba.GID {
		t.Errorf("identity %+v", id)
	}
	// Nested: alice is a direct member of nlp-lab only; domain users is her
	// primary group.
	if strings.Join(id.Groups, ",") != "domain users,gpu-users,nlp-lab" {
		t.Errorf("groups = %v", id.Groups)
	}
	if len(id.GroupDNs) != 3 || !strings.HasPrefix(id.GroupDNs[1], "CN=gpu-users,") {
		t.Errorf("group DNs = %v", id.GroupDNs)
	}
	if !hasKey(id, keys["alice"]) {
		t.Error("alice's key missing")
	}
	start = time.Now()
	if _, err := d.VerifyPassword(ctxT(t), "alice", pw("alice")); err != nil {
		t.Fatal(err)
	}
	t.Logf("warm password login: %v", time.Since(start))
}

func TestWrongPassword(t *testing.T) {
	d := newDir(t, nil)
	_, err := d.VerifyPassword(ctxT(t), "alice", "not-her-password")
	wantErr(t, err, directory.ErrBadPassword, "ad: 52e invalid credentials")
	// The client-facing text of the error never needs the reason; the
	// gateway shows a generic refusal. The reason is for the audit log.
}

func TestEmptyPassword(t *testing.T) {
	d := newDir(t, nil)
	for _, name := range []string{"alice", "bob", "nobody"} {
		_, err := d.VerifyPassword(ctxT(t), name, "")
		wantErr(t, err, directory.ErrBadPassword, "ad: empty password")
	}
}

func TestNameForms(t *testing.T) {
	d := newDir(t, nil)
	for _, in := range []string{"alice", "ALICE", `HPC\alice`, `hpc\Alice`, "alice@hpc.example.edu", "Alice@HPC.EXAMPLE.EDU"} {
		id, err := d.Lookup(ctxT(t), in)
		if err != nil || id.Name != "alice" {
			t.Errorf("Lookup(%q) = %q, %v", in, id.Name, err)
		}
		id, err = d.VerifyPassword(ctxT(t), in, pw("alice"))
		if err != nil || id.Name != "alice" {
			t.Errorf("VerifyPassword(%q) = %q, %v", in, id.Name, err)
		}
	}
	// A UPN whose prefix is not the account name.
	for _, in := range []string{"f.smith@hpc.example.edu", "frank"} {
		id, err := d.VerifyPassword(ctxT(t), in, pw("frank"))
		if err != nil || id.Name != "frank" {
			t.Errorf("VerifyPassword(%q) = %q, %v", in, id.Name, err)
		}
	}
	// frank has a UPN, so frank@… is not his.
	_, err := d.Lookup(ctxT(t), "frank@hpc.example.edu")
	wantErr(t, err, directory.ErrNoSuchUser, "")
}

func TestKeyAttributes(t *testing.T) {
	for _, attr := range []string{KeySSHPublicKey, KeyAltSecurityIdentities} {
		t.Run(attr, func(t *testing.T) {
			d := newDir(t, func(c *Config) { c.KeyAttribute = attr })
			id, err := d.Lookup(ctxT(t), "alice")
			if err != nil {
				t.Fatal(err)
			}
			if len(id.Keys) != 1 || !hasKey(id, keys["alice"]) {
				t.Errorf("keys = %v", id.Keys)
			}
			id, err = d.Lookup(ctxT(t), "erin")
			if err != nil || len(id.Keys) != 0 {
				t.Errorf("erin: %v keys, %v", len(id.Keys), err)
			}
		})
	}
}

func TestAccountStates(t *testing.T) {
	d := newDir(t, nil)
	tests := []struct {
		user       string
		lookup     string // reason for key logins (attributes)
		bindReason string // reason AD gives on a bind with the right password
	}{
		{"bob", "ad: account disabled", "ad: 533 account disabled"},
		{"carol", "ad: account expired", "ad: 701 account expired"},
		{"dave", "ad: password expired or must be changed", "ad: 773 password must be changed"},
	}
	for _, tc := range tests {
		t.Run(tc.user, func(t *testing.T) {
			_, err := d.Lookup(ctxT(t), tc.user)
			wantErr(t, err, directory.ErrAccountDisabled, tc.lookup)
			_, err = d.VerifyPassword(ctxT(t), tc.user, pw(tc.user))
			wantErr(t, err, directory.ErrAccountDisabled, tc.lookup)
			// What AD itself says when the user binds.
			_, err = d.bindUser(ctxT(t), users[tc.user].DN, pw(tc.user))
			wantErr(t, err, directory.ErrAccountDisabled, tc.bindReason)
		})
	}
}

func TestLockout(t *testing.T) {
	unlock := func() {
		if err := dc.Unlock(context.Background(), "locky"); err != nil {
			t.Fatal(err)
		}
	}
	unlock() // -count=N runs this again
	t.Cleanup(unlock)
	d := newDir(t, nil)
	if _, err := d.Lookup(ctxT(t), "locky"); err != nil {
		t.Fatal(err)
	}
	var err error
	for i := 0; i < 5; i++ {
		_, err = d.VerifyPassword(ctxT(t), "locky", "wrong-password")
		wantErr(t, err, directory.ErrBadPassword, "ad: 52e invalid credentials")
	}
	_, err = d.bindUser(ctxT(t), users["locky"].DN, pw("locky"))
	wantErr(t, err, directory.ErrAccountDisabled, "ad: 775 account locked out")
	d2 := newDir(t, nil)
	_, err = d2.Lookup(ctxT(t), "locky")
	wantErr(t, err, directory.ErrAccountDisabled, "ad: account locked out")
	// The cached identity of d was dropped too: an outage cannot serve it.
	_, err = d.VerifyPassword(ctxT(t), "locky", pw("locky"))
	wantErr(t, err, directory.ErrAccountDisabled, "")
}

func TestNoSuchUser(t *testing.T) {
	d := newDir(t, nil)
	_, err := d.Lookup(ctxT(t), "nobody")
	wantErr(t, err, directory.ErrNoSuchUser, "ad: no such account")
	_, err = d.VerifyPassword(ctxT(t), "nobody", "whatever-1")
	wantErr(t, err, directory.ErrNoSuchUser, "")
}

// TestInjection: hostile names are refused before any LDAP traffic, so they
// work even when the DC address is unreachable.
func TestInjection(t *testing.T) {
	d := newDir(t, nil)
	for _, in := range injectionNames {
		_, err := d.Lookup(ctxT(t), in)
		wantErr(t, err, directory.ErrInvalidName, "")
		_, err = d.VerifyPassword(ctxT(t), in, "x")
		wantErr(t, err, directory.ErrInvalidName, "")
	}
	// And the escaping holds on its own: a raw filter metacharacter in an
	// account that passed validation cannot exist, but a search for one
	// built by fetch must match nothing rather than everything.
	_, err := d.fetch(ctxT(t), Name{Account: "*"})
	wantErr(t, err, directory.ErrNoSuchUser, "")
	_, err = d.fetch(ctxT(t), Name{Account: "x)(sAMAccountName=*", UPN: "*)(|(x=*"})
	wantErr(t, err, directory.ErrNoSuchUser, "")
	// Overlong passwords are not sent.
	_, err = d.VerifyPassword(ctxT(t), "alice", strings.Repeat("p", maxPassword+1))
	wantErr(t, err, directory.ErrBadPassword, "ad: password too long")
}

func TestStartTLS(t *testing.T) {
	d := newDir(t, func(c *Config) { c.URLs = []string{dc.LDAPURL()}; c.StartTLS = true })
	if _, err := d.VerifyPassword(ctxT(t), "alice", pw("alice")); err != nil {
		t.Fatal(err)
	}
}

// hangingDC accepts TCP connections and never answers: a DC that is up at
// the kernel level but hung.
func hangingDC(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "ldaps://" + ln.Addr().String()
}

func TestFailover(t *testing.T) {
	dead := "ldaps://127.0.2.254:636" // nothing listens there: refused
	hang := hangingDC(t)
	d := newDir(t, func(c *Config) {
		c.URLs = []string{dead, hang, dc.URL()}
		c.TLSServerName = dcAddr // the hanging "DC" never gets that far
	})
	start := time.Now()
	id, err := d.Lookup(ctxT(t), "alice")
	took := time.Since(start)
	if err != nil || id.Cached {
		t.Fatalf("Lookup: %+v, %v", id, err)
	}
	t.Logf("dead + hanging DC then the real one: %v (timeout %v)", took, testTimeout)
	if took > testTimeout+slack {
		t.Errorf("failover took %v, want about one timeout", took)
	}
	start = time.Now()
	if _, err := d.VerifyPassword(ctxT(t), "alice", pw("alice")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > testTimeout {
		t.Errorf("password check after failover took %v: the answering DC should be preferred", took)
	}
}

func waitOnline(t *testing.T, d *Directory, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for d.Offline() {
		if time.Since(start) > within {
			t.Fatalf("still offline after %v", within)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	return time.Since(start)
}

// outage covers both ways a DC disappears.
func TestOutage(t *testing.T) {
	cases := []struct {
		name           string
		cachePasswords bool
		down           func() error
		up             func(ctx context.Context) error
	}{
		{"paused", false, dc.Pause, func(context.Context) error { return dc.Resume() }},
		{"killed", true, func() error { dc.Kill(); return nil }, dc.Restart},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDir(t, func(c *Config) {
				c.CachePasswords = tc.cachePasswords
				c.CacheTTL = time.Millisecond // every lookup goes to the DC while it is up
			})
			waitWatched(t, d)
			ctx := ctxT(t)
			if _, err := d.VerifyPassword(ctx, "alice", pw("alice")); err != nil {
				t.Fatal(err)
			}
			if err := tc.down(); err != nil {
				t.Fatal(err)
			}
			restored := false
			defer func() {
				if !restored {
					_ = tc.up(context.Background())
				}
			}()

			start := time.Now()
			id, err := d.Lookup(ctx, "alice")
			took := time.Since(start)
			if err != nil || !id.Cached || !hasKey(id, keys["alice"]) {
				t.Fatalf("key login while DC %s: %+v, %v", tc.name, id, err)
			}
			t.Logf("first lookup with DC %s: %v from cache (timeout %v)", tc.name, took, testTimeout)
			if took > testTimeout+slack {
				t.Errorf("took %v", took)
			}
			if !d.Offline() {
				t.Error("not offline")
			}
			start = time.Now()
			if _, err := d.Lookup(ctx, `HPC\alice`); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 200*time.Millisecond {
				t.Errorf("offline lookup took %v", took)
			}
			_, err = d.Lookup(ctx, "erin") // never cached
			wantErr(t, err, directory.ErrUnavailable, "ad: offline, identity not cached")

			id, err = d.VerifyPassword(ctx, "alice", pw("alice"))
			if tc.cachePasswords {
				if err != nil || !id.Cached {
					t.Errorf("cached password login: %+v, %v", id, err)
				}
				_, err = d.VerifyPassword(ctx, "alice", "wrong-password")
				wantErr(t, err, directory.ErrBadPassword, "ad: offline, cached password mismatch")
			} else {
				wantErr(t, err, directory.ErrUnavailable, "ad: offline, password logins need a domain controller")
			}

			restored = true
			if err := tc.up(ctx); err != nil {
				t.Fatal(err)
			}
			took = waitOnline(t, d, 10*time.Second)
			t.Logf("back online %v after the DC came back", took)
			id, err = d.VerifyPassword(ctx, "alice", pw("alice"))
			if err != nil || id.Cached {
				t.Fatalf("after recovery: %+v, %v", id, err)
			}
			id, err = d.Lookup(ctx, "alice")
			if err != nil || id.Cached {
				t.Fatalf("after recovery: %+v, %v", id, err)
			}
		})
	}
}

// TestLoginProbesWhileOffline: while no DC answers, a password check is
// refused as never checked (directory.ErrNotChecked: it must not count as
// a wrong password), and once the DC is back the next login finds it at
// once instead of waiting for the reconnect backoff, grown meanwhile to
// seconds (issue 20). The DC "dies" behind a relay that refuses its
// connections, so the outage costs no timeout.
func TestLoginProbesWhileOffline(t *testing.T) {
	link, err := slowlink.Start(strings.TrimPrefix(dc.URL(), "ldaps://"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	const retryMin = 200 * time.Millisecond
	d := newDir(t, func(c *Config) {
		c.URLs = []string{"ldaps://" + link.Addr()}
		c.TLSServerName = dcAddr
		c.CacheTTL = time.Millisecond
		c.RetryMin, c.RetryMax = retryMin, time.Hour
	})
	ctx := ctxT(t)
	waitWatched(t, d) // or the watch's first read drops alice from the cache
	if _, err := d.VerifyPassword(ctx, "alice", pw("alice")); err != nil {
		t.Fatal(err)
	}
	link.SetDown(true)
	if id, err := d.Lookup(ctx, "alice"); err != nil || !id.Cached {
		t.Fatalf("lookup with the DC gone: %+v, %v", id, err)
	}
	_, err = d.VerifyPassword(ctx, "alice", pw("alice"))
	wantErr(t, err, directory.ErrUnavailable, "ad: offline, password logins need a domain controller")
	if !errors.Is(err, directory.ErrNotChecked) {
		t.Fatalf("offline refusal not marked ErrNotChecked: %v", err)
	}
	// Let the backoff grow: after 5 failed attempts the next one is due
	// at least 16 × retry_min after the last.
	deadline := time.Now().Add(30 * time.Second)
	for {
		d.mu.Lock()
		n := d.ended
		d.mu.Unlock()
		if n >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d reconnect attempts in 30s", n)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	link.SetDown(false)
	// The first login asks for an attempt at once and waits for it up to
	// probeWait; on a loaded machine the handshake may take longer, and
	// the next login then finds the DC back.
	start := time.Now()
	var id directory.Identity
	for {
		id, err = d.VerifyPassword(ctx, "alice", pw("alice"))
		if err == nil || time.Since(start) > 8*retryMin {
			break
		}
	}
	took := time.Since(start)
	if err != nil || id.Cached {
		t.Fatalf("right password once the DC is back: %+v, %v after %v", id, err, took)
	}
	t.Logf("DC back: the next password login went through in %v (the backoff had grown past %v)", took.Round(time.Millisecond), 16*retryMin)
	if took > 8*retryMin {
		t.Errorf("the login waited %v for the DC: it should ask for an attempt at once", took)
	}
}

// TestLostBindCounts: a bind that went out to a DC which then stopped
// answering may still count at AD (its badPwdCount), so its refusal is not
// marked directory.ErrNotChecked and the gateway counts it as a failure.
// The directory's only DC is a relay to the real one until silent is set;
// from then on it completes TLS, reads the bind and never answers.
func TestLostBindCounts(t *testing.T) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dc.Dir(), "tls", "cert.pem"), filepath.Join(dc.Dir(), "tls", "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var silent atomic.Bool
	var reads atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if !silent.Load() {
					up, err := net.Dial("tcp", strings.TrimPrefix(dc.URL(), "ldaps://"))
					if err != nil {
						return
					}
					defer up.Close()
					go io.Copy(up, c)
					io.Copy(c, up)
					return
				}
				tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}})
				buf := make([]byte, 4096)
				for { // the bind arrives; no answer
					n, err := tc.Read(buf)
					reads.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	d := newDir(t, func(c *Config) {
		c.URLs = []string{"ldaps://" + ln.Addr().String()}
		c.CacheTTL = time.Hour
		c.TLSServerName = dcAddr
	})
	ctx := ctxT(t)
	waitWatched(t, d)
	if _, err := d.VerifyPassword(ctx, "alice", pw("alice")); err != nil {
		t.Fatal(err)
	}
	silent.Store(true) // each bind dials a connection of its own
	_, err = d.VerifyPassword(ctx, "alice", "a guess")
	wantErr(t, err, directory.ErrUnavailable, "")
	if errors.Is(err, directory.ErrNotChecked) {
		t.Fatalf("a bind that reached a DC was marked not checked: %v", err)
	}
	if reads.Load() == 0 {
		t.Fatal("nothing reached the silent DC: the test did not send a bind")
	}
}

// TestOfflineMaxAge: cached identities stop working offline after
// offline_max_age; cached passwords after password_cache_max_age.
func TestOfflineMaxAge(t *testing.T) {
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	d := newDirClock(t, func(c *Config) {
		c.CachePasswords = true
		c.OfflineMaxAge = time.Hour
		c.PasswordCacheMaxAge = 10 * time.Minute
		c.RetryMin, c.RetryMax = time.Hour, time.Hour // stay offline
	}, clock)
	waitWatched(t, d)
	ctx := ctxT(t)
	if _, err := d.VerifyPassword(ctx, "alice", pw("alice")); err != nil {
		t.Fatal(err)
	}
	d.goOffline(errors.New("test: simulated outage"))
	advance(11 * time.Minute)
	if _, err := d.Lookup(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	_, err := d.VerifyPassword(ctx, "alice", pw("alice"))
	wantErr(t, err, directory.ErrUnavailable, "ad: offline, no cached password")
	advance(time.Hour)
	_, err = d.Lookup(ctx, "alice")
	wantErr(t, err, directory.ErrUnavailable, "ad: offline, cached identity older than offline_max_age")
}

// TestMembers lists groups as `frontdoor slurm` needs them: nested members,
// enabled and unexpired accounts only, an unknown group an error.
func TestMembers(t *testing.T) {
	d := newDir(t, nil)
	for _, g := range []string{"gpu-users", "GPU-Users", "nlp-lab"} {
		got, err := d.Members(ctxT(t), g)
		if err != nil {
			t.Fatal(err)
		}
		// alice is in nlp-lab, nested in gpu-users; bob is disabled and
		// carol expired; erin is in neither.
		if want := "alice,dave,frank,locky"; strings.Join(got, ",") != want {
			t.Errorf("%s: %v, want %s", g, got, want)
		}
	}
	all, err := d.Members(ctxT(t), "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"alice", "erin"} {
		if !slices.Contains(all, want) {
			t.Errorf("*: %v lacks %s", all, want)
		}
	}
	for _, not := range []string{"bob", "carol", "krbtgt", "guest"} {
		if slices.Contains(all, not) {
			t.Errorf("*: %v has %s", all, not)
		}
	}
	if _, err := d.Members(ctxT(t), "no-such-group"); !errors.Is(err, directory.ErrNoSuchGroup) {
		t.Errorf("unknown group: %v", err)
	}
	if _, err := d.Members(ctxT(t), "x)(objectClass=*"); !errors.Is(err, directory.ErrNoSuchGroup) {
		t.Errorf("filter injection: %v", err)
	}
}

// TestVersion: any committed change moves the version, once the watch has
// handled it.
func TestVersion(t *testing.T) {
	d := newDir(t, func(c *Config) { c.WatchInterval = 200 * time.Millisecond })
	v1, err := d.Version(ctxT(t))
	if err != nil || v1 == "" {
		t.Fatalf("version: %q %v", v1, err)
	}
	if err := dc.SetAttribute(ctxT(t), "erin", "description", "changed "+time.Now().String()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		v2, err := d.Version(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if v2 != v1 {
			break
		}
		if time.Since(start) > time.Second+slack {
			t.Fatalf("version still %q after a change", v2)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// TestWarm: Warm caches the identities of the names it is given (not the
// unknown or disabled ones), paced, skips those already fresh, and what it
// cached is served while the DC is gone.
func TestWarm(t *testing.T) {
	link, err := slowlink.Start(strings.TrimPrefix(dc.URL(), "ldaps://"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	d := newDir(t, func(c *Config) {
		c.URLs = []string{"ldaps://" + link.Addr()}
		c.TLSServerName = dcAddr
		c.PrefetchRate = 20
	})
	ctx := ctxT(t)
	names := []string{"alice", "frank", "no-such-user", "bob", "x)(cn=*"} // bob is disabled
	start := time.Now()
	if n := d.Warm(ctx, names); n != 4 {
		t.Errorf("Warm looked %d names up, want 4 (the one that does not parse is skipped)", n)
	}
	if took := time.Since(start); took < 3*50*time.Millisecond {
		t.Errorf("4 lookups at 20/s took %v, want at least 150ms", took)
	}
	if n := d.Warm(ctx, names[:2]); n != 0 {
		t.Errorf("a second Warm of fresh names looked %d up", n)
	}
	for _, r := range []struct {
		result string
		want   float64
	}{{"ok", 2}, {"refused", 2}, {"fresh", 2}} {
		if got := testutil.ToFloat64(d.metrics.prefetched.WithLabelValues(r.result)); got != r.want {
			t.Errorf("frontdoor_ad_prefetch_lookups_total{result=%q} = %v, want %v", r.result, got, r.want)
		}
	}
	link.SetDown(true)
	for _, u := range []string{"alice", "frank"} {
		if _, ok := d.Stale(u); !ok {
			t.Errorf("%s warmed, but not known to Stale with the DC gone", u)
		}
		if id, err := d.Lookup(ctx, u); err != nil || id.Name != u {
			t.Errorf("%s warmed, but its lookup with the DC gone: %+v, %v", u, id, err)
		}
	}
	if _, ok := d.Stale("erin"); ok {
		t.Error("erin was never looked up, yet Stale knows her")
	}
}

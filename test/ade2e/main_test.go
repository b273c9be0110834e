// Package ade2e_test drives a real frontdoor gateway whose identity source is
// a real Active Directory (Samba AD DC, LDAPS on 127.0.2.5) with the real
// OpenSSH client, against real OpenSSH sshd login nodes on loopback.
//
// TestMain provisions one DC for the package (slow: ~15 s on an idle
// machine, up to 2 minutes on a loaded one), creates the groups and
// accounts below, starts two sshd login nodes and one shared gateway. Most
// tests start a gateway of their own (newGateway: own throttle, own cache,
// own audit file to assert on); all gateways are in-process and built
// exactly as `frontdoor gateway` builds them: config.Load, ad.New,
// gateway.New.
//
// The outage tests (outage_test.go) stop the DC and the lockout test
// changes the domain's lockout policy. They are the only tests that do not
// call t.Parallel: Go runs every sequential test before it resumes the
// parallel ones, so no other test sees the outage or the policy.
//
// Bugs found here are described in BUGS.md.
//
// Missing prerequisites (samba, sshd, ssh, root) fail the run loudly: a test
// that skips silently proves nothing.
package ade2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/ad"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	flogin "github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/harness/samba"
)

// dcAddr is this package's DC address (127.0.2.2 and 127.0.2.9 belong to
// other packages' tests, which may run in parallel with these).
const dcAddr = "127.0.2.5"

// adTimeout is the per-DC timeout of the gateways that meet hanging or
// dead DCs (outage and failover tests): short, so those tests are quick.
// The other gateways keep production's 5 s, so a DC slowed down by a loaded
// 2-core machine is not mistaken for an outage.
const adTimeout = 2 * time.Second

// Groups. hpc-users is the only group the policy grants; nlp-lab is nested in
// it, so its members get in only if nested membership is resolved.
const (
	grpOuter     = "ade-hpc-users"
	grpNested    = "ade-nlp-lab"
	grpOutsiders = "ade-outsiders"
)

// The pool every node is in and the policy rule that grants it.
const (
	pool     = "general"
	ruleName = "researchers"
)

// Account names are prefixed so they cannot collide with the Unix users of
// other suites on this machine (the login nodes share /etc/passwd). Each
// name is both the sAMAccountName and the login-node Unix user.
const (
	aliceName  = "ade-alice"     // nlp-lab (nested in hpc-users): key + password
	bobName    = "ade-bob"       // outsiders only: proven, then denied by policy
	disName    = "ade-disabled"  // disabled in AD
	expName    = "ade-expired"   // accountExpires in the past
	pwxName    = "ade-pwexpired" // must change password (pwdLastSet=0)
	wrongName  = "ade-wrongpw"   // takes wrong passwords (own throttle budget)
	offName    = "ade-offline"   // the outage tests' user
	thrName    = "ade-throttled"
	thrOkName  = "ade-thr-ok"
	emptyName  = "ade-emptypw"
	injectName = "ade-inject" // logs in around the injection attempts
)

// pw is every test account's password: AD complexity (upper, lower, digit,
// symbol), unique per user.
func pw(name string) string { return "Pw-" + name + "-0k!" }

// The shared world, set up by TestMain.
var (
	base   string // world-readable scratch root
	dc     *samba.DC
	keys   *harness.ClusterKeys
	nodes  []harness.NodeEntry
	shared *adGateway // default settings, generous throttle
	users  = map[string]*harness.User{}
)

// requiredPrograms must be installed for this suite (make deps).
var requiredPrograms = []string{harness.SSHDPath, "ssh", "ssh-keygen", "useradd", "usermod", "samba", "samba-tool", "ldbmodify"}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	return harness.Suite{Name: "ade2e", Programs: requiredPrograms,
		Setup: func(ctx context.Context, dir string, stops *[]func()) (string, error) {
			base = dir
			if err := setup(ctx, stops); err != nil {
				return "", err
			}
			return fmt.Sprintf("DC %s, 2 nodes and gateway", dc.URL()), nil
		}}.Run(m)
}

func setup(ctx context.Context, stops *[]func()) error {
	if err := harness.AddrsFree(dcAddr, samba.LDAPPort, samba.LDAPSPort); err != nil {
		return err
	}
	// The DC takes longest (provisioning); keys and nodes start meanwhile.
	t0 := time.Now()
	var err error
	dc, err = samba.StartAlongside(ctx, samba.Options{Dir: filepath.Join(base, "dc"), Addr: dcAddr},
		func() error { return startNodes(ctx, stops) })
	if dc != nil {
		*stops = append(*stops, func() { dc.Close() })
	}
	if err != nil {
		return err
	}
	tDC := time.Since(t0)
	if err := dc.CreateGroup(ctx, grpOuter); err != nil {
		return err
	}
	if err := dc.CreateGroup(ctx, grpNested, grpOuter); err != nil {
		return err
	}
	if err := dc.CreateGroup(ctx, grpOutsiders); err != nil {
		return err
	}
	accounts := []struct {
		name  string
		group string
	}{
		{aliceName, grpNested}, {bobName, grpOutsiders}, {disName, grpNested}, {expName, grpNested},
		{pwxName, grpNested}, {wrongName, grpNested}, {offName, grpNested}, {thrName, grpNested},
		{thrOkName, grpNested}, {emptyName, grpNested}, {injectName, grpNested},
	}
	// A few at a time: each is several LDAP round trips and a useradd.
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	sem := make(chan struct{}, 4)
	for _, a := range accounts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			u, err := createUser(ctx, a.name, a.group)
			mu.Lock()
			defer mu.Unlock()
			users[a.name] = u
			errs = append(errs, err)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ade2e: DC and nodes up in %v, accounts created in %v\n", tDC.Round(time.Millisecond), (time.Since(t0) - tDC).Round(time.Millisecond))
	if err := dc.Disable(ctx, disName); err != nil {
		return err
	}
	if err := dc.Expire(ctx, expName); err != nil {
		return err
	}
	if err := dc.ExpirePassword(ctx, pwxName); err != nil {
		return err
	}
	// Served until Close, not bounded by the set-up deadline.
	shared, err = startGateway(context.Background(), filepath.Join(base, "gw-shared"), gwOptions{})
	if err != nil {
		return err
	}
	*stops = append(*stops, func() { shared.Close() })
	return nil
}

// startNodes creates the cluster keys and starts the two sshd login nodes.
func startNodes(ctx context.Context, stops *[]func()) error {
	var err error
	if keys, err = harness.Keys(filepath.Join(base, "keys")); err != nil {
		return err
	}
	for _, n := range []struct{ name, addr string }{{"login1", "127.0.1.51"}, {"login2", "127.0.1.52"}} {
		node, err := harness.StartNode(ctx, harness.NodeOptions{Name: n.name, Addr: n.addr,
			Dir: filepath.Join(base, "nodes", n.name), UserCAPub: keys.UserCAPub})
		if err != nil {
			return err
		}
		*stops = append(*stops, func() { node.Stop() })
		nodes = append(nodes, node.Entry(pool))
	}
	return nil
}

// createUser creates an AD account in group with password pw(name) and a
// fresh key in sshPublicKey, and the login-node Unix user of the same name.
// The Unix user exists even for accounts AD refuses, so a refusal can only
// come from the directory. (Tests keep the users they create themselves;
// the users map is written by TestMain only.)
func createUser(ctx context.Context, name, group string) (*harness.User, error) {
	u, err := harness.NewUser(filepath.Join(base, "users"), name, "", group)
	if err != nil {
		return nil, err
	}
	u.Password = pw(name)
	if _, err := dc.CreateUser(ctx, name, u.Password, group); err != nil {
		return nil, err
	}
	if err := dc.SetSSHKey(ctx, name, u.AuthorizedKey()); err != nil {
		return nil, err
	}
	if err := harness.EnsureUnixUser(name); err != nil {
		return nil, err
	}
	return u, nil
}

// gwOptions are what differs between the suite's gateways.
type gwOptions struct {
	// Edit changes the gateway's configuration after the suite's
	// defaults: the DC as directory, answers cached 1s, retries every
	// 100-500ms, and a generous throttle (every client connects from
	// 127.0.0.1, and tests taking wrong passwords run in parallel with
	// tests logging in).
	Edit func(*config.Config)
	// Rules default to one rule granting pool general to grpOuter only.
	Rules []policy.Rule
}

// adGateway is an in-process gateway (test/harness) with the AD directory.
type adGateway struct {
	*harness.Gateway
	dir *ad.Directory // the gateway's directory
	cfg *config.Config
}

var gwCount atomic.Int32

var nameSeq atomic.Int32

// uniqueName is prefix with a number no other call in this process got, for
// accounts tests create themselves (-count=N reuses the DC).
func uniqueName(prefix string) string { return fmt.Sprintf("%s%d", prefix, nameSeq.Add(1)) }

// newGateway starts a gateway of its own for one test and stops it when the
// test ends.
func newGateway(t *testing.T, o gwOptions) *adGateway {
	t.Helper()
	dir := filepath.Join(base, fmt.Sprintf("gw-%d-%s", gwCount.Add(1), strings.ReplaceAll(t.Name(), "/", "_")))
	g, err := startGateway(t.Context(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// startGateway writes DIR/gateway.yaml (the harness's static-directory
// configuration with the directory and throttle sections replaced) and
// serves it until Close.
func startGateway(ctx context.Context, dir string, o gwOptions) (*adGateway, error) {
	rules := o.Rules
	if rules == nil {
		rules = []policy.Rule{{Name: ruleName, Groups: []string{grpOuter}, Pools: []string{pool}}}
	}
	hg, err := harness.StartGateway(ctx, harness.GatewayOptions{Dir: dir, Config: harness.GatewayConfig{
		Keys: keys, Nodes: nodes, Rules: rules,
		Edit: func(c *config.Config) {
			c.Directory.Kind, c.Directory.AD = source.KindAD, harness.ADConfig(dc)
			a := &c.Directory.AD
			a.Timeout, a.CacheTTL, a.OfflineMaxAge = 5*time.Second, time.Second, time.Hour
			a.RetryMin, a.RetryMax = 100*time.Millisecond, 500*time.Millisecond
			harness.GenerousThrottle(&c.Throttle)
			if o.Edit != nil {
				o.Edit(c)
			}
		},
	}})
	if err != nil {
		return nil, err
	}
	g := &adGateway{Gateway: hg, cfg: hg.Config()}
	var ok bool
	if g.dir, ok = hg.Parts().Directory().(*ad.Directory); !ok {
		hg.Close()
		return nil, fmt.Errorf("gateway directory is %T, want AD", hg.Parts().Directory())
	}
	return g, nil
}

// client is an OpenSSH client for this gateway with u's key (nil: none).
func (g *adGateway) client(u *harness.User) *harness.Client {
	c := &harness.Client{Host: "127.0.0.1", Port: g.Port(), KnownHosts: g.KnownHostsFile()}
	if u != nil {
		c.Identity = u.KeyPath
	}
	return c
}

// keyClient logs in with u's key only.
func (g *adGateway) keyClient(u *harness.User) *harness.Client {
	c := g.client(u)
	c.Options = []string{"PreferredAuthentications=publickey"}
	return c
}

// passwordClient answers the password prompt with password, using method
// ("password" or "keyboard-interactive") only.
func (g *adGateway) passwordClient(t *testing.T, method, password string) *harness.Client {
	t.Helper()
	askpass, err := harness.WriteAskpass(t.TempDir(), password)
	if err != nil {
		t.Fatal(err)
	}
	c := g.client(nil)
	c.Askpass = askpass
	c.Options = []string{"PreferredAuthentications=" + method}
	return c
}

// whoami logs in as login with c and returns what `id -un` printed on the
// node.
func whoami(t *testing.T, c *harness.Client, login string) (string, harness.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	r := harness.Run(c.SSH(ctx, login, "id", "-un"), nil)
	return strings.TrimSpace(string(r.Stdout)), r
}

// mustLogin asserts that login with c lands on a node as Unix user want.
func mustLogin(t *testing.T, c *harness.Client, login, want string) {
	t.Helper()
	got, r := whoami(t, c, login)
	if r.ExitCode != 0 || got != want {
		t.Fatalf("ssh -l %q: want to land as %q, got %q: %v", login, want, got, r)
	}
}

// mustRefuseOffline asserts that a password login with c, while the
// directory is unreachable, is refused with the one line every name gets
// then (passwords cannot be checked), and nothing else of frontdoor's.
func mustRefuseOffline(t *testing.T, c *harness.Client, login string) harness.Result {
	t.Helper()
	_, r := whoami(t, c, login)
	stderr := string(r.Stderr)
	if r.ExitCode != 255 || !strings.Contains(stderr, "Permission denied") {
		t.Fatalf("ssh -l %q with the DC down: want Permission denied (exit 255), got %v", login, r)
	}
	line := "frontdoor: " + flogin.MsgPasswordsUnavailable
	if !strings.Contains(stderr, line) {
		t.Errorf("ssh -l %q with the DC down: no line saying passwords cannot be checked: %s", login, stderr)
	}
	if strings.Count(stderr, "frontdoor:") != strings.Count(stderr, line) {
		t.Errorf("ssh -l %q with the DC down: a frontdoor line besides the offline one: %s", login, stderr)
	}
	return r
}

// mustRefuse asserts that login with c is refused with the generic
// "Permission denied" (no session, no banner naming the reason).
func mustRefuse(t *testing.T, c *harness.Client, login string) harness.Result {
	t.Helper()
	_, r := whoami(t, c, login)
	if r.ExitCode != 255 || !strings.Contains(string(r.Stderr), "Permission denied") {
		t.Fatalf("ssh -l %q: want Permission denied (exit 255), got %v", login, r)
	}
	if strings.Contains(string(r.Stderr), "frontdoor:") {
		t.Errorf("ssh -l %q: an unproven user was shown a frontdoor banner: %s", login, r.Stderr)
	}
	return r
}

// audits reads the gateway's audit events.
func (g *adGateway) audits(t *testing.T) []audit.Event {
	t.Helper()
	evs, err := harness.ReadAudit(g.cfg.Audit.File)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return evs
}

// waitAudit waits until an auth event satisfies match. Events are written
// before the client is answered, so a short wait only covers file I/O.
func (g *adGateway) waitAudit(t *testing.T, what string, match func(audit.Event) bool) audit.Event {
	t.Helper()
	var found audit.Event
	err := harness.WaitFor(t.Context(), 10*time.Second, func() error {
		evs := g.audits(t)
		for _, e := range evs {
			if e.Type == audit.TypeAuth && match(e) {
				found = e
				return nil
			}
		}
		return fmt.Errorf("no audit event %s among %d", what, len(evs))
	})
	if err != nil {
		t.Fatalf("%v\naudit:\n%s", err, g.auditDump(t))
	}
	return found
}

// authEvents are the auth events for user (as audited).
func (g *adGateway) authEvents(t *testing.T, user string) []audit.Event {
	t.Helper()
	var out []audit.Event
	for _, e := range g.audits(t) {
		if e.Type == audit.TypeAuth && e.User == user {
			out = append(out, e)
		}
	}
	return out
}

func (g *adGateway) auditDump(t *testing.T) string {
	t.Helper()
	var sb strings.Builder
	for _, e := range g.audits(t) {
		fmt.Fprintf(&sb, "  %s user=%q method=%s result=%s reason=%q rule=%s\n", e.Type, e.User, e.Method, e.Result, e.Reason, e.Rule)
	}
	return sb.String()
}

// dialGo logs in with Go's SSH client (for names and passwords OpenSSH
// cannot send) and returns the handshake error (nil: logged in).
func (g *adGateway) dialGo(ctx context.Context, login string, auth ...ssh.AuthMethod) error {
	c, err := harness.DialSSH(ctx, g.Addr(), login, keys.HostPublicKey, auth...)
	if err == nil {
		c.Close()
	}
	return err
}

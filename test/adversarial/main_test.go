// Package adversarial_test attacks a real frontdoor gateway the way a hostile
// client would (issue 8): userauth sequences no honest client sends,
// parallel password guesses against a real Active Directory, pre-auth
// floods, principals that must never reach a node, and protocol messages
// out of order.
//
// The client is internal/rawssh, a test-only copy of x/crypto/ssh with one
// added API (rawauth.go) that sends any SSH_MSG_USERAUTH_REQUEST and reads
// the reply. Whatever a sequence achieves is judged where it counts: the
// command `id -un` run on the login node through the gateway (who the
// session really is), and the gateway's audit log.
//
// TestMain starts, once for the package: a Samba AD DC on 127.0.2.7 (the
// gateways' directory), two OpenSSH sshd login nodes on 127.0.1.71-72 that
// check every certificate principal with `frontdoor authorized-principals`
// (the deploy/ drop-in), and one shared gateway (harness.StartGateway with
// the AD directory). Tests that need their own limits (throttle,
// admission, principals) start their own gateway against the same DC and
// nodes. Clients bind their side of the connection to chosen loopback
// addresses (127.0.0.2, ...) when the source matters.
//
// Tests do not run in parallel: the burst and flush tests change the
// domain's lockout policy, the outage test stops the DC, and the flood,
// speculation and timing tests measure.
//
// The tests, by file: identity (one login is one identity: query/none/sign
// and its variants), burst (parallel wrong passwords vs badPwdCount; DC
// outage attempts count), flush (BUGS.md 1), flood (pre-auth flood from
// one source), speculation (node connections before proof), principals
// (root, deny list, min_uid; the node's own check), protocol (messages out
// of order, hostile names and passwords), sessioncap, timing (medians,
// logged only), userca (someone who owns one gateway: its CA dropped or
// revoked alone, certificates replayed from elsewhere, a stolen CA key
// bound to its gateway's address, a CA key in KMS and KMS outages; on
// nodes of its own, 127.0.1.73-74). Bugs found are in BUGS.md.
//
// Missing prerequisites (samba, sshd, root) fail the run loudly.
package adversarial_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/harness/samba"
)

// dcAddr is this package's DC (other packages use 127.0.2.1, .2, .5, .9).
const dcAddr = "127.0.2.7"

// The group every test account is in, the pool every node is in and the
// rule granting it.
const (
	group    = "adv-users"
	pool     = "general"
	ruleName = "researchers"
)

// Accounts are prefixed: the login nodes share /etc/passwd with the other
// suites on this machine.
const (
	aliceName = "adv-alice"
	bobName   = "adv-bob"
)

// pw is a test account's password (AD complexity, unique per user).
func pw(name string) string { return "Pw-" + name + "-0k!" }

// The shared world, set up by TestMain.
var (
	base   string
	dc     *samba.DC
	keys   *harness.ClusterKeys
	nodes  []harness.NodeEntry
	bin    string // the frontdoor binary the nodes' sshd runs for principals
	shared *harness.Gateway
	alice  *actor
	bob    *actor
)

var requiredPrograms = []string{harness.SSHDPath, "ssh-keygen", "useradd", "samba", "samba-tool", "go"}

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	return harness.Suite{Name: "adversarial", Programs: requiredPrograms,
		Setup: func(ctx context.Context, dir string, stops *[]func()) (string, error) {
			base = dir
			if err := setup(ctx, stops); err != nil {
				return "", err
			}
			return fmt.Sprintf("DC %s, 2 nodes and the gateway", dc.URL()), nil
		}}.Run(m)
}

func setup(ctx context.Context, stops *[]func()) error {
	if err := harness.AddrsFree(dcAddr, samba.LDAPPort, samba.LDAPSPort); err != nil {
		return err
	}
	var err error
	dc, err = samba.StartAlongside(ctx, samba.Options{Dir: filepath.Join(base, "dc"), Addr: dcAddr},
		func() error { return startNodes(ctx, stops) })
	if dc != nil {
		*stops = append(*stops, func() { dc.Close() })
	}
	if err != nil {
		return err
	}
	if err := dc.CreateGroup(ctx, group); err != nil {
		return err
	}
	if alice, err = createActor(ctx, aliceName); err != nil {
		return err
	}
	if bob, err = createActor(ctx, bobName); err != nil {
		return err
	}
	// Served until the deferred stop, not bounded by the set-up deadline.
	shared, err = startGateway(context.Background(), filepath.Join(base, "gw-shared"), gwOptions{})
	if err != nil {
		return err
	}
	*stops = append(*stops, func() { shared.Close() })
	return nil
}

// startNodes builds the frontdoor binary sshd runs for principals, creates
// the cluster keys and starts the two login nodes.
func startNodes(ctx context.Context, stops *[]func()) error {
	var err error
	if keys, err = harness.Keys(filepath.Join(base, "keys")); err != nil {
		return err
	}
	var rmBin func()
	bin, rmBin, err = harness.BuildFrontdoor(ctx, filepath.Join("..", ".."))
	if err != nil {
		return err
	}
	*stops = append(*stops, rmBin)
	for _, n := range []struct{ name, addr string }{{"login1", "127.0.1.71"}, {"login2", "127.0.1.72"}} {
		node, err := harness.StartNode(ctx, harness.NodeOptions{Name: n.name, Addr: n.addr,
			Dir: filepath.Join(base, "nodes", n.name), UserCAPub: keys.UserCAPub, Frontdoor: bin})
		if err != nil {
			return err
		}
		*stops = append(*stops, func() { node.Stop() })
		nodes = append(nodes, node.Entry(pool))
	}
	return nil
}

// actor is a test account as the raw client uses it.
type actor struct {
	name     string
	password string
	signer   rawssh.Signer
	pub      rawssh.PublicKey
	user     *harness.User
}

// createActor creates name in AD (group, password pw(name), a fresh key in
// sshPublicKey) and as a login-node Unix user.
func createActor(ctx context.Context, name string) (*actor, error) {
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
	return newActor(u)
}

// testActor is createActor for one test: the account is deleted from AD
// when the test ends, so the suite runs again in one process (-count=N)
// and a test's locked-out or throttled account never meets the next test.
func testActor(ctx context.Context, t *testing.T, name string) *actor {
	t.Helper()
	a, err := createActor(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dc.DeleteUser(context.Background(), name); err != nil {
			t.Errorf("deleting AD user %s: %v", name, err)
		}
	})
	return a
}

func newActor(u *harness.User) (*actor, error) {
	pem, err := os.ReadFile(u.KeyPath)
	if err != nil {
		return nil, err
	}
	s, err := rawssh.ParsePrivateKey(pem)
	if err != nil {
		return nil, err
	}
	return &actor{name: u.Name, password: u.Password, signer: s, pub: s.PublicKey(), user: u}, nil
}

// gwOptions are what differs between the suite's gateways.
type gwOptions struct {
	// Edit changes the gateway's configuration after the suite's
	// defaults: the DC as directory (answers cached 1s), a generous
	// throttle (one source address takes many wrong passwords in these
	// tests), a 20s connect timeout (a loaded 2-core machine).
	Edit func(*config.Config)
	// Rules default to one rule granting pool general to group.
	Rules []policy.Rule
	// Name is gateway.name (default gw1): gateways of one name share a
	// user CA.
	Name string
	// Keys and Nodes default to the suite's.
	Keys  *harness.ClusterKeys
	Nodes []harness.NodeEntry
}

var gwCount atomic.Int32

// newGateway starts a gateway of the test's own, stopped when it ends.
func newGateway(t *testing.T, o gwOptions) *harness.Gateway {
	t.Helper()
	dir := filepath.Join(base, fmt.Sprintf("gw-%d-%s", gwCount.Add(1), strings.ReplaceAll(t.Name(), "/", "_")))
	g, err := startGateway(t.Context(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// startGateway starts a harness gateway whose directory is the suite's DC.
func startGateway(ctx context.Context, dir string, o gwOptions) (*harness.Gateway, error) {
	rules := o.Rules
	if rules == nil {
		rules = []policy.Rule{{Name: ruleName, Groups: []string{group}, Pools: []string{pool}}}
	}
	k, ns := keys, nodes
	if o.Keys != nil {
		k, ns = o.Keys, o.Nodes
	}
	return harness.StartGateway(ctx, harness.GatewayOptions{Dir: dir, Config: harness.GatewayConfig{
		Name:           o.Name,
		Keys:           k,
		Nodes:          ns,
		Rules:          rules,
		ConnectTimeout: 20 * time.Second, // a loaded 2-core machine
		Edit: func(c *config.Config) {
			c.Directory.Kind, c.Directory.AD = source.KindAD, harness.ADConfig(dc)
			c.Directory.AD.Timeout, c.Directory.AD.CacheTTL = 5*time.Second, time.Second
			harness.GenerousThrottle(&c.Throttle)
			if o.Edit != nil {
				o.Edit(c)
			}
		},
	}})
}

// dialTimeout bounds every raw connection of the suite.
const dialTimeout = 60 * time.Second

// dialRaw connects to g from src ("" = any local address; else a loopback
// IP such as 127.0.0.2) and runs the key exchange, trusting only g's host
// key. The connection is closed when the test ends.
func dialRaw(t *testing.T, g *harness.Gateway, src string) *rawssh.RawConn {
	t.Helper()
	rc, err := tryDialRaw(t.Context(), g, src)
	if err != nil {
		t.Fatalf("dial %s from %q: %v", g.Addr(), src, err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

func tryDialRaw(ctx context.Context, g *harness.Gateway, src string) (*rawssh.RawConn, error) {
	nc, err := dialTCP(ctx, g, src)
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(time.Now().Add(dialTimeout))
	return rawssh.NewRawConn(nc, g.Addr(), &rawssh.ClientConfig{HostKeyCallback: rawssh.FixedHostKey(hostKey(g))})
}

// dialTCP opens a TCP connection to g whose local address is src.
func dialTCP(ctx context.Context, g *harness.Gateway, src string) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	return d.DialContext(ctx, "tcp", g.Addr())
}

// hostKey is g's host key as the raw client's type.
func hostKey(g *harness.Gateway) rawssh.PublicKey {
	k, err := rawssh.ParsePublicKey(g.HostKey().Marshal())
	if err != nil {
		panic(err) // the harness made it
	}
	return k
}

// userauth sends the ssh-userauth service request (what every sequence
// starts with).
func userauth(t *testing.T, rc *rawssh.RawConn) {
	t.Helper()
	if err := rc.RequestService("ssh-userauth"); err != nil {
		t.Fatalf("service request: %v", err)
	}
}

// send sends req and returns the reply; an error (connection closed) fails
// the test.
func send(t *testing.T, rc *rawssh.RawConn, step string, req rawssh.AuthRequest) *rawssh.AuthReply {
	t.Helper()
	r, err := rc.Auth(req)
	if err != nil {
		t.Fatalf("%s (%s as %q): %v", step, req.Method, req.User, err)
	}
	if r.PartialSuccess {
		// The gateway has no multi-step methods: a partial success
		// would let a later request change the user (x/crypto refuses
		// that only after one).
		t.Errorf("%s: partial success offered: %+v", step, r)
	}
	return r
}

// expect checks a reply's kind.
func expect(t *testing.T, step string, r *rawssh.AuthReply, want rawssh.ReplyKind) {
	t.Helper()
	if r.Kind != want {
		t.Fatalf("%s: got %s (methods %v, banners %q), want %s", step, r.Kind, r.Methods, r.Banners, want)
	}
}

// signed is a signed publickey request for user with a's key.
func signed(t *testing.T, rc *rawssh.RawConn, user string, a *actor) rawssh.AuthRequest {
	t.Helper()
	req, err := rc.PublicKeySigned(user, a.signer, "")
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// whoAmI runs `id -un` on the node through an authenticated connection and
// returns the account the session runs as and its frontdoor session ID.
func whoAmI(t *testing.T, rc *rawssh.RawConn) (user, session string) {
	t.Helper()
	cl, err := rc.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s, err := cl.NewSession()
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	defer s.Close()
	out, err := s.Output(`id -un; echo "$FRONTDOOR_SESSION"`)
	if err != nil {
		t.Fatalf("id -un: %v (%q)", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		t.Fatalf("id -un; echo $FRONTDOOR_SESSION: %q", out)
	}
	return f[0], f[1]
}

// loginAs logs in as a with a's key (query, then signature), the honest
// way, from src, and checks who the node says the session is.
func loginAs(t *testing.T, g *harness.Gateway, src string, a *actor) {
	t.Helper()
	rc := dialRaw(t, g, src)
	userauth(t, rc)
	expect(t, "query", send(t, rc, "query", rawssh.PublicKeyQuery(a.name, a.pub, "")), rawssh.ReplyPKOK)
	expect(t, "sign", send(t, rc, "sign", signed(t, rc, a.name, a)), rawssh.ReplySuccess)
	if got, _ := whoAmI(t, rc); got != a.name {
		t.Fatalf("logged in with %s's key, the node says %s", a.name, got)
	}
	rc.Close()
}

// audits reads g's audit events.
func audits(t *testing.T, g *harness.Gateway) []audit.Event {
	t.Helper()
	evs, err := g.AuditEvents()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return evs
}

// sessionEvents are g's audit events for one session, once the session
// start is written.
func sessionEvents(t *testing.T, g *harness.Gateway, session string) []audit.Event {
	t.Helper()
	var out []audit.Event
	err := harness.WaitFor(t.Context(), 10*time.Second, func() error {
		out = out[:0]
		started := false
		for _, e := range audits(t, g) {
			if e.Session == session {
				out = append(out, e)
				started = started || e.Type == audit.TypeSessionStart
			}
		}
		if !started {
			return fmt.Errorf("no session.start for %s", session)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func dump(evs []audit.Event) string {
	var sb strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&sb, "  %s session=%s user=%q method=%s result=%s reason=%q key=%s\n", e.Type, e.Session, e.User, e.Method, e.Result, e.Reason, e.KeyFP)
	}
	return sb.String()
}

package adversarial_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/awsclient/awsjsontest"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/ca/kms"
	"github.com/frontdoor-hpc/frontdoor/internal/ca/kms/kmstest"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// Someone who owns one gateway (issue 21): what its user CA can still do
// is small and recoverable. Each gateway signs with a CA key of its own,
// which the nodes trust as one of a set (TrustedUserCAKeys) and can drop
// alone — by deleting its line or by revoking it in the KRL sshd reads as
// RevokedKeys — while the other gateways' logins go on. Every certificate
// carries the source-address its gateway dialled the node from: replayed
// from another address, sshd refuses it. A CA key stolen outright mints
// certificates with any source-address or none; the nodes' gateways file
// (`frontdoor authorized-principals --gateways FILE %u %F`) binds each CA
// key to its gateway's address, so those log in from nowhere else. And a
// CA key in KMS (a fake speaking the KMS protocol, signing with a real P-256
// key) signs logins the real sshd accepts; when KMS hangs, the user hears
// so within user_ca_kms.timeout.
//
// These tests run against their own two sshd nodes (127.0.1.73-74) with
// their own trusted-keys file, KRL and gateways file, so dropping a CA here
// touches no other test.

// caWorld is the nodes and files of one test.
type caWorld struct {
	keys     *harness.ClusterKeys
	caKeys   map[string]string // gateway name → its CA's private key file
	nodes    []*harness.Node
	entries  []harness.NodeEntry
	gateways string // the nodes' gateways file
}

// gwA and gwB are the two gateways of the tests, each with its own CA.
const (
	gwA = "ca-gw-a"
	gwB = "ca-gw-b"
)

// gatewayAddr is the address the in-process gateways dial the nodes from
// (loopback routes 127.0.1.x from 127.0.0.1).
const gatewayAddr = "127.0.0.1"

func startCAWorld(t *testing.T) *caWorld {
	t.Helper()
	dir := filepath.Join(base, "userca-"+strings.ReplaceAll(t.Name(), "/", "_"))
	k, err := harness.Keys(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	w := &caWorld{keys: k, caKeys: map[string]string{}, gateways: filepath.Join(dir, "keys", "gateways")}
	// The gateways' CAs exist before the nodes: their gateways file
	// names them with the address their logins come from. The shared CA
	// (k.UserCAKey, a migration's old key) is listed without one.
	var lines []string
	for _, name := range []string{gwA, gwB} {
		if w.caKeys[name], err = k.GatewayCA(name); err != nil {
			t.Fatal(err)
		}
		pub, err := k.GatewayCAPublicKey(name)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, harness.GatewaysLine(pub, gatewayAddr, name))
	}
	lines = append(lines, harness.GatewaysLine(caPub(t, k.UserCAKey), "", "shared CA"))
	w.writeGateways(t, lines...)
	for i, addr := range []string{"127.0.1.73", "127.0.1.74"} {
		name := fmt.Sprintf("ca%d", i+1)
		n, err := harness.StartNode(t.Context(), harness.NodeOptions{Name: name, Addr: addr,
			Dir: filepath.Join(dir, "nodes", name), UserCAPub: k.UserCAPub, RevokedKeys: k.RevokedKeys,
			Frontdoor: bin, Gateways: w.gateways})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Stop() })
		w.nodes = append(w.nodes, n)
		w.entries = append(w.entries, n.Entry(pool))
	}
	return w
}

func (w *caWorld) writeGateways(t *testing.T, lines ...string) {
	t.Helper()
	if err := os.WriteFile(w.gateways, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (w *caWorld) gateway(t *testing.T, name string, edit func(*config.Config)) *harness.Gateway {
	t.Helper()
	return newGateway(t, gwOptions{Name: name, Keys: w.keys, Nodes: w.entries, Edit: edit})
}

func caPub(t *testing.T, keyFile string) ssh.PublicKey {
	t.Helper()
	s, err := ca.LoadSigner(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return s.PublicKey()
}

// attempt logs a in through g with a's key from the default address and
// reports whether the gateway let it through (then who the node says the
// session is and its session ID) or what banner the user got.
func attempt(t *testing.T, g *harness.Gateway, a *actor) (ok bool, session, banner string) {
	t.Helper()
	rc := dialRaw(t, g, "")
	defer rc.Close()
	userauth(t, rc)
	expect(t, "query", send(t, rc, "query", rawssh.PublicKeyQuery(a.name, a.pub, "")), rawssh.ReplyPKOK)
	r := send(t, rc, "sign", signed(t, rc, a.name, a))
	if r.Kind != rawssh.ReplySuccess {
		return false, "", strings.Join(r.Banners, "")
	}
	who, session := whoAmI(t, rc)
	if who != a.name {
		t.Fatalf("logged in as %s, the node says %s", a.name, who)
	}
	return true, session, ""
}

func mustLogin(t *testing.T, g *harness.Gateway, a *actor, what string) string {
	t.Helper()
	ok, session, banner := attempt(t, g, a)
	if !ok {
		t.Fatalf("%s: login refused: %q", what, banner)
	}
	return session
}

func mustBeRefused(t *testing.T, g *harness.Gateway, a *actor, what, wantBanner string) {
	t.Helper()
	ok, _, banner := attempt(t, g, a)
	if ok {
		t.Fatalf("%s: logged in", what)
	}
	if !strings.Contains(banner, wantBanner) {
		t.Fatalf("%s: banner %q, want %q", what, banner, wantBanner)
	}
}

// nodeLog waits for a line of n's sshd log, after offset, containing all
// of parts.
func nodeLog(t *testing.T, n *harness.Node, offset int, parts ...string) string {
	t.Helper()
	return logLine(t, []*harness.Node{n}, []int{offset}, parts...)
}

// logLine waits for a line containing all of parts in the sshd log of
// one of nodes (the gateway picks the node), after its offset.
func logLine(t *testing.T, nodes []*harness.Node, offsets []int, parts ...string) string {
	t.Helper()
	var found string
	err := harness.WaitFor(t.Context(), 10*time.Second, func() error {
		for i, n := range nodes {
			b, _ := os.ReadFile(n.LogPath())
			for _, l := range strings.Split(string(b[min(offsets[i], len(b)):]), "\n") {
				if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(l, p) }) {
					found = l
					return nil
				}
			}
		}
		return fmt.Errorf("no line with %q", parts)
	})
	if err != nil {
		t.Fatalf("sshd log: %v", err)
	}
	return found
}

func logSize(n *harness.Node) int {
	st, err := os.Stat(n.LogPath())
	if err != nil {
		return 0
	}
	return int(st.Size())
}

// Two gateways, two CAs the nodes trust as a set. The nodes' logs name
// the gateway and session of each login and the CA's fingerprint. Dropping
// gateway A's key from the trusted file, or revoking it in the KRL, refuses
// A's next login at once while B's go on; restoring it lets A in again.
func TestEachGatewayItsOwnCA(t *testing.T) {
	w := startCAWorld(t)
	a, b := w.gateway(t, gwA, nil), w.gateway(t, gwB, nil)
	pubA, pubB := caPub(t, a.Config().Gateway.UserCAKey), caPub(t, b.Config().Gateway.UserCAKey)
	if bytes.Equal(pubA.Marshal(), pubB.Marshal()) {
		t.Fatal("two gateways, one CA key")
	}
	for _, g := range []struct {
		name string
		gw   *harness.Gateway
		pub  ssh.PublicKey
	}{{gwA, a, pubA}, {gwB, b, pubB}} {
		offsets := []int{logSize(w.nodes[0]), logSize(w.nodes[1])}
		session := mustLogin(t, g.gw, alice, g.name)
		// sshd names the gateway, the session and the CA that signed.
		want := []string{`Accepted certificate ID "frontdoor user=` + alice.name + ` session=` + session + ` gateway=` + g.name + `"`,
			"signed by ECDSA CA " + ssh.FingerprintSHA256(g.pub)}
		if line := logLine(t, w.nodes, offsets, want...); !strings.Contains(line, "(serial ") {
			t.Errorf("no serial in %q", line)
		}
	}

	// Dropped from the trusted keys file.
	if err := w.keys.Distrust(pubA); err != nil {
		t.Fatal(err)
	}
	before := len(audits(t, a))
	mustBeRefused(t, a, alice, "A, its CA dropped", "no login node is available")
	if !slices.ContainsFunc(audits(t, a)[before:], func(e audit.Event) bool {
		return e.Type == audit.TypeAuth && e.Result == audit.ResultError && strings.Contains(e.Reason, "refused the login certificate")
	}) {
		t.Error("no audit event naming the refused certificate")
	}
	mustLogin(t, b, alice, "B while A is dropped")
	if err := w.keys.Trust(pubA, gwA); err != nil {
		t.Fatal(err)
	}
	mustLogin(t, a, alice, "A trusted again")

	// Revoked in the KRL (ssh-keygen -k -u), still in the trusted file.
	offset := logSize(w.nodes[0])
	if err := w.keys.Revoke(pubA); err != nil {
		t.Fatal(err)
	}
	mustBeRefused(t, a, alice, "A, its CA revoked", "no login node is available")
	nodeLog(t, w.nodes[0], offset, "revoked by file "+w.keys.RevokedKeys)
	mustLogin(t, b, alice, "B while A is revoked")
	if err := w.keys.ResetRevoked(); err != nil {
		t.Fatal(err)
	}
	mustLogin(t, a, alice, "A after the KRL is emptied")
}

// nodeLogin logs in to n directly as user with s, from the loopback
// address src, and runs `id -un`.
func nodeLogin(ctx context.Context, n *harness.Node, user string, s ssh.Signer, src string) (string, error) {
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	nc, err := d.DialContext(ctx, "tcp", n.Addr())
	if err != nil {
		return "", err
	}
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	cc, chans, reqs, err := ssh.NewClientConn(nc, n.Addr(), &ssh.ClientConfig{User: user,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(s)}, HostKeyCallback: ssh.FixedHostKey(n.HostKey())})
	if err != nil {
		nc.Close()
		return "", err
	}
	c := ssh.NewClient(cc, chans, reqs)
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	out, err := sess.Output("id -un")
	return strings.TrimSpace(string(out)), err
}

// A certificate exactly as gateway A mints it for its connection (the
// source-address is the address A dials from) works from that address
// only: replayed from 127.0.0.2 the real sshd refuses it. And the
// gateway's backend.cert_source_address reaches sshd: a gateway told its
// address is another one gets every login refused.
func TestCertificateReplayedFromElsewhere(t *testing.T) {
	w := startCAWorld(t)
	signer, err := ca.LoadSigner(w.caKeys[gwA])
	if err != nil {
		t.Fatal(err)
	}
	mint := ca.New(ca.Local(signer), ca.Options{Gateway: gwA, Validity: time.Minute})
	cert, err := mint.Sign(t.Context(), ca.Login{Principal: alice.name, User: alice.name, Session: "replay",
		Source: netip.MustParseAddr(gatewayAddr)})
	if err != nil {
		t.Fatal(err)
	}
	n := w.nodes[0]
	if who, err := nodeLogin(t.Context(), n, alice.name, cert, gatewayAddr); err != nil || who != alice.name {
		t.Fatalf("from the gateway's address: %q, %v", who, err)
	}
	offset := logSize(n)
	if _, err := nodeLogin(t.Context(), n, alice.name, cert, "127.0.0.2"); err == nil {
		t.Fatal("the certificate worked from 127.0.0.2")
	}
	nodeLog(t, n, offset, "not from a permitted source address (127.0.0.2)")

	g := w.gateway(t, gwA, func(c *config.Config) { c.Backend.CertSourceAddress = []string{"127.0.0.9"} })
	mustBeRefused(t, g, alice, "gateway with a wrong cert_source_address", "no login node is available")
}

// stolenCert is what a thief with a gateway's CA key mints: a certificate
// for principal with no source-address at all.
func stolenCert(t *testing.T, caKeyFile, principal string) ssh.Signer {
	t.Helper()
	authority, err := ca.LoadSigner(caKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ca.LoadSigner(alice.user.KeyPath) // any key will do
	if err != nil {
		t.Fatal(err)
	}
	cert := &ssh.Certificate{Key: key.PublicKey(), Serial: 1, CertType: ssh.UserCert, KeyId: "stolen",
		ValidPrincipals: []string{principal}, ValidAfter: uint64(time.Now().Add(-time.Minute).Unix()),
		ValidBefore: uint64(time.Now().Add(time.Hour).Unix()),
		Permissions: ssh.Permissions{Extensions: map[string]string{"permit-pty": ""}}}
	if err := cert.SignCert(rand.Reader, authority); err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewCertSigner(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A gateway's CA key stolen outright: its certificates carry whatever the
// thief likes, but the nodes bind the CA to its gateway's address
// (gateways file, from=), so they log in from that address only — the
// thief must keep the gateway. The shared CA, listed without an address
// (during a migration), is not bound; a trusted CA the gateways file does
// not list is refused everywhere.
func TestStolenCAKeyStaysAtItsGateway(t *testing.T) {
	w := startCAWorld(t)
	n := w.nodes[0]
	stolen := stolenCert(t, w.caKeys[gwA], alice.name)
	offset := logSize(n)
	if _, err := nodeLogin(t.Context(), n, alice.name, stolen, "127.0.0.2"); err == nil {
		t.Fatal("a certificate of gateway A's key logged in from 127.0.0.2")
	}
	nodeLog(t, n, offset, "Refused by certificate principals options")
	if who, err := nodeLogin(t.Context(), n, alice.name, stolen, gatewayAddr); err != nil || who != alice.name {
		t.Fatalf("from gateway A's address: %q, %v", who, err)
	}
	if who, err := nodeLogin(t.Context(), n, alice.name, stolenCert(t, w.keys.UserCAKey, alice.name), "127.0.0.2"); err != nil || who != alice.name {
		t.Fatalf("the shared CA, listed without an address: %q, %v", who, err)
	}
	// A CA the nodes trust but the gateways file does not list.
	rogue := filepath.Join(filepath.Dir(w.gateways), "rogue_ca")
	pub, err := ca.GenerateKeyFile(rogue, "rogue")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.keys.Trust(pub, "rogue"); err != nil {
		t.Fatal(err)
	}
	offset = logSize(n)
	if _, err := nodeLogin(t.Context(), n, alice.name, stolenCert(t, rogue, alice.name), gatewayAddr); err == nil {
		t.Fatal("a CA missing from the gateways file logged in")
	}
	nodeLog(t, n, offset, "Certificate does not contain an authorized principal")
}

// A gateway whose CA key is in KMS (a fake speaking the KMS protocol that
// signs with a real P-256 key): the real sshd accepts its certificates
// (ecdsa-sha2-nistp256 CA), the per-login latency is measured next to a
// key file's, and while KMS hangs or fails a login is refused within
// user_ca_kms.timeout with a short message and the reason in the audit.
func TestKMSSignedLogins(t *testing.T) {
	w := startCAWorld(t)
	awsjsontest.Setenv(t.Setenv)
	fake := kmstest.Start(t, "eu-west-1")
	if err := w.keys.Trust(fake.PublicKey(), "ca-gw-kms (KMS)"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(w.gateways)
	w.writeGateways(t, strings.TrimSpace(string(b)), harness.GatewaysLine(fake.PublicKey(), gatewayAddr, "ca-gw-kms"))
	const timeout = time.Second
	k := w.gateway(t, "ca-gw-kms", func(c *config.Config) {
		c.Gateway.UserCAKey = ""
		c.Gateway.UserCAKMS = &kms.Config{KeyID: fake.Alias, Region: "eu-west-1", Endpoint: fake.URL, Timeout: timeout, MaxAttempts: 3}
	})
	offsets := []int{logSize(w.nodes[0]), logSize(w.nodes[1])}
	mustLogin(t, k, alice, "KMS-signed")
	logLine(t, w.nodes, offsets, "gateway=ca-gw-kms", "signed by ECDSA CA "+ssh.FingerprintSHA256(fake.PublicKey()))

	// Latency: the sign step of a login (proof to relayed session) with
	// each kind of key, the same nodes, one after the other.
	file := w.gateway(t, gwA, nil)
	for _, g := range []struct {
		kind string
		gw   *harness.Gateway
	}{{"file", file}, {"kms", k}} {
		var ds []time.Duration
		for range 15 {
			rc := dialRaw(t, g.gw, "")
			userauth(t, rc)
			expect(t, "query", send(t, rc, "query", rawssh.PublicKeyQuery(alice.name, alice.pub, "")), rawssh.ReplyPKOK)
			req := signed(t, rc, alice.name, alice)
			start := time.Now()
			expect(t, "sign", send(t, rc, "sign", req), rawssh.ReplySuccess)
			ds = append(ds, time.Since(start))
			rc.Close()
		}
		slices.Sort(ds)
		t.Logf("%s CA: proof to logged-in node p50 %v, p90 %v (15 logins)", g.kind, ds[len(ds)/2].Round(100*time.Microsecond),
			ds[len(ds)*9/10].Round(100*time.Microsecond))
	}

	for _, outage := range []struct {
		name  string
		start func()
		calls int
	}{
		{"hung", func() { fake.SetDelay(time.Hour) }, 1},
		{"failing", func() { fake.Fail(true) }, 3},
	} {
		t.Run(outage.name, func(t *testing.T) {
			outage.start()
			defer func() { fake.SetDelay(0); fake.Fail(false) }()
			before, calls := len(audits(t, k)), fake.Calls("Sign")
			begin := time.Now()
			mustBeRefused(t, k, alice, "KMS "+outage.name, "frontdoor: cannot sign your login right now; please try again in a minute")
			took := time.Since(begin)
			t.Logf("KMS %s: refused after %v (timeout %v)", outage.name, took.Round(time.Millisecond), timeout)
			if took > timeout+3*time.Second { // a TCP dial, two key exchanges, a loaded 2-core machine
				t.Errorf("the user waited %v; user_ca_kms.timeout is %v", took, timeout)
			}
			if got := fake.Calls("Sign") - calls; got != outage.calls {
				t.Errorf("%d Sign calls, want %d", got, outage.calls)
			}
			if !slices.ContainsFunc(audits(t, k)[before:], func(e audit.Event) bool {
				return e.Type == audit.TypeAuth && e.Result == audit.ResultError && strings.Contains(e.Reason, "user CA unavailable: kms key, after")
			}) {
				t.Error("no audit event with the CA's failure")
			}
		})
	}
	mustLogin(t, k, alice, "KMS back")
}

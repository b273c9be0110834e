package gateway

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient/awsjsontest"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/ca/kms/kmstest"
)

// What the gateway's certificates say, seen by the node they are for: a
// login node here is a Go SSH server that records the certificate the
// gateway logs in with and the address the connection came from. (The
// real sshd's verdicts on these certificates — another source address,
// a dropped or revoked CA, KMS-signed — are in test/adversarial.)

// captureNode is a login node that accepts any certificate signed by ca
// and records it with the connection's remote address.
type captureNode struct {
	addr    string
	hostKey ssh.PublicKey
	ca      func() ssh.PublicKey

	mu    sync.Mutex // mu protects the following
	certs []*ssh.Certificate
	from  []string // remote IP of each certificate's connection
}

func startCaptureNode(t *testing.T, caKey func() ssh.PublicKey) *captureNode {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	hk, _ := ssh.NewSignerFromKey(priv)
	n := &captureNode{hostKey: hk.PublicKey(), ca: caKey}
	cfg := &ssh.ServerConfig{PublicKeyCallback: n.auth}
	cfg.AddHostKey(hk)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.addr = ln.Addr().String()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
				if err != nil {
					return
				}
				go ssh.DiscardRequests(reqs)
				for nc := range chans {
					nc.Reject(ssh.Prohibited, "capture node")
				}
				sc.Close()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return n
}

func (n *captureNode) auth(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	cert, ok := key.(*ssh.Certificate)
	if !ok {
		return nil, fmt.Errorf("not a certificate")
	}
	checker := ssh.CertChecker{IsUserAuthority: func(a ssh.PublicKey) bool { return bytes.Equal(a.Marshal(), n.ca().Marshal()) },
		SupportedCriticalOptions: []string{"source-address"}}
	perms, err := checker.Authenticate(meta, key)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(meta.RemoteAddr().String())
	n.mu.Lock()
	n.certs, n.from = append(n.certs, cert), append(n.from, host)
	n.mu.Unlock()
	return perms, nil // x/crypto then enforces source-address itself
}

func (n *captureNode) last(t *testing.T) (*ssh.Certificate, string) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.certs) == 0 {
		t.Fatal("the node saw no certificate")
	}
	return n.certs[len(n.certs)-1], n.from[len(n.from)-1]
}

// certGateway is a test gateway whose one node is a capture node; userCA
// is its gateway.user_ca_key or user_ca_kms setting (YAML).
type certGateway struct {
	*testGateway
	node *captureNode
	gw   *Gateway
}

func startCertGateway(t *testing.T, userCA string, caKey func() ssh.PublicKey) *certGateway {
	t.Helper()
	dir := t.TempDir()
	hostPub, err := ca.GenerateKeyFile(filepath.Join(dir, "host"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.GenerateKeyFile(filepath.Join(dir, "ca"), ""); err != nil {
		t.Fatal(err)
	}
	fileCA := func() ssh.PublicKey {
		s, err := ca.LoadSigner(filepath.Join(dir, "ca"))
		if err != nil {
			panic(err)
		}
		return s.PublicKey()
	}
	if caKey == nil {
		caKey = fileCA
	}
	node := startCaptureNode(t, caKey)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	userKey, _ := ssh.NewSignerFromKey(priv)
	users := fmt.Sprintf("users:\n  - {name: alice, groups: [lab], keys: ['%s']}\n",
		strings.TrimSpace(string(ssh.MarshalAuthorizedKey(userKey.PublicKey()))))
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(users), 0o600)
	os.WriteFile(filepath.Join(dir, "known_hosts"), []byte("cap1 "+string(ssh.MarshalAuthorizedKey(node.hostKey))), 0o600)
	yml := `
gateway: {name: gw-cert, listen: "127.0.0.1:0", host_keys: [host], login_grace_time: 20s, ` + userCA + `}
backend: {known_hosts: [known_hosts], connect_timeout: 5s, max_attempts: 1}
directory: {kind: static, static: {file: users.yaml}}
nodes: [{name: cap1, addr: "` + node.addr + `", pool: general}]
policy:
  rules:
    - {name: lab, groups: [lab], pools: [general]}
audit: {file: audit.jsonl}
`
	gw, addr := serveTestConfig(t, dir, yml, nil)
	return &certGateway{testGateway: &testGateway{addr: addr, hostKey: hostPub, userKey: userKey,
		audit: filepath.Join(dir, "audit.jsonl"), gw: gw}, node: node, gw: gw}
}

// The certificate a node sees: for the user, from this gateway's CA,
// with source-address exactly the address the node sees the connection
// come from, a non-zero serial, and a key ID naming user, session and
// gateway. Each login gets another serial.
func TestCertificateAsTheNodeSeesIt(t *testing.T) {
	g := startCertGateway(t, "user_ca_key: ca", nil)
	var serials []uint64
	for range 2 {
		if banner, err := g.dial("alice", ssh.PublicKeys(g.userKey)); err != nil {
			t.Fatalf("login: %v (%q)", err, banner)
		}
		cert, from := g.node.last(t)
		if got := cert.CriticalOptions["source-address"]; got != from {
			t.Errorf("source-address %q, but the node sees the gateway at %s", got, from)
		}
		if cert.ValidPrincipals[0] != "alice" || cert.Serial == 0 {
			t.Errorf("principals %v, serial %d", cert.ValidPrincipals, cert.Serial)
		}
		if !strings.HasPrefix(cert.KeyId, "frontdoor user=alice session=") || !strings.HasSuffix(cert.KeyId, " gateway=gw-cert") {
			t.Errorf("key id %q", cert.KeyId)
		}
		serials = append(serials, cert.Serial)
	}
	if serials[0] == serials[1] {
		t.Error("two logins, one serial")
	}
	pub, kind := g.gw.UserCA()
	if kind != "file" || !bytes.Equal(pub.Marshal(), g.node.ca().Marshal()) {
		t.Errorf("UserCA() = %s %s", kind, ssh.FingerprintSHA256(pub))
	}
}

// A CA key in KMS: logins work with certificates KMS signed; while KMS
// does not answer, a login is refused within user_ca_kms.timeout with a
// short message and the audit says why; once KMS answers, logins work
// again.
func TestKMSUserCA(t *testing.T) {
	awsjsontest.Setenv(t.Setenv)
	fake := kmstest.Start(t, "eu-west-1")
	g := startCertGateway(t, fmt.Sprintf(`user_ca_kms: {key_id: %s, region: eu-west-1, endpoint: "%s", timeout: 400ms}`, fake.Alias, fake.URL),
		fake.PublicKey)
	if banner, err := g.dial("alice", ssh.PublicKeys(g.userKey)); err != nil {
		t.Fatalf("login with a KMS-signed certificate: %v (%q)", err, banner)
	}
	cert, from := g.node.last(t)
	if cert.Signature.Format != ssh.KeyAlgoECDSA256 || cert.CriticalOptions["source-address"] != from {
		t.Errorf("signature %s, source-address %q from %s", cert.Signature.Format, cert.CriticalOptions["source-address"], from)
	}
	if _, kind := g.gw.UserCA(); kind != "kms" {
		t.Errorf("kind %s", kind)
	}

	fake.SetDelay(time.Minute) // KMS hangs
	start := time.Now()
	banner, err := g.dial("alice", ssh.PublicKeys(g.userKey))
	took := time.Since(start)
	if err == nil {
		t.Fatal("logged in without a certificate")
	}
	if !strings.Contains(banner, "frontdoor: "+msgCAUnavailable) {
		t.Errorf("banner %q", banner)
	}
	if took > 400*time.Millisecond+2*time.Second { // the bound, plus two handshakes on a loaded machine
		t.Errorf("refused after %v; user_ca_kms.timeout is 400ms", took)
	}
	t.Logf("KMS hung: the user was told after %v", took.Round(time.Millisecond))
	b, _ := os.ReadFile(g.audit)
	if !strings.Contains(string(b), `"result":"error","reason":"certificate for node cap1: user CA unavailable: kms key, after`) {
		t.Errorf("audit:\n%s", b)
	}
	fake.SetDelay(0)
	if banner, err := g.dial("alice", ssh.PublicKeys(g.userKey)); err != nil {
		t.Fatalf("login once KMS answers again: %v (%q)", err, banner)
	}
}

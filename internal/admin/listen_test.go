package admin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

func TestListenUnixModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "frontdoor")
	path := filepath.Join(dir, "admin.sock")
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket is %v, want a socket with mode 0600", fi.Mode())
	}
	di, err := os.Stat(dir)
	if err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("created parent directory: %v %v, want 0700", di.Mode(), err)
	}
	// A live socket is never taken over.
	if _, err := ListenUnix(path); err == nil || !strings.Contains(err.Error(), "another process is serving it") {
		t.Fatalf("second listener on a live socket: %v", err)
	}
	ln.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("Close left the socket behind: %v", err)
	}
}

func TestListenUnixStaleAndRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.sock")
	// A stale socket, as a crash leaves it: bound, nobody listening.
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	old.Close()
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln.Close()

	// Anything that is not a socket stays where it is.
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("regular file at the socket path: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "precious" {
		t.Fatalf("the file was touched: %q %v", b, err)
	}
	// A directory others may write to could have the socket swapped.
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if _, err := ListenUnix(filepath.Join(open, "admin.sock")); err == nil || !strings.Contains(err.Error(), "could replace the socket") {
		t.Fatalf("world-writable directory: %v", err)
	}
	if _, err := ListenUnix("/" + strings.Repeat("x", MaxSocketPath)); err == nil {
		t.Fatal("overlong path accepted")
	}
}

// Another user, with real credentials: curl run as nobody. The socket's
// mode keeps it out; loosened by hand, the peer check still refuses it.
func TestUnixOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (it runs curl as nobody)")
	}
	for _, tool := range []string{"setpriv", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: %v", tool, err)
		}
	}
	dir, err := os.MkdirTemp("", "fd-admin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755) // nobody may reach the socket file
	path := filepath.Join(dir, "admin.sock")
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	serve(t, New(Options{Source: src}), ln)
	curl := func() (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", path, "http://localhost/v1/sessions").CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	// curl exit 7: could not connect (EACCES on the 0600 socket).
	if code, out := curl(); code != 7 {
		t.Fatalf("nobody on a 0600 socket: curl exit %d %q, want 7 (cannot connect)", code, out)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if code, out := curl(); code != 0 || out != "403" {
		t.Fatalf("nobody on a loosened socket: curl exit %d %q, want HTTP 403", code, out)
	}
}

// pki is a throwaway CA with a server and client certificates.
type pki struct {
	dir        string
	ca         *x509.Certificate
	caKey      *ecdsa.PrivateKey
	serverCert string
	serverKey  string
	caFile     string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	p.caKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", der)
	p.serverCert, p.serverKey = p.issue(t, "server", x509.ExtKeyUsageServerAuth, "gw1.example.edu")
	return p
}

func (p *pki) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var serial int64 = 10

func (p *pki) issue(t *testing.T, cn string, use x509.ExtKeyUsage, dns ...string) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: dns,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{use},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return p.write(t, cn+".pem", "CERTIFICATE", der), p.write(t, cn+"-key.pem", "EC PRIVATE KEY", kb)
}

func (p *pki) client(t *testing.T, certFile, keyFile string) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
}

// startConfigured runs Listen on a gateway config (the way the gateway
// does) and returns the TCP listener's https URL.
func startConfigured(t *testing.T, g config.Gateway, src *fakeSource) string {
	t.Helper()
	s, err := Listen(g, Options{Source: src, Audit: src})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	for _, a := range s.Addrs() {
		if strings.HasPrefix(a, "127.0.0.1:") {
			return "https://" + a
		}
	}
	t.Fatalf("no TCP listener among %v", s.Addrs())
	return ""
}

func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	alice, aliceKey := p.issue(t, "ops-alice", x509.ExtKeyUsageClientAuth)
	other := newPKI(t)
	mallory, malloryKey := other.issue(t, "ops-alice", x509.ExtKeyUsageClientAuth)
	src := &fakeSource{}
	base := startConfigured(t, config.Gateway{AdminSocket: config.AdminSocketOff, AdminListen: "127.0.0.1:0",
		AdminTLSCert: p.serverCert, AdminTLSKey: p.serverKey, AdminClientCA: p.caFile, AdminClientNames: []string{"ops-alice"}}, src)

	status, body, _ := do(t, p.client(t, alice, aliceKey), base, req{method: "POST", path: "/v1/drain",
		ctype: "application/json", body: drainBody})
	if status != 200 || src.lastDrain() != "login1 on cert:ops-alice" {
		t.Fatalf("drain with a client certificate: %d %s, recorded %q", status, body, src.lastDrain())
	}
	// The certificate's name is on the Host allow-list; others are not.
	if status, _, _ := do(t, p.client(t, alice, aliceKey), base, req{path: "/v1/nodes", host: "gw1.example.edu"}); status != 200 {
		t.Fatalf("the certificate's own name refused: %d", status)
	}
	if status, _, _ := do(t, p.client(t, alice, aliceKey), base, req{path: "/v1/nodes", host: "evil.example"}); status != 421 {
		t.Fatalf("foreign Host over TLS: %d", status)
	}
	// Without a certificate, or with one from another CA, no handshake.
	for name, hc := range map[string]*http.Client{"no certificate": p.client(t, "", ""),
		"another CA": p.client(t, mallory, malloryKey)} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/nodes", nil)
		resp, err := hc.Do(r)
		cancel()
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: answered %s", name, resp.Status)
		}
	}
}

// With tokens and a client CA both configured, either credential works,
// and the certificate is optional at the handshake.
func TestTokenAndTLS(t *testing.T) {
	p := newPKI(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("ci "+opsSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sockDir := t.TempDir()
	src := &fakeSource{}
	base := startConfigured(t, config.Gateway{AdminSocket: filepath.Join(sockDir, "admin.sock"), AdminListen: "127.0.0.1:0",
		AdminTokenFile: tokens, AdminTLSCert: p.serverCert, AdminTLSKey: p.serverKey, AdminClientCA: p.caFile,
		AdminClientNames: []string{"*"}}, src)
	hc := p.client(t, "", "")
	if status, _, _ := do(t, hc, base, req{path: "/v1/nodes"}); status != 401 {
		t.Fatalf("no credential: %d", status)
	}
	if status, _, _ := do(t, hc, base, req{method: "POST", path: "/v1/undrain", token: opsSecret, ctype: "application/json",
		body: drainBody}); status != 200 || src.lastDrain() != "login1 off token:ci" {
		t.Fatalf("token over TLS: %d, recorded %q", status, src.lastDrain())
	}
	if fi, err := os.Stat(filepath.Join(sockDir, "admin.sock")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the socket next to TCP: %v %v", fi, err)
	}
	// A token file others may read is refused at start.
	os.Chmod(tokens, 0o644)
	if _, err := Listen(config.Gateway{AdminSocket: config.AdminSocketOff, AdminListen: "127.0.0.1:0", AdminTokenFile: tokens},
		Options{Source: src}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("group/world-readable token file: %v", err)
	}
}

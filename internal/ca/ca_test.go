package ca

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

func newCA(t *testing.T) (*CA, string) {
	return newCAWith(t, GenerateCAKeyFile)
}

func newCAWith(t *testing.T, gen func(path, comment string) (ssh.PublicKey, error)) (*CA, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "user_ca")
	if _, err := gen(path, "test ca"); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	return New(Local(s), Options{Gateway: "gw1", Validity: 5 * time.Minute}), dir
}

// An ed25519 CA key, as GenerateCAKeyFile made them before it switched to
// ECDSA, goes on signing: nodes that trust it need no change.
func TestEd25519CAKeyStillSigns(t *testing.T) {
	c, _ := newCAWith(t, GenerateKeyFile)
	s, err := c.Sign(context.Background(), Login{Principal: "alice", User: "alice", Session: "s", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	cert := s.PublicKey().(*ssh.Certificate)
	if got := cert.SignatureKey.Type(); got != ssh.KeyAlgoED25519 {
		t.Fatalf("CA key type %s, want %s", got, ssh.KeyAlgoED25519)
	}
	checker := ssh.CertChecker{
		IsUserAuthority:          func(k ssh.PublicKey) bool { return bytes.Equal(k.Marshal(), c.PublicKey().Marshal()) },
		SupportedCriticalOptions: []string{"source-address"},
	}
	if err := checker.CheckCert("alice", cert); err != nil {
		t.Fatalf("certificate from an ed25519 CA: %v", err)
	}
}

// src is the address a gateway dials a node from, in these tests.
var src = netip.MustParseAddr("10.0.0.10")

func TestSignMintsANarrowCertificate(t *testing.T) {
	c, _ := newCA(t)
	now := time.Unix(1_800_000_000, 0)
	c.now = func() time.Time { return now }
	s, err := c.Sign(context.Background(), Login{Principal: "alice", User: "alice", Session: "abc123", Rights: policy.Rights{Agent: true}, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	cert, ok := s.PublicKey().(*ssh.Certificate)
	if !ok {
		t.Fatalf("not a certificate: %T", s.PublicKey())
	}
	if cert.CertType != ssh.UserCert || len(cert.ValidPrincipals) != 1 || cert.ValidPrincipals[0] != "alice" {
		t.Errorf("type/principals: %d %v", cert.CertType, cert.ValidPrincipals)
	}
	if got := time.Unix(int64(cert.ValidBefore), 0).Sub(now); got != 5*time.Minute {
		t.Errorf("valid for %v after now, want 5m", got)
	}
	if !strings.Contains(cert.KeyId, "session=abc123") || !strings.Contains(cert.KeyId, "gateway=gw1") {
		t.Errorf("key id %q", cert.KeyId)
	}
	// ECDSA P-256 both: what the node's sshd verifies cheaply
	// (GenerateCAKeyFile).
	if got := cert.Key.Type(); got != ssh.KeyAlgoECDSA256 {
		t.Errorf("session key type %s, want %s", got, ssh.KeyAlgoECDSA256)
	}
	if got := cert.SignatureKey.Type(); got != ssh.KeyAlgoECDSA256 {
		t.Errorf("CA key type %s, want %s", got, ssh.KeyAlgoECDSA256)
	}
	if cert.CriticalOptions["source-address"] != "10.0.0.10" {
		t.Errorf("source-address %q", cert.CriticalOptions["source-address"])
	}
	for ext, want := range map[string]bool{"permit-pty": true, "permit-agent-forwarding": true,
		"permit-port-forwarding": false, "permit-X11-forwarding": false} {
		if _, got := cert.Extensions[ext]; got != want {
			t.Errorf("extension %s: %v, want %v", ext, got, want)
		}
	}
	// The CA signed it, and sshd's checks (principal, time) pass.
	checker := ssh.CertChecker{
		IsUserAuthority:          func(k ssh.PublicKey) bool { return string(k.Marshal()) == string(c.PublicKey().Marshal()) },
		Clock:                    func() time.Time { return now },
		SupportedCriticalOptions: []string{"source-address"},
	}
	if err := checker.CheckCert("alice", cert); err != nil {
		t.Errorf("CheckCert: %v", err)
	}
	if err := checker.CheckCert("root", cert); err == nil {
		t.Error("certificate valid for root")
	}
	// Each login gets its own key.
	s2, _ := c.Sign(context.Background(), Login{Principal: "alice", Source: src})
	if string(s2.PublicKey().(*ssh.Certificate).Key.Marshal()) == string(cert.Key.Marshal()) {
		t.Error("two logins share a key")
	}
}

func TestSignRefusesOddPrincipals(t *testing.T) {
	c, _ := newCA(t)
	for _, p := range []string{"", "alice,root", "a b", "*", "al?ce", "x\x00"} {
		if _, err := c.Sign(context.Background(), Login{Principal: p, Source: src}); !errors.Is(err, ErrBadPrincipal) {
			t.Errorf("principal %q: %v", p, err)
		}
	}
}

func TestKeyFiles(t *testing.T) {
	_, dir := newCA(t)
	path := filepath.Join(dir, "user_ca")
	if _, err := GenerateKeyFile(path, ""); err == nil {
		t.Error("overwrote an existing key")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigner(path); err == nil || !strings.Contains(err.Error(), "too open") {
		t.Errorf("world-readable key accepted: %v", err)
	}
}

func TestHostCertificates(t *testing.T) {
	dir := t.TempDir()
	hostKey := filepath.Join(dir, "host")
	pub, err := GenerateKeyFile(hostKey, "")
	if err != nil {
		t.Fatal(err)
	}
	hostCA := filepath.Join(dir, "host_ca")
	if _, err := GenerateKeyFile(hostCA, ""); err != nil {
		t.Fatal(err)
	}
	caSigner, _ := LoadSigner(hostCA)
	cert := &ssh.Certificate{Key: pub, CertType: ssh.HostCert, ValidPrincipals: []string{"login.example.edu"},
		ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, caSigner); err != nil {
		t.Fatal(err)
	}
	certFile := filepath.Join(dir, "host-cert.pub")
	os.WriteFile(certFile, ssh.MarshalAuthorizedKey(cert), 0o644)
	signers, err := LoadHostSigners([]string{hostKey}, []string{certFile})
	if err != nil {
		t.Fatal(err)
	}
	if len(signers) != 2 {
		t.Fatalf("%d signers, want key + certificate", len(signers))
	}
	if _, ok := signers[1].PublicKey().(*ssh.Certificate); !ok {
		t.Error("second signer is not the certificate")
	}
	// A certificate for another key is refused.
	other := filepath.Join(dir, "other")
	GenerateKeyFile(other, "")
	if _, err := LoadHostSigners([]string{other}, []string{certFile}); err == nil {
		t.Error("certificate for another key accepted")
	}
}

package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"golang.org/x/crypto/ssh"
)

// The host keys a connection signs its key exchanges with keep the signer
// interfaces x/crypto chooses host key algorithms by, and refuse the key
// exchange one over the budget until the client authenticated.
func TestKexBudget(t *testing.T) {
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	ed, _ := ssh.NewSignerFromKey(edPriv)
	rsaPriv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPlain, _ := ssh.NewSignerFromKey(rsaPriv)
	rsaMulti, err := ssh.NewSignerWithAlgorithms(rsaPlain.(ssh.AlgorithmSigner), []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []ssh.Signer{ed, rsaPlain, rsaMulti} {
		var k kexBudget
		over := 0
		k.over = func() { over++ }
		w := k.wrap(s)
		_, wasAlg := s.(ssh.AlgorithmSigner)
		_, isAlg := w.(ssh.AlgorithmSigner)
		wm, isMulti := w.(ssh.MultiAlgorithmSigner)
		sm, wasMulti := s.(ssh.MultiAlgorithmSigner)
		if wasAlg != isAlg || wasMulti != isMulti || isMulti && !slices.Equal(wm.Algorithms(), sm.Algorithms()) {
			t.Fatalf("%s: wrapping changed the signer's interfaces", s.PublicKey().Type())
		}
		for i := range maxPreAuthKex {
			if _, err := w.Sign(rand.Reader, []byte("exchange hash")); err != nil {
				t.Fatalf("%s: key exchange %d refused: %v", s.PublicKey().Type(), i+1, err)
			}
		}
		if _, err := w.Sign(rand.Reader, []byte("one too many")); !errors.Is(err, errKexBudget) {
			t.Fatalf("%s: key exchange %d before authentication: %v", s.PublicKey().Type(), maxPreAuthKex+1, err)
		}
		if isAlg {
			if _, err := w.(ssh.AlgorithmSigner).SignWithAlgorithm(rand.Reader, []byte("again"), ""); !errors.Is(err, errKexBudget) {
				t.Fatalf("%s: SignWithAlgorithm over the budget: %v", s.PublicKey().Type(), err)
			}
		}
		if over != 1 {
			t.Fatalf("over called %d times", over)
		}
		k.authed.Store(true)
		if _, err := w.Sign(rand.Reader, []byte("rekey after login")); err != nil {
			t.Fatalf("%s: re-key after authentication: %v", s.PublicKey().Type(), err)
		}
	}
}

// admission_exempt holds for IPv6 clients too: their source key is a /64,
// exempt when the listed prefix covers it.
func TestExemptSource(t *testing.T) {
	s := &settings{exempt: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/48")}}
	for key, want := range map[string]bool{
		SourceKey("10.1.2.3:22"):          true,
		SourceKey("192.0.2.1:22"):         false,
		SourceKey("[2001:db8:0:1::5]:22"): true,
		SourceKey("[2001:db9::5]:22"):     false,
		SourceKey("[::ffff:10.0.0.1]:22"): true,
		"2001:db8::/32":                   false, // wider than the exempt prefix
		"not an address":                  false,
	} {
		if got := s.exemptSource(key); got != want {
			t.Errorf("exemptSource(%q) = %v, want %v", key, got, want)
		}
	}
}

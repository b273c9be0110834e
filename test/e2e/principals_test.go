package e2e_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// The node's own lock behind the gateway's: even a certificate from the
// gateways' own CA (say, a misused CA key) cannot log in as root or a
// system account, because sshd asks `frontdoor authorized-principals`
// (the deploy/ drop-in) which principals an account accepts.
func TestNodeRefusesSystemPrincipals(t *testing.T) {
	signer, err := ca.LoadSigner(keys.UserCAKey)
	if err != nil {
		t.Fatal(err)
	}
	// This process dials the node from a loopback address.
	mint := ca.New(ca.Local(signer), ca.Options{Gateway: "e2e-test", Validity: time.Minute, SourceAddresses: []string{"127.0.0.0/8"}})
	for _, tt := range []struct {
		account string
		ok      bool
	}{{aliceName, true}, {"root", false}, {"daemon", false}, {"nobody", false}} {
		cert, err := mint.Sign(t.Context(), ca.Login{Principal: tt.account, User: tt.account, Session: "principals-test"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := harness.DialSSH(t.Context(), login1.Addr(), tt.account, login1.HostKey(), ssh.PublicKeys(cert))
		if tt.ok {
			if err != nil {
				t.Fatalf("%s with a valid certificate: %v", tt.account, err)
			}
			s, _ := c.NewSession()
			out, err := s.Output("id -un")
			c.Close()
			if err != nil || strings.TrimSpace(string(out)) != tt.account {
				t.Fatalf("%s: id -un = %q, %v", tt.account, out, err)
			}
			continue
		}
		if err == nil {
			c.Close()
			t.Fatalf("node accepted a certificate for %s", tt.account)
		}
		if !strings.Contains(err.Error(), "unable to authenticate") {
			t.Fatalf("%s: %v", tt.account, err)
		}
	}
}

package ca

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func testKey(t testing.TB) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyText(k ssh.PublicKey) string { return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) }

// A node's gateways file binds each CA to its gateway's addresses; a CA
// listed without from= is accepted from anywhere; a CA not listed is
// refused; a line that cannot be read makes the file refuse everything.
func TestGatewaysFile(t *testing.T) {
	gw1, gw2, shared, other := testKey(t), testKey(t), testKey(t), testKey(t)
	file := "# frontdoor gateways\n\n" +
		`from="10.0.0.10" ` + keyText(gw1) + " frontdoor user CA gw1\n" +
		`  from="10.0.0.11,10.0.2.0/24" ` + keyText(gw2) + " gw2\n" +
		keyText(shared) + " shared CA (migration)\n"
	gws, err := ParseGateways([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(gws) != 3 || gws[0].Comment != "frontdoor user CA gw1" {
		t.Fatalf("parsed %+v", gws)
	}
	for _, tt := range []struct {
		key  ssh.PublicKey
		want string
		err  error
	}{
		{gw1, `from="10.0.0.10" `, nil},
		{gw2, `from="10.0.0.11,10.0.2.0/24" `, nil},
		{shared, "", nil},
		{other, "", ErrUnknownCA},
	} {
		got, err := PrincipalOptions(gws, ssh.FingerprintSHA256(tt.key))
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("PrincipalOptions(%s) = %q, %v; want %q, %v", ssh.FingerprintSHA256(tt.key), got, err, tt.want, tt.err)
		}
	}

	cert := &ssh.Certificate{Key: gw1, CertType: ssh.UserCert, ValidPrincipals: []string{"alice"}}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	if err := cert.SignCert(rand.Reader, signer); err != nil {
		t.Fatal(err)
	}
	for name, line := range map[string]string{
		"garbage":          "not a key",
		"trailing":         keyText(gw1) + " c\nnot a key",
		"other option":     `command="/bin/sh" ` + keyText(gw1),
		"from and command": `from="10.0.0.1",command="/bin/sh" ` + keyText(gw1),
		"quote in from":    `from="10.0.0.1\" x" ` + keyText(gw1),
		"host name":        `from="gw1.example.edu" ` + keyText(gw1),
		"empty from":       `from="" ` + keyText(gw1),
		"two froms":        `from="10.0.0.1",from="10.0.0.2" ` + keyText(gw1),
		"certificate":      strings.TrimSpace(string(ssh.MarshalAuthorizedKey(cert))),
	} {
		if _, err := ParseGateways([]byte(keyText(gw2) + "\n" + line + "\n")); !errors.Is(err, ErrGatewaysFile) {
			t.Errorf("%s: %v, want ErrGatewaysFile", name, err)
		}
	}
}

var optionRE = regexp.MustCompile(`^from="[0-9A-Fa-f.:/,*?!]+" $`)

// Whatever the file holds, what the node is told is either nothing or a
// from= option sshd reads as one option.
func FuzzParseGateways(f *testing.F) {
	k := keyText(testKey(f))
	f.Add([]byte(`from="10.0.0.10" ` + k + " gw1\n"))
	f.Add([]byte(`from="10.0.0.1",command="x" ` + k + "\n"))
	f.Add([]byte("#\n" + k))
	f.Fuzz(func(t *testing.T, data []byte) {
		gws, err := ParseGateways(data)
		if err != nil {
			return
		}
		for _, g := range gws {
			opts, err := PrincipalOptions(gws, ssh.FingerprintSHA256(g.Key))
			if err != nil {
				t.Fatalf("listed key unknown: %v", err)
			}
			if opts != "" && (strings.Count(opts, `"`) != 2 || !strings.HasPrefix(opts, `from="`) || strings.ContainsAny(opts, " \t\n,") && !strings.HasSuffix(opts, `" `)) {
				t.Fatalf("options %q", opts)
			}
			if strings.ContainsAny(g.From, "\" \t\r\n\x00") {
				t.Fatalf("from %q", g.From)
			}
		}
	})
}

package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
)

// With a gateways file the principal line carries the CA's from=; a CA
// it does not list, a missing fingerprint or an unreadable file refuse
// the login (nothing printed).
func TestPrincipalLine(t *testing.T) {
	key := func() ssh.PublicKey {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		k, _ := ssh.NewPublicKey(pub)
		return k
	}
	gw1, other := key(), key()
	file := filepath.Join(t.TempDir(), "gateways")
	os.WriteFile(file, []byte(`from="10.0.0.10" `+string(ssh.MarshalAuthorizedKey(gw1))), 0o644)
	lookup := func(n string) (*user.User, error) { return &user.User{Username: n, Uid: "2001"}, nil }
	fp := ssh.FingerprintSHA256
	for _, tt := range []struct {
		name string
		args []string
		file string
		want string
		err  error
	}{
		{"no file", []string{"alice"}, "", "alice", nil},
		{"bound", []string{"alice", fp(gw1)}, file, `from="10.0.0.10" alice`, nil},
		{"unknown CA", []string{"alice", fp(other)}, file, "", ca.ErrUnknownCA},
		{"no fingerprint", []string{"alice"}, file, "", errNotPrincipal},
		{"unreadable", []string{"alice", fp(gw1)}, file + ".missing", "", ca.ErrGatewaysFile},
		{"root first", []string{"root", fp(gw1)}, file, "", errNotPrincipal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := principalLine(tt.args, 1000, nil, tt.file, lookup)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("principalLine = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

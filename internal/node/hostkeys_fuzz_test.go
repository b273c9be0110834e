package node

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// FuzzHostKeysByName: host keys are bound to node names. Whatever else a
// known_hosts file holds (patterns, negations, markers, hashed names,
// lines that do not parse), a key listed on one line for "login-a" only is
// accepted for the node called login-a and for no other name, however
// the name is spelled (another case, a port, brackets, a pattern); and the
// algorithms offered to a node are only those its lines name, plus the
// certificate ones. Seeds: testdata/fuzz/FuzzHostKeysByName, lines of the
// harness's known_hosts files and what ssh-keygen -H and @cert-authority
// and @revoked lines look like.
func FuzzHostKeysByName(f *testing.F) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		f.Fatal(err)
	}
	key := signer.PublicKey()
	line := "login-a " + string(ssh.MarshalAuthorizedKey(key))
	b64 := []byte(strings.Fields(line)[2])
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, others []byte, name string) {
		path := filepath.Join(dir, "known_hosts")
		if err := os.WriteFile(path, append(append(others, '\n'), line...), 0o600); err != nil {
			t.Fatal(err)
		}
		h, err := LoadHostKeys([]string{path}, false)
		if err != nil {
			return // a file that does not parse is refused at load
		}
		if err := h.Check("login-a", key); err != nil {
			t.Fatalf("login-a's own key refused: %v", err)
		}
		// Unless the other lines name the key themselves (the fuzzer can
		// learn it from comparisons): then it is theirs too. (x/crypto's
		// knownhosts then also takes "@cert-authority PATTERN KEY" for a
		// plain host key KEY of the hosts PATTERN matches, which OpenSSH
		// does not; harmless, since presenting it needs the CA's private
		// key, which signs any host certificate anyway.)
		if err := h.Check(name, key); (err == nil) != (name == "login-a") && !bytes.Contains(others, b64) {
			t.Fatalf("login-a's key for the node called %q: %v", name, err)
		}
		algos := h.AlgorithmsFor("login-a")
		if !slices.Contains(algos, ssh.KeyAlgoED25519) {
			t.Fatalf("algorithms for login-a %q lack its key's", algos)
		}
		for _, a := range h.AlgorithmsFor(name) {
			if !slices.Contains(ssh.SupportedAlgorithms().HostKeys, a) && !slices.Contains(ssh.InsecureAlgorithms().HostKeys, a) {
				t.Fatalf("algorithm %q offered to %q", a, name)
			}
		}
	})
}

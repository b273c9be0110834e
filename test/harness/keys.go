package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
)

// ClusterKeys are a cluster's keys: the SSH host key every gateway shares
// (what clients see), each gateway's own user CA, and what the login
// nodes trust — the TrustedUserCAKeys file listing every gateway's CA key,
// and a RevokedKeys KRL. sshd reads both files at every login, so a key
// added, removed or revoked counts from the next login, without a restart.
// Safe for concurrent use.
type ClusterKeys struct {
	HostKey       string        // private host key file
	HostPublicKey ssh.PublicKey // what clients put in known_hosts
	// UserCAKey is a user CA no gateway of the harness signs with: the
	// one shared CA of before per-gateway CAs (a migration's old key), for
	// tests that mint certificates themselves. The nodes trust it.
	UserCAKey string
	// UserCAPub is the nodes' TrustedUserCAKeys file: UserCAKey's public
	// key and every gateway's (GatewayCA, Trust), one per line.
	UserCAPub string
	// RevokedKeys is the nodes' RevokedKeys file, a KRL: empty until
	// Revoke.
	RevokedKeys string

	dir string
	mu  sync.Mutex // mu serialises changes to the trusted and revoked files
}

// Keys creates the cluster keys in dir, or loads them if they are there,
// and writes the trusted keys file from every user CA found in dir.
func Keys(dir string) (*ClusterKeys, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	k := &ClusterKeys{
		HostKey:     filepath.Join(dir, "host_ed25519"),
		UserCAKey:   filepath.Join(dir, "user_ca"),
		UserCAPub:   filepath.Join(dir, "trusted_user_ca_keys"),
		RevokedKeys: filepath.Join(dir, "revoked_keys.krl"),
		dir:         dir,
	}
	for _, p := range []struct {
		path, comment string
		gen           func(path, comment string) (ssh.PublicKey, error)
	}{
		{k.HostKey, "frontdoor-host", ca.GenerateKeyFile},
		{k.UserCAKey, "frontdoor-user-ca shared", ca.GenerateCAKeyFile},
	} {
		if _, err := os.Stat(p.path); errors.Is(err, os.ErrNotExist) {
			if _, err := p.gen(p.path, p.comment); err != nil {
				return nil, fmt.Errorf("harness: %w", err)
			}
		}
	}
	s, err := ca.LoadSigner(k.HostKey)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	k.HostPublicKey = s.PublicKey()
	// Trusted: the shared CA and every gateway CA made earlier in dir.
	pubs, _ := filepath.Glob(filepath.Join(dir, "user_ca_*.pub"))
	slices.Sort(pubs)
	var trusted []byte
	for _, p := range append([]string{k.UserCAKey + ".pub"}, pubs...) {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		trusted = append(trusted, bytes.TrimSpace(b)...)
		trusted = append(trusted, '\n')
	}
	if err := writeAtomic(k.UserCAPub, trusted); err != nil {
		return nil, err
	}
	if err := k.ResetRevoked(); err != nil {
		return nil, err
	}
	return k, nil
}

// GatewayCA returns the private key file of gateway name's own user CA
// (DIR/user_ca_NAME), creating it the first time and adding its public key
// to the trusted keys file.
func (k *ClusterKeys) GatewayCA(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, "/\\ \t\n") || name == "." || name == ".." {
		return "", fmt.Errorf("harness: gateway name %q cannot name a key file", name)
	}
	path := filepath.Join(k.dir, "user_ca_"+name)
	k.mu.Lock()
	defer k.mu.Unlock()
	pub, err := loadPub(path + ".pub")
	if errors.Is(err, os.ErrNotExist) {
		pub, err = ca.GenerateCAKeyFile(path, "frontdoor user CA "+name)
	}
	if err != nil {
		return "", fmt.Errorf("harness: %w", err)
	}
	return path, k.trustLocked(pub, "frontdoor user CA "+name)
}

// GatewayCAPublicKey is gateway name's user CA public key (GatewayCA).
func (k *ClusterKeys) GatewayCAPublicKey(name string) (ssh.PublicKey, error) {
	return loadPub(filepath.Join(k.dir, "user_ca_"+name+".pub"))
}

// Trust adds pub (a CA key made elsewhere, such as in KMS) to the trusted
// keys file, if it is not there yet.
func (k *ClusterKeys) Trust(pub ssh.PublicKey, comment string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.trustLocked(pub, comment)
}

func (k *ClusterKeys) trustLocked(pub ssh.PublicKey, comment string) error {
	lines, err := k.trustedLines()
	if err != nil {
		return err
	}
	want := keyText(pub)
	for _, l := range lines {
		if strings.HasPrefix(l, want) {
			return nil
		}
	}
	return writeAtomic(k.UserCAPub, []byte(strings.Join(append(lines, want+" "+comment), "\n")+"\n"))
}

// Distrust removes pub from the trusted keys file: what an admin does to
// drop one gateway's CA.
func (k *ClusterKeys) Distrust(pub ssh.PublicKey) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	lines, err := k.trustedLines()
	if err != nil {
		return err
	}
	want := keyText(pub)
	lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) })
	return writeAtomic(k.UserCAPub, []byte(strings.Join(lines, "\n")+"\n"))
}

func (k *ClusterKeys) trustedLines() ([]string, error) {
	b, err := os.ReadFile(k.UserCAPub)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	return slices.DeleteFunc(strings.Split(string(b), "\n"), func(l string) bool { return strings.TrimSpace(l) == "" }), nil
}

// Revoke adds pub to the KRL with `ssh-keygen -k -u`, as an admin revokes
// a gateway's CA key.
func (k *ClusterKeys) Revoke(pub ssh.PublicKey) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	tmp, err := os.CreateTemp(k.dir, "revoke-*.pub")
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	defer os.Remove(tmp.Name())
	tmp.Write(ssh.MarshalAuthorizedKey(pub))
	tmp.Close()
	// Update a copy and rename it into place: sshd never reads half a KRL.
	next := k.RevokedKeys + ".next"
	cur, err := os.ReadFile(k.RevokedKeys)
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	if err := os.WriteFile(next, cur, 0o644); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	if err := sshKeygen("-k", "-u", "-f", next, tmp.Name()); err != nil {
		return err
	}
	return os.Rename(next, k.RevokedKeys)
}

// ResetRevoked makes the KRL empty again (`ssh-keygen -k`).
func (k *ClusterKeys) ResetRevoked() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	next := k.RevokedKeys + ".next"
	os.Remove(next)
	if err := sshKeygen("-k", "-f", next); err != nil {
		return err
	}
	os.Chmod(next, 0o644)
	return os.Rename(next, k.RevokedKeys)
}

func sshKeygen(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "ssh-keygen", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("harness: ssh-keygen %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// GatewaysLine is a line of a node's gateways file (authorized-principals
// --gateways): the CA key pub, whose certificates are accepted from the
// addresses from ("" for anywhere).
func GatewaysLine(pub ssh.PublicKey, from, comment string) string {
	line := keyText(pub) + " " + comment
	if from != "" {
		line = `from="` + from + `" ` + line
	}
	return line
}

func keyText(pub ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
}

func loadPub(path string) (ssh.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	return pub, err
}

// writeAtomic replaces path (mode 0644) so that a reader sees the old
// content or the new, never half.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return nil
}

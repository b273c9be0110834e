package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/static"
	"github.com/frontdoor-hpc/frontdoor/test/harness/sys"
)

// EnsureUnixUser creates the local Unix user name if missing, with an
// unlocked password; see sys.EnsureUnixUser.
func EnsureUnixUser(name string) error { return sys.EnsureUnixUser(name) }

// UnixIDs returns a local user's uid and gid.
func UnixIDs(name string) (uid, gid int, err error) { return sys.UnixIDs(name) }

// User is a test user: a name, groups, a password and an ed25519 key pair
// on disk that the OpenSSH client can use.
type User struct {
	Name     string
	Password string
	Groups   []string
	// KeyPath is the private key file (0600, OpenSSH format); the public
	// key is KeyPath+".pub".
	KeyPath string
	// PublicKey and Signer are the same key for Go clients.
	PublicKey ssh.PublicKey
	Signer    ssh.Signer
	// PasswordHash is Password hashed with argon2id.
	PasswordHash string
}

// NewUser writes a fresh key pair for name into dir (dir/NAME_ed25519) and
// hashes password (empty: no password login).
func NewUser(dir, name, password string, groups ...string) (*User, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	keyPath := filepath.Join(dir, name+"_ed25519")
	return newUserWithKey(keyPath, name, password, groups)
}

func newUserWithKey(keyPath, name, password string, groups []string) (*User, error) {
	u := &User{Name: name, Password: password, Groups: groups, KeyPath: keyPath}
	if _, err := os.Stat(keyPath); errors.Is(err, os.ErrNotExist) {
		if _, err := ca.GenerateKeyFile(keyPath, name+"@frontdoor-test"); err != nil {
			return nil, fmt.Errorf("harness: key for %s: %w", name, err)
		}
	}
	pem, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	if u.Signer, err = ssh.ParsePrivateKey(pem); err != nil {
		return nil, fmt.Errorf("harness: key for %s: %w", name, err)
	}
	u.PublicKey = u.Signer.PublicKey()
	if password != "" {
		if u.PasswordHash, err = static.HashPassword(password); err != nil {
			return nil, fmt.Errorf("harness: hash password: %w", err)
		}
	}
	return u, nil
}

// AuthorizedKey is the user's public key as an authorized_keys line.
func (u *User) AuthorizedKey() string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(u.PublicKey))) + " " + u.Name
}

// WriteUsersFile writes a static directory users file listing users.
func WriteUsersFile(path string, users ...*User) error {
	// The users file format (static.File), without zero-valued fields.
	type entry struct {
		Name         string   `yaml:"name"`
		Groups       []string `yaml:"groups,omitempty"`
		Keys         []string `yaml:"keys,omitempty"`
		PasswordHash string   `yaml:"password_hash,omitempty"`
	}
	var f struct {
		Users []entry `yaml:"users"`
	}
	for _, u := range users {
		f.Users = append(f.Users, entry{
			Name:         u.Name,
			Groups:       u.Groups,
			Keys:         []string{u.AuthorizedKey()},
			PasswordHash: u.PasswordHash,
		})
	}
	b, err := yaml.Marshal(&f)
	if err != nil {
		return err
	}
	// Write and rename, so the gateway's re-read never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return os.Rename(tmp, path)
}

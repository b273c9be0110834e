package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/static"
)

// usersLock serialises user creation inside this process; the file lock
// below does it across processes (test packages run in parallel).
var usersLock sync.Mutex

const usersLockFile = "/run/frontdoor-harness-users.lock"

// EnsureUnixUser creates the local user name (home directory, bash) if it is
// missing, and makes sure its password field is "*": sshd with UsePAM no
// refuses accounts whose password is locked ("!"), even for certificates.
// It is idempotent and safe to call concurrently, also from several
// processes.
func EnsureUnixUser(name string) error {
	if !static.ValidName(name) {
		return fmt.Errorf("harness: invalid user name %q", name)
	}
	usersLock.Lock()
	defer usersLock.Unlock()
	lf, err := os.OpenFile(usersLockFile, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("harness: lock %s: %w", usersLockFile, err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)

	if _, err := user.Lookup(name); err != nil {
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return fmt.Errorf("harness: look up user %s: %w", name, err)
		}
		if out, err := exec.Command("useradd", "-m", "-s", "/bin/bash", "-p", "*", name).CombinedOutput(); err != nil {
			return fmt.Errorf("harness: useradd %s: %v: %s", name, err, out)
		}
	}
	locked, err := passwordLocked(name)
	if err != nil {
		return err
	}
	if locked {
		if out, err := exec.Command("usermod", "-p", "*", name).CombinedOutput(); err != nil {
			return fmt.Errorf("harness: usermod %s: %v: %s", name, err, out)
		}
	}
	return nil
}

// passwordLocked reports whether name's shadow password starts with "!".
func passwordLocked(name string) (bool, error) {
	b, err := os.ReadFile("/etc/shadow")
	if err != nil {
		return false, fmt.Errorf("harness: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) >= 2 && f[0] == name {
			return strings.HasPrefix(f[1], "!"), nil
		}
	}
	return false, nil
}

// UnixIDs returns a local user's uid and gid.
func UnixIDs(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, nil
}

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

// Package static is the directory kind "static": users, groups, keys and
// password hashes from a YAML file. It is the embedded default, meant for
// small labs and for tests; the file is re-read when it changes.
package static

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alexedwards/argon2id"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf"
)

// File is the format of the users file.
type File struct {
	Users []User `yaml:"users"`
}

// User is one entry of the users file.
type User struct {
	Name   string   `yaml:"name"`
	Groups []string `yaml:"groups"`
	// Keys are authorized_keys lines.
	Keys []string `yaml:"keys"`
	// PasswordHash is a bcrypt ($2a$, $2b$, $2y$) or argon2id ($argon2id$)
	// hash; plain text passwords are refused at load. Empty: no password login.
	PasswordHash string `yaml:"password_hash"`
	Disabled     bool   `yaml:"disabled"`
	UID          int    `yaml:"uid"`
	GID          int    `yaml:"gid"`
}

type entry struct {
	id       directory.Identity
	hash     string
	disabled bool
}

// Directory is the static identity source.
type Directory struct {
	path string
	now  func() time.Time

	mu        sync.Mutex // mu protects the following
	users     map[string]entry
	mtime     time.Time
	size      int64
	checkedAt time.Time
}

// checkEvery bounds how often the file's mtime is looked at.
const checkEvery = time.Second

// New loads the users file.
func New(path string) (*Directory, error) {
	d := &Directory{path: path, now: time.Now}
	if err := d.reload(); err != nil {
		return nil, err
	}
	return d, nil
}

// Parse reads a users file's contents; errors are "file:line: key: problem".
func Parse(path string, data []byte) (map[string]entry, error) {
	var f File
	lines, err := yamlconf.Decode(path, data, &f)
	if err != nil {
		return nil, err
	}
	users := make(map[string]entry, len(f.Users))
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &yamlconf.Error{File: path, Line: lines.Line(key), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for i, u := range f.Users {
		key := fmt.Sprintf("users[%d]", i)
		if !names.User.Valid(u.Name) {
			bad(key+".name", "invalid user name %q (POSIX: lower-case letters, digits, '_', '-', '.')", u.Name)
			continue
		}
		if _, dup := users[u.Name]; dup {
			bad(key+".name", "duplicate user %q", u.Name)
			continue
		}
		if u.PasswordHash != "" && !isHash(u.PasswordHash) {
			bad(key+".password_hash", "must be a bcrypt or argon2id hash (make one with 'frontdoor hash-password')")
			continue
		}
		id := directory.Identity{Name: u.Name, Groups: append([]string(nil), u.Groups...), UID: u.UID, GID: u.GID, Source: "static"}
		for j, line := range u.Keys {
			k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
			if err != nil {
				bad(fmt.Sprintf("%s.keys[%d]", key, j), "not an authorized_keys line: %v", err)
				continue
			}
			id.Keys = append(id.Keys, k)
		}
		users[u.Name] = entry{id: id, hash: u.PasswordHash, disabled: u.Disabled}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return users, nil
}

func isHash(h string) bool {
	return strings.HasPrefix(h, "$argon2id$") || strings.HasPrefix(h, "$2a$") ||
		strings.HasPrefix(h, "$2b$") || strings.HasPrefix(h, "$2y$")
}

func (d *Directory) reload() error {
	st, err := os.Stat(d.path)
	if err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	data, err := os.ReadFile(d.path)
	if err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	users, err := Parse(d.path, data)
	if err != nil {
		return err
	}
	d.users, d.mtime, d.size = users, st.ModTime(), st.Size()
	return nil
}

// get returns the current entry, re-reading the file if it changed. A file
// that became invalid keeps the last good contents: a bad edit must not lock
// everybody out (`frontdoor config check` reports the error).
func (d *Directory) get(name string) (entry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now := d.now(); now.Sub(d.checkedAt) >= checkEvery {
		d.checkedAt = now
		if st, err := os.Stat(d.path); err == nil && (!st.ModTime().Equal(d.mtime) || st.Size() != d.size) {
			_ = d.reload() // keep the last good file on error
		}
	}
	e, ok := d.users[name]
	return e, ok
}

func (d *Directory) lookup(name string) (entry, error) {
	if !names.User.Valid(name) {
		return entry{}, &directory.Error{Kind: directory.ErrInvalidName, Reason: "invalid user name"}
	}
	e, ok := d.get(name)
	if !ok {
		return entry{}, &directory.Error{Kind: directory.ErrNoSuchUser, Reason: "unknown user"}
	}
	if e.disabled {
		return entry{}, &directory.Error{Kind: directory.ErrAccountDisabled, Reason: "account disabled"}
	}
	return e, nil
}

// Lookup implements directory.Directory.
func (d *Directory) Lookup(_ context.Context, name string) (directory.Identity, error) {
	e, err := d.lookup(name)
	if err != nil {
		return directory.Identity{}, err
	}
	id := e.id
	id.FetchedAt = d.now()
	return id, nil
}

// dummyHash is compared against when the user is unknown, so a password
// attempt costs about the same whether or not the user exists. Made on first
// use, not at start-up.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("frontdoor-timing-equaliser"), bcrypt.DefaultCost)
	return h
})

// VerifyPassword implements directory.Directory.
func (d *Directory) VerifyPassword(_ context.Context, name, password string) (directory.Identity, error) {
	e, err := d.lookup(name)
	if err != nil {
		_ = bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return directory.Identity{}, err
	}
	if password == "" || e.hash == "" {
		_ = bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return directory.Identity{}, &directory.Error{Kind: directory.ErrBadPassword, Reason: "bad password"}
	}
	if !checkHash(e.hash, password) {
		return directory.Identity{}, &directory.Error{Kind: directory.ErrBadPassword, Reason: "bad password"}
	}
	id := e.id
	id.FetchedAt = d.now()
	return id, nil
}

func checkHash(hash, password string) bool {
	if strings.HasPrefix(hash, "$argon2id$") {
		ok, err := argon2id.ComparePasswordAndHash(password, hash)
		return err == nil && ok
	}
	err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(password))
	return err == nil
}

// HashPassword returns an argon2id hash suitable for password_hash.
func HashPassword(password string) (string, error) {
	return argon2id.CreateHash(password, argon2id.DefaultParams)
}

// Close implements directory.Directory.
func (d *Directory) Close() error { return nil }

var _ directory.Lister = (*Directory)(nil)

// Version changes whenever the users file does.
func (d *Directory) Version(context.Context) (string, error) {
	st, err := os.Stat(d.path)
	if err != nil {
		return "", fmt.Errorf("static: %w", err)
	}
	return fmt.Sprintf("%d/%d", st.ModTime().UnixNano(), st.Size()), nil
}

// Members lists the enabled users of group (case-insensitive), or all
// enabled users for "*"; see directory.Lister. A group no user is in is
// unknown: the file has no other notion of a group.
func (d *Directory) Members(_ context.Context, group string) ([]string, error) {
	d.get("") // picks up a changed file
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	known := group == "*"
	for name, e := range d.users {
		in := group == "*"
		for _, g := range e.id.Groups {
			if strings.EqualFold(g, group) {
				in, known = true, true
			}
		}
		if in && !e.disabled {
			out = append(out, name)
		}
	}
	if !known {
		return nil, fmt.Errorf("static: group %q: %w", group, directory.ErrNoSuchGroup)
	}
	slices.Sort(out)
	return out, nil
}

package admin

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// A token file names the bearer tokens that may use the admin API over
// TCP, one per line:
//
//	# comments and blank lines are ignored
//	NAME SECRET
//	NAME SECRET read-only
//
// NAME is the identity recorded for whatever the token does (a drain's
// "by", the log, the audit trail), so give each client its own token
// ("prometheus", "ops-alice", "ci"). A line of two fields is a full admin,
// as token files have always been read; a third field says what the
// token may do: "admin" (the same as none) or "read-only" (GET the
// status, nodes, sessions, explain and metrics, and the status page; never
// drain, undrain, reload, upgrade or lock): give dashboards and scrapers
// read-only tokens. SECRET is at least 16 characters of
// RFC 6750's token alphabet (letters, digits, - . _ ~ + / and trailing =),
// e.g. `head -c 32 /dev/urandom | base64`. The file must not be readable by
// group or others: it is a list of passwords.

// Token file limits.
const (
	maxTokenFile   = 1 << 20
	minTokenSecret = 16
	maxTokenSecret = 512
)

var tokenSecret = regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`)

// Token roles: the optional third field of a token file line.
const (
	RoleAdmin    = "admin"
	RoleReadOnly = "read-only"
)

// Tokens are the bearer tokens of a token file. Only SHA-256 sums of the
// secrets are kept.
type Tokens struct {
	entries []tokenEntry
}

// Token is what a bearer token proves: a name and whether it may only
// read.
type Token struct {
	Name     string
	ReadOnly bool
}

type tokenEntry struct {
	Token
	sum [sha256.Size]byte
}

// Len is the number of tokens.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// Lookup returns the token whose secret is secret. It compares with
// every token in constant time (sums of equal length, no early exit), so
// the time taken says nothing about how close a guess was or which token
// it was close to.
func (t *Tokens) Lookup(secret string) (tok Token, ok bool) {
	if t == nil {
		return Token{}, false
	}
	sum := sha256.Sum256([]byte(secret))
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			tok, ok = e.Token, true
		}
	}
	return tok, ok
}

// ErrTokenFileMode: the token file is readable by group or others.
var ErrTokenFileMode = errors.New("token file is readable by group or others (chmod 600)")

// LoadTokenFile reads a token file, refusing one that is not a regular
// file or that group or others may read.
func LoadTokenFile(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("admin token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("admin token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("admin token file %s: not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("admin token file %s is mode %04o: %w", path, fi.Mode().Perm(), ErrTokenFileMode)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("admin token file: %w", err)
	}
	if len(b) > maxTokenFile {
		return nil, fmt.Errorf("admin token file %s: larger than %d bytes", path, maxTokenFile)
	}
	t, err := ParseTokens(path, b)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// ParseTokens parses a token file's contents; name is used in messages,
// which never contain a secret.
func ParseTokens(name string, data []byte) (*Tokens, error) {
	t := &Tokens{}
	var errs []error
	seen := map[string]int{}
	sums := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxTokenFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 && len(f) != 3 {
			errs = append(errs, fmt.Errorf("%s:%d: want NAME SECRET [admin|read-only], got %d fields", name, n, len(f)))
			continue
		}
		tn, secret := f[0], f[1]
		readOnly := false
		if len(f) == 3 {
			switch f[2] {
			case RoleAdmin:
			case RoleReadOnly:
				readOnly = true
			default:
				// The value is not echoed: it may be a secret in the wrong column.
				errs = append(errs, fmt.Errorf("%s:%d: token %s: the third field must be %s or %s", name, n, sanitize(tn), RoleAdmin, RoleReadOnly))
				continue
			}
		}
		switch {
		case !names.Token.Valid(tn):
			errs = append(errs, fmt.Errorf("%s:%d: token name %q: want %s", name, n, sanitize(tn), names.Token.Syntax))
			continue
		case len(secret) < minTokenSecret || len(secret) > maxTokenSecret:
			errs = append(errs, fmt.Errorf("%s:%d: token %s: secret must be %d to %d characters", name, n, tn, minTokenSecret, maxTokenSecret))
			continue
		case !tokenSecret.MatchString(secret):
			errs = append(errs, fmt.Errorf("%s:%d: token %s: secret has characters a bearer token may not (letters, digits, - . _ ~ + / and trailing =)", name, n, tn))
			continue
		}
		sum := sha256.Sum256([]byte(secret))
		if prev, dup := seen[tn]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: token name %s already used on line %d", name, n, tn, prev))
			continue
		}
		if prev, dup := sums[sum]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: token %s has the same secret as line %d", name, n, tn, prev))
			continue
		}
		seen[tn], sums[sum] = n, n
		t.entries = append(t.entries, tokenEntry{Token: Token{Name: tn, ReadOnly: readOnly}, sum: sum})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if len(errs) == 0 && len(t.entries) == 0 {
		errs = append(errs, fmt.Errorf("%s: no tokens (want lines of NAME SECRET [admin|read-only])", name))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// sanitize makes an untrusted string safe to log or show: printable
// ASCII only, at most 64 characters.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			b.WriteString("…")
			break
		}
		if r < 0x20 || r > 0x7e {
			b.WriteByte('?')
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

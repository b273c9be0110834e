package static

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

func newKey(t *testing.T) ssh.PublicKey {
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

func authorized(k ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

func TestLookupAndPasswords(t *testing.T) {
	// Small argon2id parameters: the test is about the logic, not the cost.
	argon, err := argon2id.CreateHash("correct horse", &argon2id.Params{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	bc, err := bcrypt.GenerateFromPassword([]byte("battery staple"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	k := newKey(t)
	path := filepath.Join(t.TempDir(), "users.yaml")
	data := "users:\n" +
		"  - {name: alice, groups: [nlp-lab], uid: 2001, keys: ['" + authorized(k) + " alice@laptop'], password_hash: '" + argon + "'}\n" +
		"  - {name: bob, password_hash: '" + string(bc) + "'}\n" +
		"  - {name: carol, disabled: true, password_hash: '" + argon + "'}\n" +
		"  - {name: dave}\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := d.Lookup(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != "alice" || id.UID != 2001 || len(id.Keys) != 1 || string(id.Keys[0].Marshal()) != string(k.Marshal()) || id.Groups[0] != "nlp-lab" {
		t.Fatalf("identity: %+v", id)
	}
	tests := []struct {
		user, pw string
		want     error
	}{
		{"alice", "correct horse", nil},
		{"alice", "correct horse ", directory.ErrBadPassword},
		{"alice", "", directory.ErrBadPassword},
		{"bob", "battery staple", nil},
		{"bob", "Battery staple", directory.ErrBadPassword},
		{"carol", "correct horse", directory.ErrAccountDisabled},
		{"dave", "anything", directory.ErrBadPassword}, // no password set
		{"eve", "anything", directory.ErrNoSuchUser},
		{"Alice", "correct horse", directory.ErrInvalidName},
		{"a*", "x", directory.ErrInvalidName},
		{"alice\x00", "correct horse", directory.ErrInvalidName},
	}
	for _, tt := range tests {
		_, err := d.VerifyPassword(ctx, tt.user, tt.pw)
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("VerifyPassword(%q, %q) = %v, want %v", tt.user, tt.pw, err, tt.want)
		}
	}
	if _, err := d.Lookup(ctx, "carol"); !errors.Is(err, directory.ErrAccountDisabled) || directory.Reason(err) != "account disabled" {
		t.Errorf("disabled lookup: %v", err)
	}
}

func TestReloadKeepsLastGoodFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(path, []byte("users: [{name: alice}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	d.now = func() time.Time { return clock }
	ctx := context.Background()
	if _, err := d.Lookup(ctx, "bob"); !errors.Is(err, directory.ErrNoSuchUser) {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("users: [{name: alice}, {name: bob}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * checkEvery)
	if _, err := d.Lookup(ctx, "bob"); err != nil {
		t.Fatalf("new user not picked up: %v", err)
	}
	if err := os.WriteFile(path, []byte("users: [{name: 'not valid'}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * checkEvery)
	if _, err := d.Lookup(ctx, "bob"); err != nil {
		t.Fatalf("a broken edit locked users out: %v", err)
	}
}

func TestParseRejects(t *testing.T) {
	for name, data := range map[string]string{
		"plain password": "users: [{name: a, password_hash: hunter2}]",
		"bad key":        "users: [{name: a, keys: ['ssh-ed25519 AAAAnotakey']}]",
		"bad name":       "users: [{name: 'root;rm'}]",
		"duplicate":      "users: [{name: a}, {name: a}]",
		"unknown field":  "users: [{name: a, passwd: x}]",
	} {
		if _, err := Parse("u.yaml", []byte(data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("users: [{name: alice, groups: [a], keys: []}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		users, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for name := range users {
			if !names.User.Valid(name) {
				t.Fatalf("accepted invalid name %q", name)
			}
		}
	})
}

func TestMembers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(p, []byte(`users:
  - {name: alice, groups: [Vision-Lab, staff]}
  - {name: bob, groups: [vision-lab], disabled: true}
  - {name: carol, groups: [staff]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	for g, want := range map[string]string{"vision-lab": "alice", "STAFF": "alice,carol", "*": "alice,carol"} {
		got, err := d.Members(context.Background(), g)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("%s: %v %v, want %s", g, got, err, want)
		}
	}
	if _, err := d.Members(context.Background(), "nope"); !errors.Is(err, directory.ErrNoSuchGroup) {
		t.Errorf("unknown group: %v", err)
	}
}

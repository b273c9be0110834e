package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf/yamlconftest"
)

func TestValidate(t *testing.T) {
	adOK := DefaultConfig()
	adOK.Kind = KindAD
	adOK.AD.URLs, adOK.AD.BaseDN, adOK.AD.BindDN = []string{"ldaps://dc1.example.edu"}, "DC=example,DC=edu", "svc@example.edu"
	adOK.AD.BindPasswordFile, adOK.AD.CAFile = "/pw", "/ca.pem"
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   string // "" when valid
	}{
		{"static with a file", func(c *Config) { c.Static.File = "users.yaml" }, ""},
		{"static without a file", func(c *Config) {}, "directory.static.file: required for directory kind static"},
		{"ad", func(c *Config) { *c = adOK }, ""},
		{"ad problems are ad's", func(c *Config) { *c = adOK; c.AD.URLs = nil }, "directory.ad.urls: at least one"},
		{"the other kind is not checked", func(c *Config) { *c = adOK; c.Static.File = "" }, ""},
		{"unknown kind", func(c *Config) { c.Kind = "nis" }, `directory.kind: unknown kind "nis" (want static or ad)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.change(&c)
			yamlconftest.Problem(t, c.Validate(), tc.want)
		})
	}
	if DefaultConfig().Kind != KindStatic {
		t.Error("the default directory is not the static one")
	}
}

func TestOpen(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(users, []byte("users:\n  - {name: alice, groups: [lab]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Static.File = users
	d, err := Open(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	id, err := d.Lookup(context.Background(), "alice")
	if err != nil || id.Name != "alice" {
		t.Fatalf("lookup through the opened directory: %+v %v", id, err)
	}
	if _, err := d.Lookup(context.Background(), "mallory"); !errors.Is(err, directory.ErrNoSuchUser) {
		t.Fatalf("unknown user: %v", err)
	}

	c.Static.File = filepath.Join(t.TempDir(), "missing.yaml")
	if d, err := Open(c, nil); err == nil || d != nil {
		t.Fatalf("missing users file: %v %v", d, err)
	}
	c.Kind = "nis"
	if d, err := Open(c, nil); err == nil || d != nil {
		t.Fatalf("unknown kind: %v %v", d, err)
	}
	// AD: Open does not contact the DC; an invalid section is refused.
	c = DefaultConfig()
	c.Kind = KindAD
	if d, err := Open(c, nil); err == nil || d != nil || !strings.Contains(err.Error(), "directory.ad.urls") {
		t.Fatalf("invalid ad section: %v %v", d, err)
	}
}

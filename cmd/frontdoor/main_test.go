package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/agent"
	"github.com/frontdoor-hpc/frontdoor/internal/assembly"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// The example configs in configs/ are documentation: they must stay valid.
// (The files they name are the admin's; TestConfigCheckLoadsFiles checks
// that config check reads them.)
func TestExampleConfigsAreValid(t *testing.T) {
	for _, name := range []string{"gateway.yaml", "gateway-ad.yaml", "gateway-hyperpod.yaml"} {
		if _, err := config.Load("../../configs/" + name); err != nil {
			t.Errorf("configs/%s: %v", name, err)
		}
	}
}

// config check loads every file the configuration names, as a start and a
// reload do, and says which key names a file that is not right.
func TestConfigCheckLoadsFiles(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../configs/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gateway.yaml")
	yml := strings.Replace(string(b), "/var/log/frontdoor/audit.jsonl", filepath.Join(dir, "audit.jsonl"), 1)
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	users, _ := os.ReadFile("../../configs/users.yaml")
	os.WriteFile(filepath.Join(dir, "users.yaml"), users, 0o600)
	os.WriteFile(filepath.Join(dir, "known_hosts"), nil, 0o600)
	for _, k := range []string{"ssh_host_ed25519_key", "user_ca"} {
		if _, err := ca.GenerateKeyFile(filepath.Join(dir, k), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := runConfigCheck(context.Background(), []string{path}); err != nil {
		t.Fatalf("config check with every file there: %v", err)
	}
	os.Remove(filepath.Join(dir, "known_hosts"))
	os.Remove(filepath.Join(dir, "user_ca"))
	_, err = assembly.Check(path)
	line := func(key string) int {
		i := strings.Index(yml, "\n  "+key+":")
		return strings.Count(yml[:i+1], "\n") + 1
	}
	for _, want := range []string{fmt.Sprintf("%s:%d: backend.known_hosts: ", path, line("known_hosts")),
		fmt.Sprintf("%s:%d: gateway.user_ca_key: ", path, line("user_ca_key"))} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config check without the file: %v; want %q", err, want)
		}
	}
}

// configs/agent.yaml is valid once its placeholder key is replaced.
func TestExampleAgentConfigIsValid(t *testing.T) {
	b, err := os.ReadFile("../../configs/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const placeholder = "REPLACE-WITH-32-BYTES-OF-BASE64-FROM-head-c32-dev-urandom-base64="
	if !strings.Contains(string(b), placeholder) {
		t.Fatal("the example agent config lost its key placeholder (never ship a real key)")
	}
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	path := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), placeholder, key, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.LoadConfig(path); err != nil {
		t.Fatalf("configs/agent.yaml: %v", err)
	}
}

func TestPrincipalFor(t *testing.T) {
	users := map[string]*user.User{
		"alice":  {Username: "alice", Uid: "2001"},
		"root":   {Username: "root", Uid: "0"},
		"daemon": {Username: "daemon", Uid: "1"},
		"svc":    {Username: "svc", Uid: "999"},
		"ubuntu": {Username: "ubuntu", Uid: "1000"},
	}
	lookup := func(n string) (*user.User, error) {
		if u, ok := users[n]; ok {
			return u, nil
		}
		return nil, user.UnknownUserError(n)
	}
	for account, want := range map[string]bool{"alice": true, "root": false, "daemon": false, "svc": false,
		"ubuntu": false, "nobody-here": false, "": false, "alice,root": false} {
		got, err := principalFor(account, 1000, []string{"ubuntu", "slurm"}, lookup)
		if (err == nil) != want || want && got != account {
			t.Errorf("principalFor(%q) = %q, %v; want accepted=%v", account, got, err, want)
		}
	}
	// Even with no floor and no deny list, uid 0 is never a principal.
	if _, err := principalFor("root", 0, nil, lookup); err == nil {
		t.Error("root accepted with min-uid 0")
	}
}

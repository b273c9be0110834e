package main

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/agent"
)

// The example configs in configs/ are documentation: they must stay valid.
func TestExampleConfigsAreValid(t *testing.T) {
	for _, name := range []string{"gateway.yaml", "gateway-ad.yaml"} {
		path, err := filepath.Abs("../../configs/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := runConfigCheck(context.Background(), []string{path}); err != nil {
			t.Errorf("configs/%s: %v", name, err)
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

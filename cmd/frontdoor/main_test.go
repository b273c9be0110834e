package main

import (
	"context"
	"path/filepath"
	"testing"
)

// The example configs in configs/ are documentation: they must stay valid.
func TestExampleConfigsAreValid(t *testing.T) {
	path, err := filepath.Abs("../../configs/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := runConfigCheck(context.Background(), []string{path}); err != nil {
		t.Fatalf("configs/gateway.yaml: %v", err)
	}
}

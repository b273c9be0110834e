package main

import (
	"context"
	"path/filepath"
	"testing"
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

// Package yamlconftest helps the table tests of configuration sections:
// each section's Validate returns "key: problem" errors, and a test case
// says which problem it expects, or none.
package yamlconftest

import (
	"strings"
	"testing"
)

// Problem fails t unless err fits want: no error when want is empty, an
// error whose text contains want otherwise (want names the key, e.g.
// "slurm.timeout: must be positive").
func Problem(t testing.TB, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected problem: %v", err)
	case want != "" && err == nil:
		t.Errorf("no problem reported, want %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("got %v\nwant %q", err, want)
	}
}

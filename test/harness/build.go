package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// binRoot holds binaries built for tests that sshd runs itself. sshd runs
// an AuthorizedPrincipalsCommand only if the binary and every directory
// above it are root-owned and not group- or world-writable, which rules
// out anything under /tmp; /var/lib is.
const binRoot = "/var/lib/frontdoor-test"

// BuildFrontdoor builds ./cmd/frontdoor of the repository at root into a
// fresh directory sshd accepts (readable by nobody, which it runs the
// command as) and returns the binary's path and a cleanup that removes it.
func BuildFrontdoor(ctx context.Context, root string) (bin string, cleanup func(), err error) {
	if err := os.MkdirAll(binRoot, 0o755); err != nil {
		return "", nil, fmt.Errorf("harness: %w", err)
	}
	dir, err := os.MkdirTemp(binRoot, "bin-")
	if err != nil {
		return "", nil, fmt.Errorf("harness: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("harness: %w", err)
	}
	bin = filepath.Join(dir, "frontdoor")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/frontdoor")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("harness: go build: %v: %s", err, out)
	}
	return bin, cleanup, nil
}

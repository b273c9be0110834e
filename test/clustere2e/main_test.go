// Package clustere2e_test tests gossiped health and load-aware routing end
// to end: real OpenSSH sshd login nodes on 127.0.1.40–49, a real
// `frontdoor agent` per node and two `frontdoor gateway` processes, all
// subprocesses of the binary TestMain builds, gossiping over encrypted
// memberlist on loopback. Clients are the real OpenSSH client for the main
// paths and Go's x/crypto/ssh for bulk logins; `echo $SSH_CONNECTION` tells
// which node a session landed on (each node has its own 127.0.1.x).
//
// Every test builds its own small cluster (world_test.go), so a test that
// kills a node, a gateway or drains something cannot disturb another. At
// most two clusters run at once, each on its own block of node addresses:
// more would only stretch every timing the tests measure on 2 cores.
//
// Missing prerequisites (root, sshd, ssh, go) fail the run loudly: a test
// that skips silently proves nothing.
package clustere2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/discovery/discoverytest"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// The shared parts, set up by TestMain.
var (
	base      string               // world-readable scratch root
	bin       string               // the frontdoor binary under test
	keys      *harness.ClusterKeys // host key and user CA shared by every gateway
	users     []*harness.User      // fresh-user pool; every world starts without affinity
	usersFile string               // static directory file listing users
)

// userPrefix keeps this package's Unix users apart from other suites'.
const userPrefix = "ce2e-u"

// poolSize is how many users a world can hand out (world.freshUser).
const poolSize = 24

var requiredPrograms = []string{harness.SSHDPath, "ssh", "ssh-keygen", "useradd", "usermod", "go"}

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	// Gateways of worlds with discovery sign their SageMaker requests
	// with the fake API's credentials, and nothing else.
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": discoverytest.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY": discoverytest.SecretAccessKey, "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"} {
		os.Setenv(k, v)
	}
	if err := harness.Prerequisites(requiredPrograms...); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: clustere2e: %v\n", err)
		return 1
	}
	var err error
	if base, err = os.MkdirTemp("", "frontdoor-clustere2e-"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	// Node-side users read their authorized keys and the CA below base.
	os.Chmod(base, 0o755)
	keep := false
	defer func() {
		if keep || os.Getenv("FRONTDOOR_E2E_KEEP") != "" {
			fmt.Fprintln(os.Stderr, "clustere2e state kept in", base)
			return
		}
		os.RemoveAll(base)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: clustere2e setup:", err)
		keep = true
		return 1
	}
	code := m.Run()
	keep = code != 0
	return code
}

func setup(ctx context.Context) error {
	// The binary under test, built fresh: bin/ may be stale or missing.
	bin = filepath.Join(base, "frontdoor")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/frontdoor")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v: %s", err, out)
	}
	var err error
	if keys, err = harness.Keys(filepath.Join(base, "keys")); err != nil {
		return err
	}
	udir := filepath.Join(base, "users")
	for i := 1; i <= poolSize; i++ {
		name := fmt.Sprintf("%s%02d", userPrefix, i)
		if err := harness.EnsureUnixUser(name); err != nil {
			return err
		}
		u, err := harness.NewUser(udir, name, "", "researchers")
		if err != nil {
			return err
		}
		users = append(users, u)
	}
	usersFile = filepath.Join(base, "users.yaml")
	return harness.WriteUsersFile(usersFile, users...)
}

package main

// The peer: sshpiper v1.6.1 (github.com/tg123/sshpiper, the best-known Go
// SSH reverse proxy), measured as path "sshpiper" in the same run. It
// relays SSH packets between two terminated connections (decrypt,
// re-encrypt) and leaves channels and windows to the client and sshd;
// frontdoor terminates channels. Neither sshpiper nor the crypto fork its
// plugin API matches is on the Go module proxy, so the bench builds it from
// the two git repositories, once, into a cache outside the repository
// (never committed):
//
//  1. clone both; check out sshpiper v1.6.1 and the fork's commit
//     ff1e56f (both verified by full hash);
//  2. add the one method sshpiper v1.6.1 calls that the fork lacks
//     (PiperConn.WriteUpstreamPacket);
//  3. point sshpiperd's go.mod at the fork's checkout;
//  4. build sshpiperd and its yaml plugin (their other modules come from
//     the module proxy).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// The sources, pinned by full commit hash.
const (
	piperVersion     = "v1.6.1"
	piperCommit      = "ac26580901731efdf4eb9f12109f7ffff395798d"
	piperCryptoRef   = "ff1e56f4b7ef0bf248a7bba9c996414504ffa09a"
	piperGitDefault  = "https://github.com/tg123/sshpiper"
	cryptoGitDefault = "https://github.com/datacosmos-br/sshpiper.crypto"
	// piperMissing is the method sshpiper v1.6.1 calls and the fork at
	// piperCryptoRef lacks.
	piperMissing = "\nfunc (p *PiperConn) WriteUpstreamPacket(packet []byte) error { return p.upstream.transport.writePacket(packet) }\n"
)

// errNoPeer says how to get the peer when it cannot be built.
var errNoPeer = errors.New("get github.com/tg123/sshpiper and github.com/datacosmos-br/sshpiper.crypto as git repositories " +
	"(clones or mirrors; the module proxy does not serve them) and pass --sshpiper-git DIR --sshpiper-crypto-git DIR, " +
	"or run without the peer: --peer=false")

// peerBinaries returns sshpiperd and its yaml plugin, building them into
// the cache first if they are not there.
func peerBinaries(ctx context.Context, o options) (sshpiperd, yaml string, err error) {
	dir := o.peerCache
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", "", err
		}
		dir = filepath.Join(c, "frontdoor-relaybench", "sshpiper-"+piperVersion+"-"+piperCryptoRef[:7])
	}
	sshpiperd, yaml = filepath.Join(dir, "sshpiperd"), filepath.Join(dir, "yaml")
	if isFile(sshpiperd) && isFile(yaml) {
		return sshpiperd, yaml, nil
	}
	if err := buildPeer(ctx, o, dir); err != nil {
		return "", "", fmt.Errorf("cannot build the sshpiper %s peer: %w; %w", piperVersion, err, errNoPeer)
	}
	return sshpiperd, yaml, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// buildPeer does the four steps above in dir/src and leaves the binaries
// in dir.
func buildPeer(ctx context.Context, o options, dir string) error {
	src := filepath.Join(dir, "src")
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	piper, crypto := filepath.Join(src, "sshpiper"), filepath.Join(src, "sshpiper.crypto")
	for _, r := range []struct{ from, into, ref, want string }{
		{o.piperGit, piper, piperVersion, piperCommit},
		{o.cryptoGit, crypto, piperCryptoRef, piperCryptoRef},
	} {
		if err := run1(ctx, src, nil, "git", "clone", "--quiet", "--no-checkout", r.from, r.into); err != nil {
			return err
		}
		if err := run1(ctx, r.into, nil, "git", "-c", "advice.detachedHead=false", "checkout", "--quiet", r.ref); err != nil {
			return err
		}
		head, err := exec.CommandContext(ctx, "git", "-C", r.into, "rev-parse", "HEAD").Output()
		if err != nil {
			return fmt.Errorf("git rev-parse in %s: %w", r.into, err)
		}
		if got := strings.TrimSpace(string(head)); got != r.want {
			return fmt.Errorf("%s at %s is commit %s, want %s", r.from, r.ref, got, r.want)
		}
	}
	f, err := os.OpenFile(filepath.Join(crypto, "ssh", "sshpiper.go"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(piperMissing)
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	env := []string{"GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off"}
	cmdDir := filepath.Join(piper, "cmd", "sshpiperd")
	if err := run1(ctx, cmdDir, env, "go", "mod", "edit", "-replace", "golang.org/x/crypto="+crypto); err != nil {
		return err
	}
	if err := run1(ctx, cmdDir, env, "go", "build", "-o", filepath.Join(dir, "sshpiperd"), "."); err != nil {
		return err
	}
	return run1(ctx, piper, env, "go", "build", "-tags", "full", "-o", filepath.Join(dir, "yaml"), "./plugin/yaml")
}

// run1 runs a command in dir; its error is one line: the command and the
// last line it printed.
func run1(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(lines[len(lines)-1]))
}

// startPeer runs sshpiperd in front of the node: the bench user, with the
// same key, mapped to the same user on the node, the node's host key
// verified. Its host key is the gateway's (same type, same cost).
func (b *bench) startPeer(ctx context.Context, undo *[]func()) (*proxyProc, error) {
	sshpiperd, yaml, err := peerBinaries(ctx, b.o)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(b.dir, "sshpiper")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, []byte(b.node.KnownHostsLine()+"\n"), 0o600); err != nil {
		return nil, err
	}
	ak := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(ak, []byte(b.user.AuthorizedKey()+"\n"), 0o600); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "piper.yaml")
	yml := fmt.Sprintf(`version: "1.0"
pipes:
- from:
    - username: %q
      authorized_keys: %q
  to:
    host: %q
    username: %q
    private_key: %q
    known_hosts: %q
`, b.user.Name, ak, b.node.Addr(), b.user.Name, b.user.KeyPath, kh)
	// The yaml plugin refuses a config others can read.
	if err := os.WriteFile(conf, []byte(yml), 0o600); err != nil {
		return nil, err
	}
	port, err := harness.FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	p := &proxyProc{addr: fmt.Sprintf("127.0.0.1:%d", port), hostKey: b.keys.HostPublicKey}
	err = b.startProxy(ctx, pathPeer, p, nil, undo, sshpiperd, "-l", "127.0.0.1", "-p", fmt.Sprint(port),
		"-i", b.keys.HostKey, "--log-level", "warn", yaml, "--config", conf)
	return p, err
}

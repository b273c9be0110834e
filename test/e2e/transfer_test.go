package e2e_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestCat64MiB: 64 MiB of random bytes up through `cat > file` and down
// through `cat file`, with matching SHA-256.
func TestCat64MiB(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 3*time.Minute)
	data := randomBytes(t, 64<<20)
	want := sum(data)
	dir := userDir(t, alice)
	remote := filepath.Join(dir, "up.bin")

	start := time.Now()
	r := run(client(alice).SSH(ctx, aliceName, "cat > "+remote+" && sha256sum "+remote), bytes.NewReader(data))
	mustExit(t, r, 0)
	if got := strings.Fields(string(r.Stdout)); len(got) == 0 || got[0] != want {
		t.Fatalf("upload: node's sha256 %q, want %s", r.Stdout, want)
	}
	t.Logf("up: 64 MiB in %s", time.Since(start))

	start = time.Now()
	h := sha256.New()
	cmd := client(alice).SSH(ctx, aliceName, "cat "+remote)
	cmd.Stdout = h
	r = run(cmd, nil)
	mustExit(t, r, 0)
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("download: sha256 %s, want %s", got, want)
	}
	t.Logf("down: 64 MiB in %s", time.Since(start))
}

// TestSCP copies a file up and down with scp, in both the SFTP-based
// default protocol and the legacy one (-O).
func TestSCP(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	local := t.TempDir()
	src := writeFile(t, local, "src.bin", randomBytes(t, 8<<20))
	want := fileSum(t, src)
	for _, proto := range []struct{ name, flag string }{{"sftp", "-s"}, {"legacy", "-O"}} {
		t.Run(proto.name, func(t *testing.T) {
			dir := userDir(t, alice)
			r := run(client(alice).SCP(ctx, aliceName, proto.flag, src, "REMOTE:"+dir+"/up.bin"), nil)
			mustExit(t, r, 0)
			if got := fileSum(t, filepath.Join(dir, "up.bin")); got != want {
				t.Fatalf("up: %s, want %s", got, want)
			}
			down := filepath.Join(local, proto.name+"-down.bin")
			r = run(client(alice).SCP(ctx, aliceName, proto.flag, "REMOTE:"+dir+"/up.bin", down), nil)
			mustExit(t, r, 0)
			if got := fileSum(t, down); got != want {
				t.Fatalf("down: %s, want %s", got, want)
			}
		})
	}
}

// TestSFTP puts and gets a file with sftp (the sftp subsystem).
func TestSFTP(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	local := t.TempDir()
	src := writeFile(t, local, "src.bin", randomBytes(t, 8<<20))
	want := fileSum(t, src)
	dir := userDir(t, alice)
	down := filepath.Join(local, "down.bin")
	batch := writeFile(t, local, "batch", []byte(fmt.Sprintf(
		"put %s %s/up.bin\nls -l %s\nget %s/up.bin %s\nrm %s/up.bin\n", src, dir, dir, dir, down, dir)))
	r := run(client(alice).SFTP(ctx, aliceName, batch), nil)
	mustExit(t, r, 0)
	if got := fileSum(t, down); got != want {
		t.Fatalf("round trip: %s, want %s", got, want)
	}
	if !strings.Contains(string(r.Stdout), "up.bin") {
		t.Errorf("ls output lacks the file: %s", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "up.bin")); !os.IsNotExist(err) {
		t.Errorf("rm did not remove the file on the node: %v", err)
	}
}

// TestRsync syncs a small tree up and back down with rsync over ssh.
func TestRsync(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	local := t.TempDir()
	src := filepath.Join(local, "tree")
	files := map[string][]byte{}
	for i := range 20 {
		rel := fmt.Sprintf("d%d/f%d.bin", i%4, i)
		files[rel] = randomBytes(t, 1000+i*5000)
		os.MkdirAll(filepath.Join(src, filepath.Dir(rel)), 0o755)
		writeFile(t, src, rel, files[rel])
	}
	dir := userDir(t, alice)
	r := run(client(alice).Rsync(ctx, aliceName, "-a", src+"/", "REMOTE:"+dir+"/tree/"), nil)
	mustExit(t, r, 0)
	// Change one file on the node side; the way down must bring it back.
	files["d0/f0.bin"] = []byte("changed on the node\n")
	if err := os.WriteFile(filepath.Join(dir, "tree", "d0/f0.bin"), files["d0/f0.bin"], 0o644); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(local, "back")
	r = run(client(alice).Rsync(ctx, aliceName, "-a", "REMOTE:"+dir+"/tree/", back+"/"), nil)
	mustExit(t, r, 0)
	for rel, data := range files {
		if got := fileSum(t, filepath.Join(back, rel)); got != sum(data) {
			t.Fatalf("%s: checksum mismatch after the round trip", rel)
		}
	}
}

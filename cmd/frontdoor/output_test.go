package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
)

// runCaptured runs the command line as main does and returns its exit
// code, stdout and stderr.
func runCaptured(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	outF, _ := os.Create(filepath.Join(dir, "out"))
	errF, _ := os.Create(filepath.Join(dir, "err"))
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	code = run(args)
	os.Stdout, os.Stderr = oldOut, oldErr
	outF.Close()
	errF.Close()
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	return code, string(o), string(e)
}

// Every admin command takes -o table|json (and the old -json); the JSON
// is the API's.
func TestAdminCommandsOutput(t *testing.T) {
	sock, _, _, _ := startAdmin(t)
	t.Setenv("FRONTDOOR_ADMIN", sock)
	for _, cmd := range [][]string{{"nodes"}, {"sessions"}, {"status"}, {"explain", "alice"}, {"drain", "login1"}, {"undrain", "login1"}} {
		t.Run(cmd[0], func(t *testing.T) {
			code, out, errOut := runCaptured(t, append(cmd, "-o", "json")...)
			if code != 0 || errOut != "" || !json.Valid([]byte(out)) {
				t.Fatalf("-o json: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			code, table, errOut := runCaptured(t, append(cmd, "-o", "table")...)
			if code != 0 || errOut != "" || table == "" || json.Valid([]byte(table)) {
				t.Fatalf("-o table: exit %d, stdout %q, stderr %q", code, table, errOut)
			}
			if code, def, _ := runCaptured(t, cmd...); code != 0 || def != table {
				t.Fatalf("the default is not the table: %q", def)
			}
		})
	}
	// The deprecated -json is -o json.
	code, out, _ := runCaptured(t, "nodes", "-json")
	var ns []admin.NodeInfo
	if code != 0 || json.Unmarshal([]byte(out), &ns) != nil || len(ns) != 1 || ns[0].Name != "login1" {
		t.Fatalf("nodes -json: %d %q", code, out)
	}
	code, out, _ = runCaptured(t, "status")
	for _, want := range []string{"gateway gw1", "login1", "kernel update", "auth:password:fail", "last reload: FAILED", "gateway.yaml:3: bad"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
}

// Every failure is one line on stderr and a non-zero exit: 2 for a
// mistake in the command line, 1 for everything else.
func TestAdminCommandFailures(t *testing.T) {
	sock, url, token, src := startAdmin(t)
	t.Setenv("FRONTDOOR_ADMIN", "")
	t.Setenv("FRONTDOOR_ADMIN_TOKEN", "")
	missing := filepath.Join(t.TempDir(), "gw", "admin.sock")
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"no gateway at the socket", nil, []string{"nodes", "--admin", missing}, 1, "does not exist: is the gateway running here"},
		{"no gateway at the socket (env)", map[string]string{"FRONTDOOR_ADMIN": missing}, []string{"status"}, 1, "does not exist"},
		{"nobody at the address", nil, []string{"status", "--admin", "http://127.0.0.1:1"}, 1, "connection refused"},
		{"no token", nil, []string{"nodes", "--admin", url}, 1, "401 Unauthorized: no credentials (an http(s) admin URL needs credentials"},
		{"wrong token", map[string]string{"FRONTDOOR_ADMIN_TOKEN": "wrong-wrong-wrong-wrong"}, []string{"sessions", "--admin", url}, 1, "401 Unauthorized: unknown bearer token"},
		{"read-only token drains", map[string]string{"FRONTDOOR_ADMIN_TOKEN": roToken}, []string{"drain", "--admin", url, "login1"}, 1, "403 Forbidden: token:grafana is read-only"},
		{"HTTP error with a two-line body", map[string]string{"FRONTDOOR_ADMIN_TOKEN": token}, []string{"explain", "--admin", url, "nobody"}, 1, "400 Bad Request: user nobody: no such user; second line"},
		{"bad -o", nil, []string{"nodes", "--admin", sock, "-o", "yaml"}, 2, `-o "yaml": want table or json; usage: frontdoor nodes`},
		{"bad -o for status", nil, []string{"status", "-o", "csv"}, 2, "want table or json"},
		{"unknown flag", nil, []string{"sessions", "--jsn"}, 2, "flag provided but not defined: -jsn; usage: frontdoor sessions"},
		{"missing argument", nil, []string{"drain", "--admin", sock}, 2, "usage: frontdoor drain"},
		{"extra argument", nil, []string{"nodes", "--admin", sock, "login1"}, 2, "frontdoor nodes"},
		{"bad URL", nil, []string{"nodes", "--admin", "ftp://x"}, 1, "want a socket path or an http(s)://host:port URL"},
		{"bad -o for discover", nil, []string{"discover", "-o", "yaml"}, 2, "want table or json"},
		{"bad -o for usage", nil, []string{"usage", "-o", "xml"}, 2, "want table or csv or json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, out, errOut := runCaptured(t, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errOut, tt.code, tt.want)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "frontdoor "+tt.args[0]+": ") {
				t.Errorf("stderr is not one line starting with the command: %q", errOut)
			}
			if out != "" {
				t.Errorf("a failure printed to stdout: %q", out)
			}
		})
	}
	if src.last() != "" {
		t.Fatalf("a refused command drained: %q", src.last())
	}
}

package admin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	// Two fields (every file written before roles existed) is a full
	// admin; a third field says the role.
	good := "# ops\n\nops   ops-secret-0123456789abcdef\n  prometheus\tcHJvbWV0aGV1cy1zZWNyZXQ=  read-only\nci ci-secret-0123456789abcdef admin\n"
	tok, err := ParseTokens("f", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	for secret, want := range map[string]Token{"ops-secret-0123456789abcdef": {Name: "ops"},
		"cHJvbWV0aGV1cy1zZWNyZXQ=": {Name: "prometheus", ReadOnly: true}, "ci-secret-0123456789abcdef": {Name: "ci"},
		"ops-secret-0123456789abcdeg": {}, "": {}, "ops": {}, "read-only": {}} {
		if got, ok := tok.Lookup(secret); got != want || ok != (want.Name != "") {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", secret, got, ok, want)
		}
	}
	for _, tt := range []struct{ name, data, want string }{
		{"empty", "# nothing\n", "no tokens"},
		{"one field", "ops-secret-0123456789abcdef\n", "f:1: want NAME SECRET"},
		{"four fields", "ops ops-secret-0123456789abcdef read-only x\n", "f:1: want NAME SECRET"},
		{"unknown role", "ops ops-secret-0123456789abcdef readonly\n", "f:1: token ops: the third field must be admin or read-only"},
		{"role before secret", "ops read-only ops-secret-0123456789abcdef\n", "f:1: token ops: the third field must be"},
		{"short secret", "ops short\n", "f:1: token ops: secret must be"},
		{"bad secret", "ops ops-secret-0123456789abcdef\"\n", "not (letters"},
		{"bad name", "op:s ops-secret-0123456789abcdef\n", "token name \"op:s\""},
		{"duplicate name", "ops ops-secret-0123456789abcdef\nops ops-secret-0123456789abcdeg\n", "f:2: token name ops already used on line 1"},
		{"duplicate secret", "ops ops-secret-0123456789abcdef\nci ops-secret-0123456789abcdef\n", "f:2: token ci has the same secret as line 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTokens("f", []byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "0123456789abcde") {
				t.Fatalf("error shows a secret: %v", err)
			}
		})
	}
}

func TestLoadTokenFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("ops ops-secret-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := LoadTokenFile(path); err != nil || tok.Len() != 1 {
		t.Fatalf("0600 file: %v", err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadTokenFile(path); !errors.Is(err, ErrTokenFileMode) {
			t.Errorf("mode %04o: got %v, want ErrTokenFileMode", mode, err)
		}
	}
	if _, err := LoadTokenFile(filepath.Dir(path)); err == nil {
		t.Error("a directory was accepted as a token file")
	}
}

func FuzzParseTokens(f *testing.F) {
	f.Add([]byte("ops ops-secret-0123456789abcdef\n"))
	f.Add([]byte("# c\n\na b\nops ops-secret-0123456789abcdef\nops ops-secret-0123456789abcdef\n"))
	f.Add([]byte("x\x00 \xff\xfe-secret-0123456789abcdef==\r\n"))
	f.Add([]byte("grafana grafana-secret-0123456789 read-only\nops ops-secret-0123456789abcdef admin\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := ParseTokens("fuzz", data)
		if err != nil {
			return
		}
		if tok.Len() == 0 {
			t.Fatal("accepted a file without tokens")
		}
		// Every accepted line's secret finds its own name and role; only
		// a line that says read-only is.
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if (len(f) == 2 || len(f) == 3) && !strings.HasPrefix(strings.TrimSpace(line), "#") {
				want := Token{Name: f[0], ReadOnly: len(f) == 3 && f[2] == RoleReadOnly}
				if got, ok := tok.Lookup(f[1]); !ok || got != want {
					t.Fatalf("Lookup(%q) = %+v, %v; want %+v", f[1], got, ok, want)
				}
			}
		}
	})
}

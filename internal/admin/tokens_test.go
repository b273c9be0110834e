package admin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	good := "# ops\n\nops   ops-secret-0123456789abcdef\n  prometheus\tcHJvbWV0aGV1cy1zZWNyZXQ=  \n"
	tok, err := ParseTokens("f", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	for secret, want := range map[string]string{"ops-secret-0123456789abcdef": "ops", "cHJvbWV0aGV1cy1zZWNyZXQ=": "prometheus",
		"ops-secret-0123456789abcdeg": "", "": "", "ops": ""} {
		if got, ok := tok.Lookup(secret); got != want || ok != (want != "") {
			t.Errorf("Lookup(%q) = %q, %v; want %q", secret, got, ok, want)
		}
	}
	for _, tt := range []struct{ name, data, want string }{
		{"empty", "# nothing\n", "no tokens"},
		{"one field", "ops-secret-0123456789abcdef\n", "f:1: want NAME SECRET"},
		{"three fields", "a b c\n", "f:1: want NAME SECRET"},
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
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := ParseTokens("fuzz", data)
		if err != nil {
			return
		}
		if tok.Len() == 0 {
			t.Fatal("accepted a file without tokens")
		}
		// Every accepted line's secret finds its own name.
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && !strings.HasPrefix(strings.TrimSpace(line), "#") {
				if name, ok := tok.Lookup(f[1]); !ok || name != f[0] {
					t.Fatalf("Lookup(%q) = %q, %v; want %q", f[1], name, ok, f[0])
				}
			}
		}
	})
}

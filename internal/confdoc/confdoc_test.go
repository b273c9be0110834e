package confdoc

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/agent"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

const modDir = "../.."

// The committed reference is what the code generates now.
func TestReferenceIsCurrent(t *testing.T) {
	want, err := Reference(modDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(modDir, Path))
	if err != nil {
		t.Fatalf("%v: run `%s`", err, Command)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale (a configuration type, doc comment or default changed): run `%s` and commit the result", Path, Command)
	}
}

// Every key an admin can write has a row, with a description.
func TestEveryKeyDocumented(t *testing.T) {
	ref, err := Reference(modDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range []any{config.DefaultConfig(), agent.DefaultConfig()} {
		for _, k := range keyPaths(reflect.TypeOf(root), "") {
			row := "| `" + k + "` | "
			i := bytes.Index(ref, []byte(row))
			if i < 0 {
				t.Errorf("no row for %s", k)
				continue
			}
			line := string(ref[i:])
			line = line[:strings.IndexByte(line, '\n')]
			if cells := strings.Split(line, " | "); len(cells) < 4 || len(strings.TrimSpace(cells[3])) < 10 {
				t.Errorf("%s: no description: %s", k, line)
			}
		}
	}
	for _, k := range []string{"gateway.auth_timeout", "cluster.probe_interval", "policy.rules[].pools",
		"usage.budgets.<name>.warn_at", "audit.s3.bucket", "slurm.parent_account", "directory.ad.urls", "probe_addr"} {
		if !bytes.Contains(ref, []byte("| `"+k+"` |")) {
			t.Errorf("no row for %s", k)
		}
	}
}

// keyPaths lists every key path of type t the way the reference writes
// them; the agent's cluster section, linked to the gateway's, is left out.
func keyPaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := yamlName(f)
		if !ok {
			continue
		}
		path := prefix + name
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if prefix == "" && t == reflect.TypeFor[agent.Config]() && name == "cluster" {
			continue
		}
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			if prefix != "" {
				out = append(out, path)
			}
			out = append(out, keyPaths(ft, path+".")...)
		case ft.Kind() == reflect.Slice && structOf(ft) != nil:
			out = append(out, path)
			out = append(out, keyPaths(ft.Elem(), path+"[].")...)
		case ft.Kind() == reflect.Map && structOf(ft) != nil:
			out = append(out, path)
			out = append(out, keyPaths(ft.Elem(), path+".<name>.")...)
		default:
			out = append(out, path)
		}
	}
	return out
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 500 * time.Millisecond: "500ms", 30 * time.Second: "30s", time.Minute: "1m", 90 * time.Second: "1m30s",
		time.Hour: "1h", 168 * time.Hour: "168h", 90 * time.Minute: "1h30m", time.Hour + time.Second: "1h0m1s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(want); err != nil || back != d {
			t.Errorf("%q does not read back as %v", want, d)
		}
	}
}

func TestDefaultOf(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{30 * time.Second, "`30s`"}, {"", "`\"\"`"}, {":22", "`:22`"}, {"a: b", "`'a: b'`"}, {true, "`true`"},
		{3, "`3`"}, {0.25, "`0.25`"}, {10.0, "`10`"}, {[]string(nil), "`[]`"}, {[]string{"a", "b"}, "`[a, b]`"},
		{map[string]int(nil), "`{}`"}, {struct{}{}, "—"}, {(*struct{})(nil), "—"},
	} {
		if got := defaultOf(reflect.ValueOf(tc.v)); got != tc.want {
			t.Errorf("defaultOf(%#v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	keys := map[string]string{"LoginGraceTime": "login_grace_time", "AuthTimeout": "auth_timeout", "QOS": "qos", "Users": "users"}
	for _, tc := range []struct{ doc, goName, want string }{
		{"AuthTimeout bounds it.\n0: min(30s,\nLoginGraceTime).", "AuthTimeout", "`auth_timeout` bounds it. 0: min(30s, `login_grace_time`)."},
		{"AuthTimeoutX is not the field.", "AuthTimeout", "AuthTimeoutX is not the field."},
		{"Users are matched; see AuthTimeout, not `AuthTimeout`.", "Users", "`users` are matched; see `auth_timeout`, not `AuthTimeout`."},
		{"LoginGraceTime is long; the rule's QOS is a concept.", "LoginGraceTime", "`login_grace_time` is long; the rule's QOS is a concept."},
	} {
		if got := describe(tc.doc, tc.goName, keys); got != tc.want {
			t.Errorf("describe(%q) = %q, want %q", tc.doc, got, tc.want)
		}
	}
	if got := cell("a | b <name> `c|<d>`"); got != "a \\| b &lt;name> `c\\|<d>`" {
		t.Errorf("cell: %q", got)
	}
}

// A section's type doc after its first paragraph keeps its list.
func TestLaterParagraphs(t *testing.T) {
	doc := "Config is a thing.\n\nRotate SecretKeys:\n  1. add one,\n     everywhere;\n  2. move it first.\n\nLast words.\n"
	want := "Rotate `secret_keys`:\n\n1. add one, everywhere;\n2. move it first.\n\nLast words."
	if got := laterParagraphs(doc, map[string]string{"SecretKeys": "secret_keys"}); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

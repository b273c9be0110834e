package yamlconf

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Addr    string        `yaml:"addr"`
	Timeout time.Duration `yaml:"timeout"`
}

type testConfig struct {
	Gateway struct {
		Name       string   `yaml:"name"`
		Listen     string   `yaml:"listen"`
		HostKeys   []string `yaml:"host_keys"`
		MaxAuth    int      `yaml:"max_auth_tries"`
		Preconnect *bool    `yaml:"preconnect"`
	} `yaml:"gateway"`
	Backend struct {
		KnownHosts []string `yaml:"known_hosts"`
	} `yaml:"backend"`
	Nodes  []inner           `yaml:"nodes"`
	Labels map[string]string `yaml:"labels"`
	Skip   func()            `yaml:"-"`
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // each must appear, in this form
	}{
		{"typo with suggestion", "gateway:\n  nmae: gw1\n",
			[]string{`f.yaml:2: gateway.nmae: unknown key (did you mean "name"?)`}},
		{"wrong section", "gateway:\n  known_hosts: [x]\n",
			[]string{`f.yaml:2: gateway.known_hosts: unknown key (it belongs in "backend.known_hosts")`}},
		{"unknown top level", "gatway:\n  name: x\n",
			[]string{`f.yaml:1: gatway: unknown key (did you mean "gateway"?)`}},
		{"no suggestion", "gateway:\n  zzzzzz: 1\n", []string{`f.yaml:2: gateway.zzzzzz: unknown key`}},
		{"in a list", "nodes:\n  - addr: a\n  - adr: b\n",
			[]string{`f.yaml:3: nodes[1].adr: unknown key (did you mean "addr"?)`}},
		{"every unknown key", "gateway:\n  nmae: a\n  lisen: b\n",
			[]string{"gateway.nmae", "gateway.lisen"}},
		{"bad duration", "nodes:\n  - timeout: soon\n",
			[]string{`f.yaml:2: nodes[0].timeout: want a duration such as 30s or 5m, got string "soon"`}},
		{"bad int", "gateway:\n  max_auth_tries: many\n",
			[]string{`f.yaml:2: gateway.max_auth_tries: want a whole number, got string "many"`}},
		{"list wanted", "gateway:\n  host_keys: just-one\n",
			[]string{`f.yaml:2: gateway.host_keys: want a list`}},
		{"mapping wanted", "gateway: [1, 2]\n", []string{`f.yaml:1: gateway: want a mapping`}},
		{"syntax", "gateway: [\n", []string{"f.yaml:", "invalid YAML"}},
		{"empty", "", []string{"f.yaml: empty configuration"}},
		{"only a comment", "# nothing\n", []string{"f.yaml: empty configuration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c testConfig
			_, err := Decode("f.yaml", []byte(tt.yaml), &c)
			if err == nil {
				t.Fatalf("no error for %q", tt.yaml)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			var ye *Error
			if !errors.As(err, &ye) {
				t.Errorf("error %T is not an *Error", err)
			}
		})
	}
}

func TestDecodeGoodAndLines(t *testing.T) {
	var c testConfig
	c.Gateway.Listen = ":22" // a default the file does not override
	lines, err := Decode("f.yaml", []byte("gateway:\n  name: gw1\nnodes:\n  - addr: a\n    timeout: 3s\nlabels:\n  anything: goes\n"), &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Gateway.Name != "gw1" || c.Gateway.Listen != ":22" || c.Nodes[0].Timeout != 3*time.Second || c.Labels["anything"] != "goes" {
		t.Errorf("decoded %+v", c)
	}
	for path, want := range map[string]int{"gateway.name": 2, "nodes[0].timeout": 5, "nodes[0]": 4, "nodes[0].nothing": 4, "absent": 0} {
		if got := lines.Line(path); got != want {
			t.Errorf("Line(%q) = %d, want %d", path, got, want)
		}
	}
}

func TestSuggest(t *testing.T) {
	var c testConfig
	_, err := Decode("f.yaml", []byte("gateway:\n  max_auth_tries: 3\n  maxauthtries: 2\n"), &c)
	if err == nil || !strings.Contains(err.Error(), `did you mean "max_auth_tries"`) {
		t.Errorf("underscores should not count as a typo: %v", err)
	}
}

// FuzzDecode: no input panics, and every error is in the promised form.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("gateway:\n  nmae: gw1\n"))
	f.Add([]byte("nodes:\n  - timeout: soon\n  - &a {addr: x}\n  - *a\n"))
	f.Add([]byte("gateway: {<<: {name: x}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c testConfig
		_, err := Decode("f.yaml", data, &c)
		if err != nil && !strings.HasPrefix(err.Error(), "f.yaml") {
			t.Fatalf("error not located in the file: %q", err)
		}
	})
}

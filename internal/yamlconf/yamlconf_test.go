package yamlconf

import (
	"errors"
	"fmt"
	"reflect"
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
		{"alias of itself", "nodes: &o [~, *o]\n", []string{`f.yaml:1: anchor "o" contains an alias of itself`}},
		{"billion laughs", laughs(12), []string{"f.yaml:", "aliases expand to too large a document"}},
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

// laughs is a document whose aliases expand to 10^levels nodes.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
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

// section is an optional section with defaults of its own.
type section struct {
	Port    int           `yaml:"port"`
	Every   time.Duration `yaml:"every"`
	Peers   []string      `yaml:"peers"`
	Derived string        `yaml:"derived"`
}

func (s *section) SetDefaults() { *s = section{Port: 7946, Every: time.Second, Peers: []string{"a"}} }
func (s *section) Derive() {
	if s.Derived == "" {
		s.Derived = fmt.Sprintf("port %d", s.Port)
	}
}

// elem is a list/map element whose zero value is not its default.
type elem struct {
	Name string   `yaml:"name"`
	Pool string   `yaml:"pool"`
	Warn float64  `yaml:"warn"`
	Sub  *section `yaml:"sub"`
}

func (e *elem) SetDefaults() { *e = elem{Pool: "default", Warn: 0.8} }

type withSections struct {
	Top      string          `yaml:"top"`
	List     []string        `yaml:"list"`
	Section  *section        `yaml:"section"`
	Other    *section        `yaml:"other"`
	Elems    []elem          `yaml:"elems"`
	PtrElems []*elem         `yaml:"ptr_elems"`
	ByName   map[string]elem `yaml:"by_name"`
	Plain    []inner         `yaml:"plain"`
	Nested   struct {
		Deep *section `yaml:"deep"`
	} `yaml:"nested"`
	derived int
}

func (w *withSections) Derive() {
	// Outer values derive after inner ones: the section's is already set.
	if w.Section != nil && w.Section.Derived != "" {
		w.derived++
	}
}

func decodeSections(t *testing.T, y string) withSections {
	t.Helper()
	w := withSections{Top: "dflt", List: []string{"x", "y"}}
	if _, err := Decode("f.yaml", []byte(y), &w); err != nil {
		t.Fatalf("%q: %v", y, err)
	}
	return w
}

func TestOptionalSections(t *testing.T) {
	def := section{Port: 7946, Every: time.Second, Peers: []string{"a"}, Derived: "port 7946"}
	for _, tc := range []struct {
		name, yaml string
		want       *section
	}{
		{"absent", "top: t\n", nil},
		{"empty mapping", "section: {}\n", &def},
		{"no value", "section:\n", &def},
		{"explicit null", "section: ~\n", &def},
		{"a key over the defaults", "section:\n  port: 1\n", &section{Port: 1, Every: time.Second, Peers: []string{"a"}, Derived: "port 1"}},
		{"a list replaces the default list", "section: {peers: [b, c]}\n", &section{Port: 7946, Every: time.Second, Peers: []string{"b", "c"}, Derived: "port 7946"}},
		{"a key without a value keeps its default", "section:\n  peers:\n  every:\n", &def},
		{"derived left alone when written", "section: {derived: mine}\n", &section{Port: 7946, Every: time.Second, Peers: []string{"a"}, Derived: "mine"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := decodeSections(t, tc.yaml)
			if !reflect.DeepEqual(w.Section, tc.want) {
				t.Errorf("section = %+v, want %+v", w.Section, tc.want)
			}
			if w.Other != nil {
				t.Errorf("a section the file does not have: %+v", w.Other)
			}
			if (w.Section != nil) != (w.derived == 1) {
				t.Errorf("outer Derive ran %d times or before the inner one", w.derived)
			}
		})
	}
	w := decodeSections(t, "other: &o {port: 3}\nsection: *o\nnested: {deep: {}}\n")
	if w.Section == nil || w.Section.Port != 3 || w.Section.Every != time.Second || w.Other.Port != 3 {
		t.Errorf("aliased section: %+v %+v", w.Section, w.Other)
	}
	if !reflect.DeepEqual(w.Nested.Deep, &def) {
		t.Errorf("nested section: %+v", w.Nested.Deep)
	}
	if w = decodeSections(t, "list:\ntop:\n"); !reflect.DeepEqual(w.List, []string{"x", "y"}) || w.Top != "dflt" {
		t.Errorf("keys without a value did not keep their defaults: %+v", w)
	}
	if w = decodeSections(t, "list: []\n"); w.List == nil || len(w.List) != 0 {
		t.Errorf("an explicit empty list is empty: %+v", w.List)
	}
}

func TestElementDefaults(t *testing.T) {
	w := decodeSections(t, `
elems:
  - {name: a}
  - {name: b, pool: gpu, warn: 0.5}
  - name: c
    sub: {port: 9}
ptr_elems: [{name: p}, ~]
by_name:
  x: {}
  y: {warn: 0.9}
plain: [{addr: q}]
`)
	want := []elem{{Name: "a", Pool: "default", Warn: 0.8}, {Name: "b", Pool: "gpu", Warn: 0.5},
		{Name: "c", Pool: "default", Warn: 0.8, Sub: &section{Port: 9, Every: time.Second, Peers: []string{"a"}, Derived: "port 9"}}}
	if !reflect.DeepEqual(w.Elems, want) {
		t.Errorf("elems = %+v", w.Elems)
	}
	if len(w.PtrElems) != 2 || w.PtrElems[0].Pool != "default" || w.PtrElems[1] != nil {
		t.Errorf("ptr_elems = %+v", w.PtrElems)
	}
	if w.ByName["x"] != (elem{Pool: "default", Warn: 0.8}) || w.ByName["y"].Warn != 0.9 || w.ByName["y"].Pool != "default" {
		t.Errorf("by_name = %+v", w.ByName)
	}
	if w.Plain[0] != (inner{Addr: "q"}) {
		t.Errorf("plain = %+v", w.Plain)
	}
}

func TestSectionErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"section:\n  prot: 1\n", `f.yaml:2: section.prot: unknown key (did you mean "port"?)`},
		{"section:\n  every: soon\n", `f.yaml:2: section.every: want a duration such as 30s or 5m, got string "soon"`},
		{"section: 5\n", `f.yaml:1: section: want a mapping`},
		{"elems:\n  - {name: a, pool: [x]}\n", `f.yaml:2: elems[0].pool`},
		{"by_name:\n  x: {wran: 1}\n", `f.yaml:2: by_name.x.wran: unknown key (did you mean "warn"?)`},
	} {
		w := withSections{}
		_, err := Decode("f.yaml", []byte(tc.yaml), &w)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %s", tc.yaml, err, tc.want)
		}
	}
}

// FuzzDecodeSections: optional sections, element defaults and derived
// values never panic, whatever the file.
func FuzzDecodeSections(f *testing.F) {
	f.Add([]byte("section:\nelems: [{name: a}]\nby_name: {x: {}}\n"))
	f.Add([]byte("other: &o {port: 3}\nsection: *o\nptr_elems: [~, *o]\n"))
	f.Add([]byte("section: {<<: {port: 1}}\nelems: [{<<: [{pool: x}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var w withSections
		if _, err := Decode("f.yaml", data, &w); err != nil && !strings.HasPrefix(err.Error(), "f.yaml") {
			t.Fatalf("error not located in the file: %q", err)
		}
	})
}

func TestLocate(t *testing.T) {
	lines, err := Decode("f.yaml", []byte("gateway:\n  name: gw1\n  listen: x\nnodes:\n  - addr: a\n"), &testConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if Locate("f.yaml", lines, nil) != nil {
		t.Error("no problem, yet an error")
	}
	inner := errors.Join(errors.New("nodes[0].addr: not host:port"), errors.New("nodes[0].pool: bad"))
	got := Locate("f.yaml", lines, errors.Join(
		errors.New("gateway.listen: not host:port"),
		inner, // nested joins are flattened
		errors.New("gateway.name/listen: clash"),
		errors.New("backend.known_hosts: required"), // not written: the file, no line
		errors.New("something went wrong: badly"),   // not a key
		&Error{File: "other.yaml", Line: 9, Msg: "kept as it is"},
	))
	var all []string
	for _, e := range got.(interface{ Unwrap() []error }).Unwrap() {
		var ye *Error
		if !errors.As(e, &ye) {
			t.Errorf("%T is not an *Error", e)
		}
		all = append(all, e.Error())
	}
	want := []string{
		"f.yaml:3: gateway.listen: not host:port",
		"f.yaml:5: nodes[0].addr: not host:port",
		"f.yaml:5: nodes[0].pool: bad",
		"f.yaml:2: gateway.name/listen: clash",
		"f.yaml: backend.known_hosts: required",
		"f.yaml: something went wrong: badly",
		"other.yaml:9: kept as it is",
	}
	if !reflect.DeepEqual(all, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(all, "\n"), strings.Join(want, "\n"))
	}
}

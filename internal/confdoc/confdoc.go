// Package confdoc writes the configuration reference, docs/configuration.md,
// from the configuration types themselves: every key an admin can write,
// with its full path (gateway.auth_timeout, policy.rules[].pools), its
// type, its default (from the DefaultConfig() values, written the way YAML
// takes it: 30s, not 30000000000) and what it does (the field's doc
// comment, read from the source with go/ast). So the reference cannot
// drift from the code: change a field or its comment and `make docs`
// rewrites the page; a test fails while the page is stale.
//
// How a comment becomes a description: Go names of the struct's fields
// become their YAML keys, in code font ("LoginGraceTime" → `login_grace_time`)
// — the name a comment starts with, and any other multi-word field name it
// mentions; the lines are joined into one table cell.
package confdoc

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf"
)

// File is one configuration file to document.
type File struct {
	// Title heads the file's part of the page.
	Title string
	// Intro is Markdown shown under the title.
	Intro string
	// Defaults is the file's root value with every default filled in
	// (its DefaultConfig()).
	Defaults any
	// TopLevel is the heading of the keys that are not in a section (a
	// file whose root has plain keys, like the agent's).
	TopLevel string
}

// Docs reads doc comments from the module's source.
type Docs struct {
	modDir, modPath string
	fset            *token.FileSet
	pkgs            map[string]map[string]*ast.TypeSpec // import path → type name → spec
	// rendered maps the type of each section written so far to its
	// path: a second file holding the same section (the agent's
	// cluster) links to it instead of repeating it.
	rendered map[reflect.Type]string
}

// NewDocs reads comments from the module rooted at modDir (the directory
// of go.mod).
func NewDocs(modDir string) (*Docs, error) {
	b, err := os.ReadFile(filepath.Join(modDir, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("confdoc: %w", err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(b)
	if m == nil {
		return nil, fmt.Errorf("confdoc: %s/go.mod names no module", modDir)
	}
	return &Docs{modDir: modDir, modPath: string(m[1]), fset: token.NewFileSet(), pkgs: map[string]map[string]*ast.TypeSpec{},
		rendered: map[reflect.Type]string{}}, nil
}

// typeSpec finds the declaration of t in the module's source.
func (d *Docs) typeSpec(t reflect.Type) (*ast.TypeSpec, error) {
	pkg := t.PkgPath()
	specs, ok := d.pkgs[pkg]
	if !ok {
		rel, inModule := strings.CutPrefix(pkg, d.modPath)
		if !inModule {
			return nil, fmt.Errorf("confdoc: %s is outside the module", t)
		}
		dir := filepath.Join(d.modDir, filepath.FromSlash(strings.TrimPrefix(rel, "/")))
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("confdoc: %w", err)
		}
		specs = map[string]*ast.TypeSpec{}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(d.fset, filepath.Join(dir, name), nil, parser.ParseComments)
			if err != nil {
				return nil, fmt.Errorf("confdoc: %w", err)
			}
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE {
					continue
				}
				for _, s := range g.Specs {
					ts := s.(*ast.TypeSpec)
					if ts.Doc == nil && len(g.Specs) == 1 {
						ts.Doc = g.Doc
					}
					specs[ts.Name.Name] = ts
				}
			}
		}
		d.pkgs[pkg] = specs
	}
	ts, ok := specs[t.Name()]
	if !ok {
		return nil, fmt.Errorf("confdoc: no declaration of %s in %s", t.Name(), pkg)
	}
	return ts, nil
}

// fields is what the reference needs of a struct type's fields, by Go
// name: the doc comment and the YAML key.
type fields struct {
	docs, keys map[string]string
}

// fieldsOf reads the fields of struct type t.
func (d *Docs) fieldsOf(t reflect.Type) (fields, error) {
	ts, err := d.typeSpec(t)
	if err != nil {
		return fields{}, err
	}
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		return fields{}, fmt.Errorf("confdoc: %s is not a struct", t)
	}
	fs := fields{docs: map[string]string{}, keys: map[string]string{}}
	for _, f := range st.Fields.List {
		text := ""
		if f.Doc != nil {
			text = f.Doc.Text()
		} else if f.Comment != nil {
			text = f.Comment.Text()
		}
		for _, n := range f.Names {
			fs.docs[n.Name] = text
		}
	}
	for i := range t.NumField() {
		if name, ok := yamlName(t.Field(i)); ok {
			fs.keys[t.Field(i).Name] = name
		}
	}
	return fs, nil
}

// describe is the Markdown description of the field goName.
func (fs fields) describe(goName string) string { return describe(fs.docs[goName], goName, fs.keys) }

// typeDoc returns the doc comment of type t.
func (d *Docs) typeDoc(t reflect.Type) (string, error) {
	ts, err := d.typeSpec(t)
	if err != nil || ts.Doc == nil {
		return "", err
	}
	return ts.Doc.Text(), nil
}

// key is one row of a table.
type key struct {
	path, typ, def, doc string
}

// section is one heading and its table.
type section struct {
	path  string // "gateway", "directory"; "" for top-level keys
	intro string // Markdown
	keys  []key
}

// Render writes the reference for files.
func (d *Docs) Render(header string, files []File) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	for _, f := range files {
		secs, err := d.sections(reflect.ValueOf(f.Defaults))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n", f.Title, strings.TrimSpace(f.Intro))
		for _, s := range secs {
			title := "`" + s.path + "`"
			if s.path == "" {
				title = f.TopLevel
			}
			fmt.Fprintf(&b, "\n### %s\n", title)
			if s.intro != "" {
				fmt.Fprintf(&b, "\n%s\n", s.intro)
			}
			if len(s.keys) == 0 {
				continue
			}
			b.WriteString("\n| Key | Type | Default | Description |\n|---|---|---|---|\n")
			for _, k := range s.keys {
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.path, k.typ, k.def, cell(k.doc))
			}
		}
	}
	return b.Bytes(), nil
}

// sections splits the root into one section per top-level mapping or
// list of mappings; plain top-level keys go to a first section of their
// own.
func (d *Docs) sections(root reflect.Value) ([]section, error) {
	t := root.Type()
	fs, err := d.fieldsOf(t)
	if err != nil {
		return nil, err
	}
	top := section{}
	var out []section
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := yamlName(f)
		if !ok {
			continue
		}
		if fs.docs[f.Name] == "" {
			return nil, fmt.Errorf("confdoc: %s.%s has no doc comment", t, f.Name)
		}
		st := structOf(f.Type)
		if st == nil || f.Type.Kind() == reflect.Map {
			keys, err := d.keys(root.Field(i), name, f.Name, fs)
			if err != nil {
				return nil, err
			}
			top.keys = append(top.keys, keys...)
			continue
		}
		s := section{path: name, intro: fs.describe(f.Name)}
		if first, ok := d.rendered[st]; ok && f.Type.Kind() == reflect.Struct {
			s.intro += fmt.Sprintf(" Its keys and defaults are those of [`%s`](#%s) above.", first, anchor(first))
			out = append(out, s)
			continue
		}
		d.rendered[st] = name
		if f.Type.Kind() == reflect.Pointer {
			s.intro += " Optional: off unless the file has the section; written, even empty (`" + name + ": {}`), it takes every default below."
		}
		td, err := d.typeDoc(st)
		if err != nil {
			return nil, err
		}
		sfs, err := d.fieldsOf(st)
		if err != nil {
			return nil, err
		}
		if more := laterParagraphs(td, sfs.keys); more != "" {
			s.intro += "\n\n" + more
		}
		if f.Type.Kind() == reflect.Slice {
			s.keys, err = d.keys(root.Field(i), name, f.Name, fs)
		} else {
			s.keys, err = d.children(root.Field(i), name)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(top.keys) > 0 {
		out = append([]section{top}, out...)
	}
	return out, nil
}

// keys is the row of one field (value v at path) and, below a mapping,
// the rows of what it holds.
func (d *Docs) keys(v reflect.Value, path, goName string, fs fields) ([]key, error) {
	t := v.Type()
	k := key{path: path, typ: typeName(t), def: defaultOf(v), doc: fs.describe(goName)}
	if k.doc == "" {
		return nil, fmt.Errorf("confdoc: %s (%s) has no doc comment", path, goName)
	}
	out := []key{k}
	if structOf(t) == nil {
		return out, nil
	}
	var sub []key
	var err error
	switch t.Kind() {
	case reflect.Slice:
		sub, err = d.children(elemDefault(t.Elem()), path+"[]")
	case reflect.Map:
		sub, err = d.children(elemDefault(t.Elem()), path+".<name>")
	case reflect.Pointer:
		out[0].typ += ", optional"
		sub, err = d.children(v, path)
	default:
		sub, err = d.children(v, path)
	}
	return append(out, sub...), err
}

// children are the rows of the fields of the mapping v (a struct or a
// pointer to one; a nil pointer stands for the type's defaults) at path.
func (d *Docs) children(v reflect.Value, path string) ([]key, error) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v = elemDefault(v.Type().Elem())
		} else {
			v = v.Elem()
		}
	}
	t := v.Type()
	fs, err := d.fieldsOf(t)
	if err != nil {
		return nil, err
	}
	var out []key
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := yamlName(f)
		if !ok {
			continue
		}
		keys, err := d.keys(v.Field(i), path+"."+name, f.Name, fs)
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
	}
	return out, nil
}

// elemDefault is the value a list or map element, or an optional section,
// of type t starts from: its defaults if it has them (yamlconf.Defaulter),
// else zero.
func elemDefault(t reflect.Type) reflect.Value {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p := reflect.New(t)
	if d, ok := p.Interface().(yamlconf.Defaulter); ok {
		d.SetDefaults()
	}
	return p.Elem()
}

// structOf is the struct type t is, points to or holds in a list or map;
// nil for leaves (time.Duration included).
func structOf(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

func yamlName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("yaml")
	name, _, _ := strings.Cut(tag, ",")
	if !f.IsExported() || tag == "-" || name == "" {
		return "", false
	}
	return name, true
}

var durationType = reflect.TypeFor[time.Duration]()

// typeName is what a YAML writer must put there.
func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Pointer:
		return typeName(t.Elem())
	case t.Kind() == reflect.Struct:
		return "mapping"
	case t.Kind() == reflect.Slice:
		return "list of " + plural(typeName(t.Elem()))
	case t.Kind() == reflect.Map:
		return "map of " + typeName(t.Key()) + " to " + typeName(t.Elem())
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return t.String()
}

func plural(s string) string {
	if strings.HasPrefix(s, "list of") || strings.HasPrefix(s, "map of") {
		return s
	}
	return s + "s"
}

// defaultOf writes v as a YAML writer would: 30s, [a, b], "", true.
func defaultOf(v reflect.Value) string {
	t := v.Type()
	switch {
	case t == durationType:
		return "`" + Duration(time.Duration(v.Int())) + "`"
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			return "—"
		}
		return defaultOf(v.Elem())
	case t.Kind() == reflect.Struct:
		return "—"
	case t.Kind() == reflect.Slice:
		if v.Len() == 0 {
			return "`[]`"
		}
		var parts []string
		for i := range v.Len() {
			parts = append(parts, strings.Trim(defaultOf(v.Index(i)), "`"))
		}
		return "`[" + strings.Join(parts, ", ") + "]`"
	case t.Kind() == reflect.Map:
		if v.Len() == 0 {
			return "`{}`"
		}
		return "—"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		f := v.Float()
		if math.Trunc(f) == f && math.Abs(f) < 1e15 {
			return "`" + strconv.FormatInt(int64(f), 10) + "`"
		}
		return "`" + strconv.FormatFloat(f, 'g', -1, 64) + "`"
	}
	b, err := yaml.Marshal(v.Interface())
	if err != nil {
		return "—"
	}
	return "`" + strings.TrimSpace(string(b)) + "`"
}

// Duration writes d as a YAML writer would: 30s, 1m, 168h, 1h30m, 500ms.
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// describe turns a field's doc comment into one line of Markdown: Go
// names of the struct's fields become their `yaml_key`s — the field's own
// name where the comment starts with it, any other field's name wherever
// it stands (outside code spans) unless it is all capitals (QOS, SSE: more
// often the concept than the key).
func describe(doc, goName string, keys map[string]string) string {
	text := strings.Join(strings.Fields(doc), " ")
	if rest, ok := strings.CutPrefix(text, goName); ok && goName != "" && (rest == "" || !isIdent(rune(rest[0]))) {
		text = "`" + keys[goName] + "`" + rest
	}
	return keysIn(text, goName, keys)
}

// keysIn writes the Go field names in text (but skip's, and all-capital
// ones) as their `yaml_key`s.
func keysIn(text, skip string, keys map[string]string) string {
	parts := strings.Split(text, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = identRE.ReplaceAllStringFunc(parts[i], func(w string) string {
			if k, ok := keys[w]; ok && w != skip && strings.ToUpper(w) != w {
				return "`" + k + "`"
			}
			return w
		})
	}
	return strings.Join(parts, "`")
}

var identRE = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)

func isIdent(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// laterParagraphs is a type's doc comment after its first paragraph, as
// Markdown (paragraphs, and numbered or dashed lists): the first says
// what the type is, the rest is worth reading in the reference (how to
// rotate keys, say). Field names become keys as in describe.
func laterParagraphs(doc string, keys map[string]string) string {
	paras := strings.Split(strings.TrimSpace(doc), "\n\n")
	if len(paras) < 2 {
		return ""
	}
	var out []string
	for _, p := range paras[1:] {
		var items []string
		for _, line := range strings.Split(p, "\n") {
			t := strings.TrimSpace(line)
			switch {
			case listItemRE.MatchString(t):
				items = append(items, t)
			case len(items) > 0:
				items[len(items)-1] += " " + t
			default:
				items = append(items, t)
				if len(items) > 1 {
					items = []string{strings.Join(items, " ")}
				}
			}
		}
		var b strings.Builder
		for k, it := range items {
			switch {
			case k == 0:
			case listItemRE.MatchString(it) && !listItemRE.MatchString(items[k-1]):
				b.WriteString("\n\n") // a list after text starts a block of its own
			default:
				b.WriteString("\n")
			}
			b.WriteString(keysIn(it, "", keys))
		}
		out = append(out, b.String())
	}
	return strings.Join(out, "\n\n")
}

var listItemRE = regexp.MustCompile(`^(\d+\.|-) `)

// anchor is the id GitHub gives the heading "### `path`".
func anchor(path string) string { return strings.ReplaceAll(path, ".", "") }

// cell makes text safe in a Markdown table cell: '|' escaped, and '<'
// outside code spans (it would start HTML).
func cell(s string) string {
	parts := strings.Split(s, "`")
	for i := range parts {
		if i%2 == 0 {
			parts[i] = strings.NewReplacer("|", `\|`, "<", "&lt;").Replace(parts[i])
		} else {
			parts[i] = strings.ReplaceAll(parts[i], "|", `\|`)
		}
	}
	return strings.Join(parts, "`")
}

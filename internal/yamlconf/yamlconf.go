// Package yamlconf decodes a YAML configuration file into a Go struct so that
// every problem an admin can make names the file, the line and the key's full
// path, in one form: "file:line: key.path: problem". yaml's own messages
// ("line 2: field nmae not found in type config.Config") name neither the
// section nor what was meant; this package does both, with a "did you mean"
// where a known key is close.
//
// Decode checks keys against the struct's yaml tags before decoding (every
// unknown key is reported, not only the first), then decodes, turning
// yaml's type errors into the same form.
package yamlconf

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is one problem, located in the file.
type Error struct {
	File string
	Line int    // 0 when unknown
	Key  string // full key path, e.g. "gateway.listen", "nodes[1].addr"
	Msg  string
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Key != "":
		return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Key, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.Key != "":
		return fmt.Sprintf("%s: %s: %s", e.File, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Lines maps every key path written in the file ("gateway.listen",
// "nodes[1]", "nodes[1].addr") to its line.
type Lines map[string]int

// Line returns the line of path or of its nearest written parent, or 0.
func (l Lines) Line(path string) int {
	for p := path; p != ""; {
		if n, ok := l[p]; ok {
			return n
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// ErrEmpty is returned (wrapped in an *Error) for a file with no document.
var ErrEmpty = errors.New("empty configuration")

// Decode parses data (read from file) into out, a pointer to a struct whose
// fields already hold the defaults (see Defaulter for optional sections and
// list elements, Deriver for defaults computed after decoding). It returns
// where every key was written. All problems are returned joined, each an
// *Error.
func Decode(file string, data []byte, out any) (Lines, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(file, err)
	}
	if len(root.Content) == 0 || root.Content[0].Kind == 0 ||
		(root.Content[0].Kind == yaml.ScalarNode && root.Content[0].Tag == "!!null") {
		return nil, &Error{File: file, Msg: ErrEmpty.Error()}
	}
	if err := aliasProblem(file, &root); err != nil {
		return nil, err
	}
	lines, byLine := Lines{}, map[int]string{}
	record(&root, "", lines, byLine)
	t := reflect.TypeOf(out)
	if t.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("yamlconf: Decode needs a pointer, got %s", t)
	}
	var errs []error
	c := checker{file: file, root: t.Elem(), errs: &errs}
	c.check(root.Content[0], t.Elem(), "")
	if len(errs) > 0 {
		return lines, errors.Join(errs...)
	}
	v := reflect.ValueOf(out)
	prepare(root.Content[0], v)
	if err := root.Decode(out); err != nil {
		return lines, decodeError(file, err, byLine)
	}
	if err := fillElements(root.Content[0], v); err != nil {
		return lines, decodeError(file, err, byLine)
	}
	derive(v)
	return lines, nil
}

// maxExpanded bounds the nodes a document may expand to through aliases
// (a configuration has a few thousand): record and check follow aliases,
// so a "billion laughs" file must be refused before they run.
const maxExpanded = 1 << 20

// aliasProblem refuses an anchor that contains an alias of itself (which
// would never end) and aliases that expand beyond maxExpanded nodes.
func aliasProblem(file string, root *yaml.Node) error {
	onPath := map[*yaml.Node]bool{}
	budget := maxExpanded
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		if budget--; budget < 0 {
			return &Error{File: file, Line: n.Line, Msg: "aliases expand to too large a document"}
		}
		if onPath[n] {
			return &Error{File: file, Line: n.Line, Msg: fmt.Sprintf("anchor %q contains an alias of itself", n.Anchor)}
		}
		onPath[n] = true
		defer delete(onPath, n)
		if n.Kind == yaml.AliasNode {
			if n.Alias != nil {
				return walk(n.Alias)
			}
			return nil
		}
		for _, c := range n.Content {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root)
}

// record remembers the line of every key path (keys), and for every line
// the key path whose value is written there (values: the innermost key when
// several share a line, list items only when no key is on their line),
// which is how yaml's type errors, located by line only, get their key.
func record(n *yaml.Node, prefix string, keys Lines, values map[int]string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			record(c, prefix, keys, values)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(prefix, k.Value)
			keys[p] = k.Line
			values[v.Line] = p
			record(v, p, keys, values)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := prefix + "[" + strconv.Itoa(i) + "]"
			keys[p] = c.Line
			if _, ok := values[c.Line]; !ok {
				values[c.Line] = p
			}
			record(c, p, keys, values)
		}
	case yaml.AliasNode:
		if n.Alias != nil {
			record(n.Alias, prefix, keys, values)
		}
	}
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// checker walks the YAML tree beside the Go type it decodes into.
type checker struct {
	file string
	root reflect.Type
	errs *[]error
}

// check reports mapping keys that t has no field for.
func (c checker) check(n *yaml.Node, t reflect.Type, prefix string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return // the type decodes itself
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // a type error; Decode reports it
		}
		fields := fieldsOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // merge key: check what it merges in
				c.check(v, t, prefix)
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				hint := suggest(k.Value, fields)
				if hint == "" {
					hint = elsewhere(k.Value, c.root)
				}
				*c.errs = append(*c.errs, &Error{File: c.file, Line: k.Line, Key: join(prefix, k.Value),
					Msg: "unknown key" + hint})
				continue
			}
			c.check(v, ft, join(prefix, k.Value))
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, e := range n.Content {
			c.check(e, t.Elem(), prefix+"["+strconv.Itoa(i)+"]")
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			c.check(n.Content[i+1], t.Elem(), join(prefix, n.Content[i].Value))
		}
	}
}

// fieldsOf maps yaml key → field type for a struct, following ",inline".
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for k, idx := range fieldIndex(t) {
		out[k] = t.FieldByIndex(idx).Type
	}
	return out
}

// suggest returns ` (did you mean "x"?)` for the closest known key, if any is
// close enough to be a typo.
func suggest(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 1<<30
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s)) }
	for k := range fields {
		d := distance(norm(key), norm(k))
		if d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	limit := max(1, min(3, len(key)/3))
	if bestD <= limit || strings.Contains(norm(best), norm(key)) && len(key) >= 4 {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// elsewhere returns ` (it belongs in "a.b")` when a key of that exact name
// exists in another section: a key put under the wrong parent.
func elsewhere(key string, root reflect.Type) string {
	var found []string
	var walk func(t reflect.Type, prefix string, depth int)
	walk = func(t reflect.Type, prefix string, depth int) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || depth > 6 || reflect.PointerTo(t).Implements(unmarshalerType) {
			return
		}
		for name, ft := range fieldsOf(t) {
			if name == key {
				found = append(found, join(prefix, name))
			}
			walk(ft, join(prefix, name), depth+1)
		}
	}
	walk(root, "", 0)
	if len(found) == 0 {
		return ""
	}
	slices.Sort(found)
	return fmt.Sprintf(" (it belongs in %q)", found[0])
}

// distance is the Damerau–Levenshtein (optimal string alignment) distance.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError turns a parse error into an *Error with its line.
func syntaxError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: n, Msg: "invalid YAML: " + m[2]}
	}
	return &Error{File: file, Msg: "invalid YAML: " + msg}
}

// decodeError turns yaml's type errors ("line 5: cannot unmarshal !!str
// `abc` into int") into *Errors naming the key written on that line.
func decodeError(file string, err error, byLine map[int]string) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return &Error{File: file, Msg: err.Error()}
	}
	var errs []error
	for _, m := range te.Errors {
		sm := lineRE.FindStringSubmatch(m)
		if sm == nil {
			errs = append(errs, &Error{File: file, Msg: m})
			continue
		}
		n, _ := strconv.Atoi(sm[1])
		errs = append(errs, &Error{File: file, Line: n, Key: byLine[n], Msg: friendlyType(sm[2])})
	}
	return errors.Join(errs...)
}

var typeRE = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")

// friendlyType rewords yaml's "cannot unmarshal !!str `abc` into int".
func friendlyType(msg string) string {
	m := typeRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	want := m[3]
	switch {
	case want == "time.Duration":
		want = "a duration such as 30s or 5m"
	case strings.HasPrefix(want, "[]"):
		want = "a list"
	case strings.HasPrefix(want, "map["), strings.HasPrefix(want, "struct"), strings.Contains(want, "."):
		want = "a mapping (key: value)"
	case want == "int" || strings.HasPrefix(want, "int") || strings.HasPrefix(want, "uint"):
		want = "a whole number"
	case strings.HasPrefix(want, "float"):
		want = "a number"
	case want == "bool":
		want = "true or false"
	case want == "string":
		want = "a string"
	}
	got := m[2]
	if len(got) > 40 {
		got = got[:40] + "…"
	}
	kind := map[string]string{"str": "string", "int": "number", "float": "number", "bool": "boolean",
		"seq": "list", "map": "mapping", "null": "null"}[m[1]]
	if kind == "" {
		kind = m[1]
	}
	if m[1] == "seq" || m[1] == "map" {
		return fmt.Sprintf("want %s, got a %s", want, kind)
	}
	return fmt.Sprintf("want %s, got %s %q", want, kind, got)
}

// Locate places the problems a section's Validate returned in the file:
// each "key: problem" (errors.Join'ed, at any depth) becomes an *Error on
// the line of that key, or of its nearest parent the file writes ("a/b",
// two keys at once, points at the first). A problem that does not start
// with a key path is kept whole, on no line. Locate(file, lines, nil) is
// nil.
func Locate(file string, lines Lines, err error) error {
	var out []error
	var walk func(err error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var e *Error
		if errors.As(err, &e) {
			out = append(out, e)
			return
		}
		key, msg, ok := strings.Cut(err.Error(), ": ")
		if !ok || key == "" || strings.ContainsAny(key, " \t\"'") {
			out = append(out, &Error{File: file, Msg: err.Error()})
			return
		}
		first, _, _ := strings.Cut(key, "/")
		out = append(out, &Error{File: file, Line: lines.Line(first), Key: key, Msg: msg})
	}
	if err != nil {
		walk(err)
	}
	return errors.Join(out...)
}

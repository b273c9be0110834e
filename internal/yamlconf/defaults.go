package yamlconf

import (
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Defaults are filled in one way: before decoding. A configuration starts
// as its DefaultConfig() values and the file is decoded over them, so a key
// the file leaves out keeps its default and every default is written once,
// next to the struct that owns it. Three cases need this package's help,
// because the YAML decoder builds those values from zero:
//
//   - an optional section, a pointer field (cluster, discovery, slurm): nil
//     when the file does not have it; when it does, even empty
//     ("cluster:" or "cluster: {}"), it starts from its defaults;
//   - an element of a list or a map (nodes[], usage.budgets.NAME) whose
//     zero value is not its default;
//   - a key written without a value ("deny_principals:"): it keeps its
//     default, as if left out, instead of becoming an empty list.
//
// The first two are the types that implement Defaulter. Derived defaults,
// those computed from other keys or from the machine (auth_timeout from
// login_grace_time, the host name), are one step after decoding, by the
// types that implement Deriver.

// Defaulter is implemented, on the pointer, by a section or element type
// whose zero value is not its default. SetDefaults sets every field to its
// default (the package's DefaultConfig()); Decode calls it on every such
// value the file writes, before decoding the file's keys over it.
type Defaulter interface{ SetDefaults() }

// Deriver is implemented, on the pointer, by a type with defaults that
// depend on other keys or on the machine. Decode calls Derive on every
// such value once the whole file is decoded, inner values before the ones
// holding them; Derive fills only what the file (and DefaultConfig) left
// at its zero value, and says so in the field's doc comment.
type Deriver interface{ Derive() }

var (
	defaulterType = reflect.TypeFor[Defaulter]()
	deriverType   = reflect.TypeFor[Deriver]()
)

func isDefaulter(t reflect.Type) bool { return reflect.PointerTo(t).Implements(defaulterType) }

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// prepare readies v, about to be decoded from n: optional sections the
// file writes are allocated from their defaults, and keys written without
// a value are taken out so that they keep their defaults.
func prepare(n *yaml.Node, v reflect.Value) {
	n = resolve(n)
	if n == nil {
		return
	}
	if v.Kind() == reflect.Pointer {
		t := v.Type().Elem()
		if !isDefaulter(t) {
			if !v.IsNil() {
				prepare(n, v.Elem())
			}
			return
		}
		if isNull(n) { // "cluster:" alone: the section, all defaults
			*n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
		}
		if v.IsNil() {
			p := reflect.New(t)
			p.Interface().(Defaulter).SetDefaults()
			v.Set(p)
		}
		prepare(n, v.Elem())
		return
	}
	if v.Kind() != reflect.Struct || n.Kind != yaml.MappingNode || reflect.PointerTo(v.Type()).Implements(unmarshalerType) {
		return
	}
	fields := fieldIndex(v.Type())
	kept := n.Content[:0:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Value == "<<" {
			for _, m := range merged(val) {
				prepare(m, v)
			}
			kept = append(kept, k, val)
			continue
		}
		idx, ok := fields[k.Value]
		if !ok {
			kept = append(kept, k, val)
			continue
		}
		f, err := v.FieldByIndexErr(idx)
		if err != nil {
			kept = append(kept, k, val)
			continue
		}
		if isNull(val) && nullable(f.Type()) {
			continue // no value: keep the default
		}
		prepare(val, f)
		kept = append(kept, k, val)
	}
	n.Content = kept
}

// merged lists the mappings a merge key ("<<: *base" or "<<: [*a, *b]")
// brings in.
func merged(val *yaml.Node) []*yaml.Node {
	if m := resolve(val); m.Kind == yaml.SequenceNode {
		return m.Content
	}
	return []*yaml.Node{val}
}

// nullable reports whether YAML's null would zero a value of type t (the
// decoder leaves scalars and structs alone).
func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer:
		return !isDefaulter(t.Elem())
	case reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return false
}

// fillElements gives list and map elements their defaults: the decoder
// built them from zero, so each element whose type needs it is decoded
// again, over its defaults.
func fillElements(n *yaml.Node, v reflect.Value) error {
	n = resolve(n)
	if n == nil || !needsFill(v.Type()) {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return fillElements(n, v.Elem())
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		fields := fieldIndex(v.Type())
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				for _, m := range merged(val) {
					if err := fillElements(m, v); err != nil {
						return err
					}
				}
				continue
			}
			if idx, ok := fields[k.Value]; ok {
				if f, err := v.FieldByIndexErr(idx); err == nil {
					if err := fillElements(val, f); err != nil {
						return err
					}
				}
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode || v.Len() != len(n.Content) {
			return nil
		}
		for i, en := range n.Content {
			e, err := element(en, v.Type().Elem())
			if err != nil {
				return err
			}
			v.Index(i).Set(e)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode || v.IsNil() {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := reflect.New(v.Type().Key())
			if err := n.Content[i].Decode(k.Interface()); err != nil {
				return err
			}
			e, err := element(n.Content[i+1], v.Type().Elem())
			if err != nil {
				return err
			}
			v.SetMapIndex(k.Elem(), e)
		}
	}
	return nil
}

// element decodes one list or map element of type t from n, over its
// defaults when t has them.
func element(n *yaml.Node, t reflect.Type) (reflect.Value, error) {
	e := reflect.New(t).Elem()
	base := t
	if t.Kind() == reflect.Pointer {
		base = t.Elem()
		if isNull(n) {
			return e, nil
		}
		e.Set(reflect.New(base))
	}
	target := e
	if t.Kind() == reflect.Pointer {
		target = e.Elem()
	}
	if isDefaulter(base) {
		target.Addr().Interface().(Defaulter).SetDefaults()
	}
	prepare(n, target)
	if err := n.Decode(target.Addr().Interface()); err != nil {
		return e, err
	}
	return e, fillElements(n, target)
}

// needsFill reports whether a value of type t holds, at any depth, a list
// or map whose elements have defaults.
func needsFill(t reflect.Type) bool {
	return walkTypes(t, func(t reflect.Type) bool { return isDefaulter(t) }, true)
}

// walkTypes reports whether pred holds for t or a type inside it; with
// elemsOnly, only element types of lists and maps (and what they hold)
// count.
func walkTypes(t reflect.Type, pred func(reflect.Type) bool, elemsOnly bool) bool {
	type visit struct {
		t      reflect.Type
		inElem bool
	}
	seen := map[visit]bool{}
	var walk func(t reflect.Type, inElem bool) bool
	walk = func(t reflect.Type, inElem bool) bool {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if seen[visit{t, inElem}] {
			return false
		}
		seen[visit{t, inElem}] = true
		if (inElem || !elemsOnly) && pred(t) {
			return true
		}
		switch t.Kind() {
		case reflect.Struct:
			if reflect.PointerTo(t).Implements(unmarshalerType) {
				return false
			}
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() && walk(f.Type, inElem) {
					return true
				}
			}
		case reflect.Slice, reflect.Array, reflect.Map:
			return walk(t.Elem(), true)
		}
		return false
	}
	return walk(t, false)
}

// derive calls Derive on every Deriver in v, inner values first.
func derive(v reflect.Value) {
	if !walkTypes(v.Type(), func(t reflect.Type) bool { return reflect.PointerTo(t).Implements(deriverType) }, false) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			derive(v.Elem())
		}
		return
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				derive(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			derive(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			derive(e)
			v.SetMapIndex(k, e)
		}
	}
	if v.CanAddr() {
		if d, ok := v.Addr().Interface().(Deriver); ok {
			d.Derive()
		}
	}
}

// fieldIndex maps yaml key → field index path for a struct, following
// ",inline".
func fieldIndex(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, idx := range fieldIndex(ft) {
					out[k] = append([]int{i}, idx...)
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = []int{i}
	}
	return out
}

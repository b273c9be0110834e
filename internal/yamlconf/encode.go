package yamlconf

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Encode writes v (a configuration struct, usually started from its
// DefaultConfig and changed in code) as a file that Decode turns back into
// the same value. Fields with a nil slice, map or pointer are left out:
// decoding starts from the defaults, and nil means "unset" (a nil policy
// forwarding list is the rule's default; an empty one forwards nothing).
// Durations are written the way a person would (30s). Tests build
// configurations with the real types this way rather than with YAML
// fragments.
func Encode(v any) ([]byte, error) {
	n, err := encodeValue(reflect.ValueOf(v))
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, fmt.Errorf("yamlconf: Encode of %T: nothing to write", v)
	}
	return yaml.Marshal(n)
}

var durationType = reflect.TypeOf(time.Duration(0))

// encodeValue is v as a YAML node, or nil for an unset value.
func encodeValue(v reflect.Value) (*yaml.Node, error) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return encodeValue(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for i := range v.Len() {
			e, err := encodeValue(v.Index(i))
			if err != nil {
				return nil, err
			}
			if e == nil {
				e = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
			}
			seq.Content = append(seq.Content, e)
		}
		return seq, nil
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		iter := v.MapRange()
		var keys []reflect.Value
		for iter.Next() {
			keys = append(keys, iter.Key())
		}
		// Sorted, so the same value always writes the same file.
		sortValues(keys)
		for _, k := range keys {
			e, err := encodeValue(v.MapIndex(k))
			if err != nil {
				return nil, err
			}
			if e == nil {
				continue
			}
			m.Content = append(m.Content, scalar(fmt.Sprint(k.Interface())), e)
		}
		return m, nil
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			e, err := encodeValue(v.Field(i))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if e == nil {
				continue
			}
			m.Content = append(m.Content, scalar(name), e)
		}
		return m, nil
	}
	if v.Type() == durationType {
		return scalar(time.Duration(v.Int()).String()), nil
	}
	var n yaml.Node
	if err := n.Encode(v.Interface()); err != nil {
		return nil, err
	}
	return &n, nil
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func sortValues(vs []reflect.Value) {
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && fmt.Sprint(vs[j].Interface()) < fmt.Sprint(vs[j-1].Interface()); j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
}

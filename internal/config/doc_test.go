package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The README's configuration reference is checked against the Config
// type: every key an admin can write is documented there (or covered by a
// section wildcard such as `cluster.*`), and nothing documented is gone.
func TestREADMEConfigReference(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "## Configuration reference")
	j := strings.Index(doc[i+1:], "\n## ")
	if i < 0 || j < 0 {
		t.Fatal("README has no configuration reference section")
	}
	table := doc[i : i+1+j]
	documented, wildcards := map[string]bool{}, []string{}
	tick := regexp.MustCompile("`([a-z0-9_.\\[\\]*/]+)`")
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.SplitN(line, "|", 3)[1]
		prefix := ""
		for k, m := range tick.FindAllStringSubmatch(cell, -1) {
			key := m[1]
			if k == 0 {
				if p := strings.LastIndex(key, "."); p >= 0 {
					prefix = key[:p+1]
				}
			} else if !strings.Contains(key, ".") {
				key = prefix + key
			}
			if strings.HasSuffix(key, ".*") {
				wildcards = append(wildcards, strings.TrimSuffix(key, "*"))
			}
			for _, part := range strings.Split(key, "/") { // nodes[].name/addr/pool
				if !strings.Contains(part, ".") {
					part = prefix + part
				}
				documented[part] = true
			}
		}
	}
	var keys []string
	collectKeys(reflect.TypeFor[Config](), "", 0, &keys)
	for _, k := range keys {
		covered := documented[k]
		for _, w := range wildcards {
			covered = covered || strings.HasPrefix(k, w)
		}
		for d := range documented { // a section documented key by key
			covered = covered || strings.HasPrefix(d, k+".") || strings.HasPrefix(d, k+"[")
		}
		if !covered {
			t.Errorf("README configuration reference does not document %s", k)
		}
	}
}

// collectKeys lists the key paths an admin writes: two levels deep
// ("gateway.listen", "nodes[].addr"); deeper structs are documented by
// their section.
func collectKeys(t reflect.Type, prefix string, depth int, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		key := prefix + name
		ft := f.Type
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			if depth == 0 {
				collectKeys(ft.Elem(), key+"[].", depth+1, out)
				continue
			}
		}
		if ft.Kind() == reflect.Struct && ft.String() != "time.Time" && depth == 0 {
			collectKeys(ft, key+".", depth+1, out)
			continue
		}
		*out = append(*out, key)
	}
}

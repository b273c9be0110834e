package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

// Every Fixed key names a key of the gateway configuration (a renamed
// field must take its entry along), and a change of any one of them, alone,
// is refused with the key named; changes a reload takes are not.
func TestFixedKeys(t *testing.T) {
	base := DefaultConfig()
	for key := range Fixed {
		t.Run(key, func(t *testing.T) {
			running, next := base, base
			v, ok := valueAt(reflect.ValueOf(&next).Elem(), key)
			if !ok {
				t.Fatalf("%s is no key of the gateway configuration", key)
			}
			change(t, v)
			errs := Unchangeable(&running, &next)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), key+": changed") ||
				!strings.Contains(errs[0].Error(), "frontdoor upgrade") {
				t.Fatalf("Unchangeable = %v, want one error naming %s and frontdoor upgrade", errs, key)
			}
		})
	}
	running, next := base, base
	next.Policy.Rules = []policy.Rule{{Name: "gpu", Groups: []string{"ml"}, Pools: []string{"gpu"}}}
	next.Gateway.MaxConnections++
	next.Gateway.DrainTimeout *= 2
	next.Log.Level = "debug"
	if errs := Unchangeable(&running, &next); len(errs) != 0 {
		t.Fatalf("reloadable changes refused: %v", errs)
	}
}

// change sets v (a Fixed key's field in a copy of the defaults) to another
// value without touching the original it may share memory with.
func change(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		n := reflect.MakeSlice(v.Type(), v.Len()+1, v.Len()+1)
		reflect.Copy(n, v)
		v.Set(n)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			v.SetZero()
		}
	default:
		t.Fatalf("no way to change a %s", v.Type())
	}
}

// A change inside an optional section counts as a change of the section.
func TestFixedSection(t *testing.T) {
	a, b := cluster.DefaultConfig(), cluster.DefaultConfig()
	b.BindPort++
	running, next := DefaultConfig(), DefaultConfig()
	running.Cluster, next.Cluster = &a, &b
	if errs := Unchangeable(&running, &next); len(errs) != 1 || !strings.Contains(errs[0].Error(), "cluster: changed") {
		t.Fatalf("Unchangeable = %v", errs)
	}
}

// The admin API is set up when its listeners are opened: every admin key
// is fixed, but for the token file, which a reload reads again. A new
// admin key must be put on one side or the other here.
func TestAdminKeysFixed(t *testing.T) {
	reloaded := map[string]bool{"gateway.admin_token_file": true}
	gt := reflect.TypeFor[Gateway]()
	for i := range gt.NumField() {
		name, _, _ := strings.Cut(gt.Field(i).Tag.Get("yaml"), ",")
		if !strings.HasPrefix(name, "admin_") {
			continue
		}
		key := "gateway." + name
		if _, fixed := Fixed[key]; fixed == reloaded[key] {
			t.Errorf("%s: fixed %v, reloaded %v: say which (config.Fixed, or this test's list)", key, fixed, reloaded[key])
		}
	}
}

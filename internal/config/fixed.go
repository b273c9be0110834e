package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Fixed are the keys a running gateway cannot take in place, and why. A
// reload that changes one of them is refused as a whole (never a partial
// apply); `frontdoor upgrade` applies them: a new process starts from the
// file and takes the listening sockets over, and the sessions open stay
// where they are. A key that names a section covers the whole section.
// docs/configuration.md marks them (internal/confdoc); a test checks that
// each names a key of Config.
var Fixed = map[string]string{
	"gateway.name":                        "it is the gateway's gossip member name and names its sessions, audit objects and certificates",
	"gateway.listen":                      "the listening socket is opened once and handed to the next process as it is",
	"gateway.proxy_protocol_from":         "the listener is wrapped for PROXY headers when it is opened",
	"gateway.admin_socket":                "the admin socket is opened once",
	"gateway.admin_listen":                "the admin listener is opened once",
	"gateway.admin_tls_cert":              "the admin listener's TLS is set up when it is opened",
	"gateway.admin_tls_key":               "the admin listener's TLS is set up when it is opened",
	"gateway.admin_client_ca":             "the admin listener's TLS is set up when it is opened",
	"gateway.admin_client_names":          "the admin listener's TLS is set up when it is opened",
	"gateway.admin_readonly_client_names": "the admin listener's TLS is set up when it is opened",
	"gateway.admin_allow_plaintext":       "the admin listener is opened once",
	"gateway.admin_allowed_hosts":         "the admin API is set up when its listener is opened",
	"gateway.admin_metrics_public":        "the admin API is set up when its listener is opened",
	"gateway.admin_pprof":                 "the admin API is set up when its listener is opened",
	"cluster":                             "the gossip member binds its address and port and joins with its keys and timings at start",
	"log.format":                          "the process log is opened at start",
}

// Unchangeable lists the Fixed keys whose value differs between the running
// configuration and next, sorted, each as an error located in next's file
// that says what to do instead.
func Unchangeable(running, next *Config) []error {
	var out []error
	for _, key := range slices.Sorted(maps.Keys(Fixed)) {
		a, _ := valueAt(reflect.ValueOf(running).Elem(), key)
		b, _ := valueAt(reflect.ValueOf(next).Elem(), key)
		if reflect.DeepEqual(a.Interface(), b.Interface()) {
			continue
		}
		out = append(out, next.Errorf(key, "changed, and a running gateway cannot take it in place (%s): "+
			"`frontdoor upgrade` applies it (a new process takes the sockets over; open sessions stay)", Fixed[key]))
	}
	return out
}

// valueAt is the field at a dotted YAML key path below struct v.
func valueAt(v reflect.Value, path string) (reflect.Value, bool) {
	for _, name := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v = reflect.New(v.Type().Elem()).Elem()
				continue
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		found := false
		for i := range v.NumField() {
			if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); tag == name {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	return v, true
}

package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const good = `
gateway:
  name: gw1
  listen: 127.0.0.1:2222
  host_keys: [keys/host]
  user_ca_key: /etc/frontdoor/user_ca
backend:
  known_hosts: [known_hosts]
directory:
  kind: static
  static: {file: users.yaml}
nodes:
  - {name: login1, addr: "10.0.0.1:22", pool: general}
  - {name: login2, addr: "10.0.0.2:22"}
policy:
  rules:
    - {name: all, groups: ["*"], pools: [general, default]}
`

func TestParseDefaultsAndPaths(t *testing.T) {
	c, err := Parse("/etc/frontdoor/gateway.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Gateway.HostKeys[0] != "/etc/frontdoor/keys/host" {
		t.Errorf("relative path not resolved: %s", c.Gateway.HostKeys[0])
	}
	if c.Gateway.UserCAKey != "/etc/frontdoor/user_ca" {
		t.Errorf("absolute path changed: %s", c.Gateway.UserCAKey)
	}
	if c.Nodes[1].Pool != "default" || c.Backend.CertValidity != 5*time.Minute || c.Gateway.MaxAuthTries != 6 ||
		!c.Backend.Preconnect || c.Backend.MaxAttempts != 3 || c.Backend.MinUID != 1000 {
		t.Errorf("defaults not applied: %+v %+v", c.Nodes[1], c.Backend)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", strings.Replace(good, "  name: gw1", "  nmae: gw1", 1), `gateway.yaml:3: gateway.nmae: unknown key (did you mean "name"?)`},
		{"key in the wrong section", strings.Replace(good, "  name: gw1", "  known_hosts: [x]", 1), `gateway.yaml:3: gateway.known_hosts: unknown key (it belongs in "backend.known_hosts")`},
		{"bad type", strings.Replace(good, "  name: gw1", "  login_grace_time: soon", 1), `gateway.yaml:3: gateway.login_grace_time: want a duration such as 30s or 5m, got string "soon"`},
		{"bad node addr", strings.Replace(good, `"10.0.0.2:22"`, `"10.0.0.2"`, 1), "gateway.yaml:14: nodes[1].addr"},
		{"bad node name", strings.Replace(good, "name: login1", "name: 'login 1'", 1), "gateway.yaml:13: nodes[0].name"},
		{"duplicate node", strings.Replace(good, "name: login2", "name: login1", 1), "duplicate node name"},
		{"unknown directory", strings.Replace(good, "kind: static", "kind: nis", 1), "gateway.yaml:10: directory.kind"},
		{"no known hosts", strings.Replace(good, "  known_hosts: [known_hosts]", "  connect_timeout: 3s", 1), "backend.known_hosts"},
		{"policy problem", strings.Replace(good, `groups: ["*"], `, "", 1), "gateway.yaml:17: policy.rules[0]"},
		{"cert validity", strings.Replace(good, "  known_hosts: [known_hosts]", "  known_hosts: [k]\n  cert_validity: 48h", 1), "backend.cert_validity"},
		{"cluster problem", good + "cluster:\n  insecure: true\n  bind_addr: nowhere\n", `gateway.yaml:20: cluster.bind_addr: "nowhere" is not an IP address`},
		{"route problem", good + "route:\n  choices: 0\n", `gateway.yaml:19: route.choices: must be at least 1`},
		{"admin over TCP without credentials", strings.Replace(good, "  name: gw1", "  admin_listen: 127.0.0.1:9101", 1),
			"gateway.yaml:3: gateway.admin_listen: the admin API over TCP needs authentication"},
		{"admin TLS cert without key", strings.Replace(good, "  name: gw1", "  admin_listen: 127.0.0.1:9101\n  admin_token_file: t\n  admin_tls_cert: c.pem", 1),
			"gateway.yaml:5: gateway.admin_tls_cert: admin_tls_cert and admin_tls_key go together"},
		{"admin client CA without a server cert", strings.Replace(good, "  name: gw1", "  admin_listen: 127.0.0.1:9101\n  admin_client_ca: ca.pem", 1),
			"gateway.yaml:4: gateway.admin_client_ca: mutual TLS needs admin_tls_cert"},
		{"admin token without TCP", strings.Replace(good, "  name: gw1", "  admin_token_file: t", 1),
			"gateway.yaml:3: gateway.admin_token_file: only used with gateway.admin_listen"},
		{"admin bad host", strings.Replace(good, "  name: gw1", "  admin_listen: 127.0.0.1:9101\n  admin_token_file: t\n  admin_allowed_hosts: [\"http://x:1\"]", 1),
			"gateway.yaml:5: gateway.admin_allowed_hosts[0]: \"http://x:1\" is not a host name"},
		{"admin socket too long", strings.Replace(good, "  name: gw1", "  admin_socket: /"+strings.Repeat("s", 120), 1),
			"gateway.yaml:3: gateway.admin_socket: 121 bytes is longer than a Unix socket path may be"},
		{"not yaml", "gateway: [", "gateway.yaml"},
		{"empty", "", "empty configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("gateway.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestErrorsAreTyped(t *testing.T) {
	_, err := Parse("g.yaml", []byte(strings.Replace(good, "kind: static", "kind: nis", 1)))
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 10 || ce.Key != "directory.kind" {
		t.Fatalf("got %#v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("nodes: [{name: a, addr: 'x:1'}]"))
	f.Add([]byte("gateway: {listen: ':22'}\npolicy: {rules: [{users: [a]}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err == nil && (len(c.Gateway.HostKeys) == 0 || c.Gateway.UserCAKey == "") {
			t.Fatalf("accepted a config without keys")
		}
	})
}

func TestADSectionErrorsNameTheLine(t *testing.T) {
	y := strings.Replace(good, "  kind: static\n  static: {file: users.yaml}", `  kind: ad
  ad:
    urls: ["ldap://dc1.example.edu"]
    base_dn: DC=example,DC=edu
    bind_dn: svc@example.edu
    bind_password_file: pw
    key_attribute: sshKeys`, 1)
	_, err := Parse("gateway.yaml", []byte(y))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"gateway.yaml:12: directory.ad.urls[0]: \"ldap://dc1.example.edu\" is plain LDAP",
		"gateway.yaml:11: directory.ad.ca_file: required",
		"gateway.yaml:16: directory.ad.key_attribute",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
}

func TestAdminDefaults(t *testing.T) {
	c, err := Parse("/etc/frontdoor/gateway.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	g := c.Gateway
	if g.AdminSocket != DefaultAdminSocket || !g.AdminSocketEnabled() || g.AdminListen != "" || g.AdminPprof || g.AdminMetricsPublic {
		t.Fatalf("admin defaults: %+v", g)
	}
	y := strings.Replace(good, "  name: gw1", `  admin_socket: run/admin.sock
  admin_listen: 127.0.0.1:9101
  admin_token_file: admin-tokens
  admin_tls_cert: tls/cert.pem
  admin_tls_key: tls/key.pem
  admin_client_ca: tls/ca.pem
  admin_client_names: [ops-alice]
  admin_allowed_hosts: [gw1.mgmt.example.edu, "10.0.0.5", "::1"]
  admin_pprof: true`, 1)
	if c, err = Parse("/etc/frontdoor/gateway.yaml", []byte(y)); err != nil {
		t.Fatal(err)
	}
	g = c.Gateway
	if g.AdminSocket != "/etc/frontdoor/run/admin.sock" || g.AdminTokenFile != "/etc/frontdoor/admin-tokens" ||
		g.AdminClientCA != "/etc/frontdoor/tls/ca.pem" || !g.AdminPprof {
		t.Fatalf("admin paths not resolved: %+v", g)
	}
	if c, err = Parse("g.yaml", []byte(strings.Replace(good, "  name: gw1", "  admin_socket: off", 1))); err != nil || c.Gateway.AdminSocketEnabled() {
		t.Fatalf("admin_socket: off: %v %+v", err, c)
	}
	// Mutual TLS alone is enough authentication.
	mtls := strings.Replace(good, "  name: gw1", "  admin_listen: 127.0.0.1:9101\n  admin_tls_cert: c\n  admin_tls_key: k\n  admin_client_ca: ca\n  admin_client_names: [ops]", 1)
	if _, err := Parse("g.yaml", []byte(mtls)); err != nil {
		t.Fatalf("mutual TLS without tokens: %v", err)
	}
}

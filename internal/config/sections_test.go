package config

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/ca/kms"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf/yamlconftest"
)

// validGateway is DefaultGateway with what has no default, derived.
func validGateway() Gateway {
	g := DefaultGateway()
	g.Name, g.HostKeys, g.UserCAKey = "gw1", []string{"/k"}, "/ca"
	g.Derive()
	return g
}

func TestGatewayValidate(t *testing.T) {
	if err := validGateway().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(g *Gateway)
		want   string // "" when valid
	}{
		{"listen", func(g *Gateway) { g.Listen = "22" }, "gateway.listen: not host:port"},
		{"no host key", func(g *Gateway) { g.HostKeys = nil }, "gateway.host_keys: at least one"},
		{"no user CA", func(g *Gateway) { g.UserCAKey = "" }, "gateway.user_ca_key: required (or user_ca_kms)"},
		{"user CA in KMS", func(g *Gateway) { g.UserCAKey, g.UserCAKMS = "", &kms.Config{KeyID: "alias/fd"} }, ""},
		{"two user CAs", func(g *Gateway) { g.UserCAKMS = &kms.Config{KeyID: "alias/fd"} }, "gateway.user_ca_kms: set either user_ca_key or user_ca_kms, not both"},
		{"max_auth_tries", func(g *Gateway) { g.MaxAuthTries = 0 }, "gateway.max_auth_tries: must be at least 1"},
		{"max_connections", func(g *Gateway) { g.MaxConnections = 0 }, "gateway.max_connections: must be at least 1"},
		{"max_startups", func(g *Gateway) { g.MaxStartups = 0 }, "gateway.max_startups: must be at least 1"},
		{"per source", func(g *Gateway) { g.PerSourceMaxStartups = -1 }, "gateway.per_source_max_startups"},
		{"burst", func(g *Gateway) { g.PerSourceBurst = 0 }, "gateway.per_source_burst"},
		{"rate", func(g *Gateway) { g.PerSourceRate = 0 }, "gateway.per_source_rate: must be positive"},
		{"password checks", func(g *Gateway) { g.MaxPasswordChecks = -1 }, "gateway.max_password_checks"},
		{"grace", func(g *Gateway) { g.LoginGraceTime = 0 }, "gateway.login_grace_time: must be positive"},
		{"nesting", func(g *Gateway) { g.AuthTimeout = 2 * time.Minute }, "gateway.auth_timeout: want handshake_timeout"},
		{"exempt", func(g *Gateway) { g.AdmissionExempt = []string{"10.0.0.0/8", "campus"} }, "gateway.admission_exempt[1]"},
		{"proxy", func(g *Gateway) { g.ProxyProtocolFrom = []string{"nlb"} }, "gateway.proxy_protocol_from[0]"},
		{"proxy address", func(g *Gateway) { g.ProxyProtocolFrom = []string{"10.0.0.5", "10.0.1.0/24"} }, ""},
		{"no ciphers", func(g *Gateway) { g.Ciphers = nil }, "gateway.ciphers: must not be empty"},
		{"weak MAC", func(g *Gateway) { g.MACs = []string{"hmac-md5"} }, `gateway.macs[0]: "hmac-md5" is not supported or not secure`},
		{"kex", func(g *Gateway) { g.KexAlgorithms = []string{"diffie-hellman-group1-sha1"} }, "gateway.kex_algorithms[0]"},
		{"admin socket off", func(g *Gateway) { g.AdminSocket = AdminSocketOff }, ""},
		{"admin socket path", func(g *Gateway) { g.AdminSocket = "/" + strings.Repeat("s", 120) }, "gateway.admin_socket: 121 bytes"},
		{"admin TCP without credentials", func(g *Gateway) { g.AdminListen = "127.0.0.1:9101" }, "gateway.admin_listen: the admin API over TCP needs authentication"},
		{"admin token", func(g *Gateway) { g.AdminListen, g.AdminTokenFile = "127.0.0.1:9101", "/t" }, ""},
		{"admin host with a trailing dot", func(g *Gateway) {
			g.AdminListen, g.AdminTokenFile, g.AdminAllowedHosts = "127.0.0.1:9101", "/t", []string{"gw1.example.edu.", "[::1]", "10.0.0.5"}
		}, ""},
		{"admin host label too long", func(g *Gateway) {
			g.AdminListen, g.AdminTokenFile, g.AdminAllowedHosts = "127.0.0.1:9101", "/t", []string{strings.Repeat("h", 64) + ".edu"}
		}, "gateway.admin_allowed_hosts[0]"},
		{"admin token without TCP", func(g *Gateway) { g.AdminTokenFile = "/t" }, "gateway.admin_token_file: only used with gateway.admin_listen"},
		// A certificate from the client CA is not an admin by itself: the
		// names say which are.
		{"admin CA without names", func(g *Gateway) {
			g.AdminListen, g.AdminTLSCert, g.AdminTLSKey, g.AdminClientCA = "127.0.0.1:9101", "/c", "/k", "/ca"
		}, "gateway.admin_client_ca: name the certificates"},
		{"admin CA with names", func(g *Gateway) {
			g.AdminListen, g.AdminTLSCert, g.AdminTLSKey, g.AdminClientCA = "127.0.0.1:9101", "/c", "/k", "/ca"
			g.AdminClientNames, g.AdminReadOnlyClientNames = []string{"ops-alice", "alice@example.edu"}, []string{"grafana.mgmt.example.edu"}
		}, ""},
		{"admin CA, read-only names only", func(g *Gateway) {
			g.AdminListen, g.AdminTLSCert, g.AdminTLSKey, g.AdminClientCA = "127.0.0.1:9101", "/c", "/k", "/ca"
			g.AdminReadOnlyClientNames = []string{"*"}
		}, ""},
		{"admin client name syntax", func(g *Gateway) {
			g.AdminListen, g.AdminTLSCert, g.AdminTLSKey, g.AdminClientCA = "127.0.0.1:9101", "/c", "/k", "/ca"
			g.AdminClientNames = []string{"ops alice"}
		}, "gateway.admin_client_names[0]"},
		{"admin client name twice", func(g *Gateway) {
			g.AdminListen, g.AdminTLSCert, g.AdminTLSKey, g.AdminClientCA = "127.0.0.1:9101", "/c", "/k", "/ca"
			g.AdminClientNames, g.AdminReadOnlyClientNames = []string{"ops"}, []string{"OPS"}
		}, "gateway.admin_readonly_client_names[0]: \"OPS\" is already listed in admin_client_names[0]"},
		{"admin names without a CA", func(g *Gateway) {
			g.AdminListen, g.AdminTokenFile, g.AdminClientNames = "127.0.0.1:9101", "/t", []string{"ops"}
		}, "gateway.admin_client_names: only used with admin_client_ca"},
		// Tokens in clear text on a network are an error unless asked for.
		{"admin plaintext on a network", func(g *Gateway) { g.AdminListen, g.AdminTokenFile = "10.0.0.5:9101", "/t" }, "gateway.admin_listen: \"10.0.0.5:9101\" is not a loopback address"},
		{"admin plaintext on every address", func(g *Gateway) { g.AdminListen, g.AdminTokenFile = ":9101", "/t" }, "gateway.admin_listen"},
		{"admin plaintext on a host name", func(g *Gateway) { g.AdminListen, g.AdminTokenFile = "gw1.mgmt:9101", "/t" }, "gateway.admin_listen"},
		{"admin plaintext on localhost", func(g *Gateway) { g.AdminListen, g.AdminTokenFile = "localhost:9101", "/t" }, ""},
		{"admin plaintext on ::1", func(g *Gateway) { g.AdminListen, g.AdminTokenFile = "[::1]:9101", "/t" }, ""},
		{"admin plaintext allowed", func(g *Gateway) {
			g.AdminListen, g.AdminTokenFile, g.AdminAllowPlaintext = "10.0.0.5:9101", "/t", true
		}, ""},
		{"admin TLS on a network", func(g *Gateway) {
			g.AdminListen, g.AdminTokenFile, g.AdminTLSCert, g.AdminTLSKey = "0.0.0.0:9101", "/t", "/c", "/k"
		}, ""},
		{"admin plaintext switch without TCP", func(g *Gateway) { g.AdminAllowPlaintext = true }, "gateway.admin_allow_plaintext: only used with gateway.admin_listen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := validGateway()
			tc.change(&g)
			yamlconftest.Problem(t, g.Validate(), tc.want)
		})
	}
}

// The deadlines nest: what the file leaves at 0 follows the ones around it.
func TestGatewayDerive(t *testing.T) {
	for _, tc := range []struct {
		grace, auth, handshake             time.Duration
		wantGrace, wantAuth, wantHandshake time.Duration
	}{
		{60 * time.Second, 0, 0, 60 * time.Second, 30 * time.Second, 10 * time.Second},
		{20 * time.Second, 0, 0, 20 * time.Second, 20 * time.Second, 10 * time.Second},
		{5 * time.Second, 0, 0, 5 * time.Second, 5 * time.Second, 5 * time.Second},
		{60 * time.Second, 3 * time.Second, 0, 60 * time.Second, 3 * time.Second, 3 * time.Second},
		{60 * time.Second, 0, 2 * time.Second, 60 * time.Second, 30 * time.Second, 2 * time.Second},
	} {
		g := DefaultGateway()
		g.LoginGraceTime, g.AuthTimeout, g.HandshakeTimeout = tc.grace, tc.auth, tc.handshake
		g.Derive()
		if g.LoginGraceTime != tc.wantGrace || g.AuthTimeout != tc.wantAuth || g.HandshakeTimeout != tc.wantHandshake {
			t.Errorf("%v/%v/%v → %v/%v/%v", tc.grace, tc.auth, tc.handshake, g.LoginGraceTime, g.AuthTimeout, g.HandshakeTimeout)
		}
	}
	g := DefaultGateway()
	if g.Derive(); g.Name == "" || g.MaxPasswordChecks != max(2, runtime.NumCPU()) {
		t.Errorf("name %q, max_password_checks %d", g.Name, g.MaxPasswordChecks)
	}
}

func TestBackendValidate(t *testing.T) {
	ok := DefaultBackend()
	ok.KnownHosts = []string{"/kh"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(b *Backend)
		want   string // "" when valid
	}{
		{"no known_hosts", func(b *Backend) { b.KnownHosts = nil }, "backend.known_hosts: required"},
		{"lab", func(b *Backend) { b.KnownHosts, b.InsecureIgnoreHostKeys = nil, true }, ""},
		{"connect", func(b *Backend) { b.ConnectTimeout = 0 }, "backend.connect_timeout: must be positive"},
		{"validity", func(b *Backend) { b.CertValidity = 48 * time.Hour }, "backend.cert_validity: must be between 30s and 1h"},
		{"source", func(b *Backend) { b.CertSourceAddress = []string{"10.0.0.0/24", "gw1"} }, `backend.cert_source_address[1]: "gw1"`},
		{"attempts", func(b *Backend) { b.MaxAttempts = 11 }, "backend.max_attempts: must be between 1 and 10"},
		{"keepalive off", func(b *Backend) { b.KeepaliveInterval = 0 }, ""},
		{"keepalive", func(b *Backend) { b.KeepaliveInterval = -time.Second }, "backend.keepalive_interval: must not be negative"},
		{"speculative", func(b *Backend) { b.SpeculativeMax = 0 }, "backend.speculative_max: must be at least 1"},
		{"speculative per node", func(b *Backend) { b.SpeculativePerNode = 0 }, "backend.speculative_per_node"},
		{"min uid off", func(b *Backend) { b.MinUID = 0 }, ""},
		{"min uid", func(b *Backend) { b.MinUID = -1 }, "backend.min_uid: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := ok
			tc.change(&b)
			yamlconftest.Problem(t, b.Validate(), tc.want)
		})
	}
}

func TestLogValidate(t *testing.T) {
	if err := DefaultLog().Validate(); err != nil {
		t.Fatal(err)
	}
	for l, want := range map[Log]string{
		{Level: "trace", Format: "json"}: `log.level: unknown level "trace"`,
		{Level: "info", Format: "xml"}:   `log.format: unknown format "xml"`,
		{Level: "warn", Format: "text"}:  "",
	} {
		yamlconftest.Problem(t, l.Validate(), want)
	}
}

// The defaults of every section pass its Validate once what has no
// default (host keys, a directory file, a bucket, ...) is given.
func TestDefaultsAreValid(t *testing.T) {
	c := DefaultConfig()
	c.Gateway.HostKeys, c.Gateway.UserCAKey = []string{"/k"}, "/ca"
	c.Backend.KnownHosts = []string{"/kh"}
	c.Directory.Static.File = "/users.yaml"
	c.Nodes = []node.Node{{Name: "login1", Addr: "10.0.0.1:22", Pool: node.DefaultPool}}
	c.Policy.Rules = []policy.Rule{{Name: "all", Groups: []string{"*"}, Pools: []string{node.DefaultPool}}}
	sl := slurm.DefaultConfig()
	c.Slurm = &sl
	cl := cluster.DefaultConfig()
	cl.Insecure = true
	c.Cluster = &cl
	c.Gateway.Derive() // as yamlconf does: the sections, then the file
	c.Derive()
	if err := c.validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if c.Cluster.Name != c.Gateway.Name || c.Gateway.Name == "" {
		t.Errorf("cluster.name %q, gateway.name %q", c.Cluster.Name, c.Gateway.Name)
	}
}

// A file without an optional section has it nil; with it, even empty, it
// starts from the section's defaults; an unknown key in it is located.
func TestOptionalSections(t *testing.T) {
	c, err := Parse("g.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster != nil || c.Discovery != nil || c.Slurm != nil || c.Audit.S3 != nil {
		t.Fatalf("sections the file does not have: %+v %+v %+v %+v", c.Cluster, c.Discovery, c.Slurm, c.Audit.S3)
	}
	for _, y := range []string{"cluster:\n  insecure: true\nslurm:\n", "cluster: {insecure: true}\nslurm: {}\n"} {
		c, err := Parse("g.yaml", []byte(good+y))
		if err != nil {
			t.Fatalf("%q: %v", y, err)
		}
		wantCl := cluster.DefaultConfig()
		wantCl.Name, wantCl.Insecure = "gw1", true
		if !reflect.DeepEqual(*c.Cluster, wantCl) {
			t.Errorf("%q: cluster %+v", y, *c.Cluster)
		}
		if !reflect.DeepEqual(*c.Slurm, slurm.DefaultConfig()) {
			t.Errorf("%q: slurm %+v", y, *c.Slurm)
		}
	}
	c, err = Parse("g.yaml", []byte(good+"cluster:\n  insecure: true\n  name: gw-a\n"))
	if err != nil || c.Cluster.Name != "gw-a" {
		t.Errorf("cluster.name written: %v %+v", err, c)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"cluster:\n  insecure: true\n  probe_intervall: 2s\n", `g.yaml:20: cluster.probe_intervall: unknown key (did you mean "probe_interval"?)`},
		{"slurm:\n  parent_acount: x\n", `g.yaml:19: slurm.parent_acount: unknown key (did you mean "parent_account"?)`},
		{"slurm:\n  timeout: 0s\n", "g.yaml:19: slurm.timeout: must be positive"},
		{"cluster:\n", "g.yaml:18: cluster.secret_keys: required"},
	} {
		_, err := Parse("g.yaml", []byte(good+tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
}

// A key written without a value keeps its default; a zero written on
// purpose is that value, refused where it cannot work.
func TestWrittenValues(t *testing.T) {
	c, err := Parse("g.yaml", []byte(strings.Replace(good, "  known_hosts: [known_hosts]", "  known_hosts: [known_hosts]\n  deny_principals:\n  min_uid: 0\n  preconnect: false", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Backend.DenyPrincipals, DefaultDenyPrincipals()) || c.Backend.MinUID != 0 || c.Backend.Preconnect {
		t.Errorf("backend %+v", c.Backend)
	}
	_, err = Parse("g.yaml", []byte(strings.Replace(good, "  name: gw1", "  name: gw1\n  max_connections: 0", 1)))
	if err == nil || !strings.Contains(err.Error(), "g.yaml:4: gateway.max_connections: must be at least 1") {
		t.Errorf("max_connections: 0: %v", err)
	}
	c, err = Parse("g.yaml", []byte(strings.Replace(good, "  name: gw1", "  name: gw1\n  login_grace_time: 20s", 1)))
	if err != nil || c.Gateway.AuthTimeout != 20*time.Second || c.Gateway.HandshakeTimeout != 10*time.Second {
		t.Errorf("derived deadlines: %v %+v", err, c)
	}
}

func TestNodeDefaults(t *testing.T) {
	c, err := Parse("g.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Nodes[0].Pool != "general" || c.Nodes[1].Pool != node.DefaultPool {
		t.Errorf("pools %+v", c.Nodes)
	}
}

// Package mfae2e_test tests the second factor end to end: the real OpenSSH
// client, two in-process gateways sharing unlocks by gossip, a real sshd
// login node, and a real FreeRADIUS checking TOTP codes computed by the
// real oathtool.
//
// Addresses: 127.0.9.2 (FreeRADIUS :18812), 127.0.9.21 (the node),
// 127.0.9.31 and .32 (the gateways and their gossip) are this package's.
package mfae2e_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/mfa"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

const radiusAddr = "127.0.9.2:18812"

// Users: each test its own, so that unlocks and throttle counts of one
// test do not leak into another. "staff" users must answer a second
// factor (window 1h); "brief" users too, with a window of a few seconds;
// "open" users never; "fido" users not when their security key was touched.
var userGroups = map[string]string{
	"mfa-alice": "staff", "mfa-bob": "open", "mfa-carol": "staff", "mfa-dave": "staff",
	"mfa-erin": "staff", "mfa-frank": "staff", "mfa-gina": "brief", "mfa-hank": "staff",
	"mfa-ivan": "fido",
}

// briefWindow is the "brief" rule's mfa_window.
const briefWindow = 4 * time.Second

var (
	base     string
	radius   *harness.RADIUS
	radiusO  harness.RADIUSOptions
	gw1, gw2 *harness.Gateway
	users    = map[string]*harness.User{}
	second   = map[string]*harness.User{} // a second key of the same account
	totp     = map[string]string{}        // user → base32 TOTP secret
	skKeys   = map[string]*softSK{}       // "fido" users' security keys
)

func TestMain(m *testing.M) {
	os.Exit(harness.Suite{
		Name:     "mfae2e",
		Programs: []string{harness.SSHDPath, harness.FreeRADIUSPath, "oathtool", "ssh", "ssh-keygen", "useradd"},
		Setup:    setup,
	}.Run(m))
}

func setup(ctx context.Context, b string, stops *[]func()) (string, error) {
	base = b
	if err := harness.AddrsFree("127.0.9.31", 7946, 7947); err != nil {
		return "", err
	}
	keys, err := harness.Keys(filepath.Join(base, "keys"))
	if err != nil {
		return "", err
	}
	for name := range userGroups {
		totp[name] = harness.NewTOTPSecret()
	}
	radiusO = harness.RADIUSOptions{Dir: filepath.Join(base, "radius"), Addr: radiusAddr, Secret: "mfae2e-" + rand.Text(), TOTP: totp}
	if radius, err = harness.StartRADIUS(ctx, radiusO); err != nil {
		return "", err
	}
	*stops = append(*stops, func() { radius.Stop() })
	secretFile := filepath.Join(base, "radius.secret")
	if err := os.WriteFile(secretFile, []byte(radiusO.Secret+"\n"), 0o600); err != nil {
		return "", err
	}

	udir := filepath.Join(base, "users")
	type entry struct {
		Name   string   `yaml:"name"`
		Groups []string `yaml:"groups"`
		Keys   []string `yaml:"keys"`
	}
	var file struct {
		Users []entry `yaml:"users"`
	}
	for name, group := range userGroups {
		u, err := harness.NewUser(udir, name, "", group)
		if err != nil {
			return "", err
		}
		u2, err := harness.NewUser(filepath.Join(udir, "second"), name, "", group)
		if err != nil {
			return "", err
		}
		if err := harness.EnsureUnixUser(name); err != nil {
			return "", err
		}
		users[name], second[name] = u, u2
		keys := []string{u.AuthorizedKey(), u2.AuthorizedKey()}
		if group == "fido" {
			sk, err := newSoftSK()
			if err != nil {
				return "", err
			}
			skKeys[name] = sk
			keys = append(keys, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sk.PublicKey()))))
		}
		file.Users = append(file.Users, entry{Name: name, Groups: []string{group}, Keys: keys})
	}
	usersFile := filepath.Join(base, "users.yaml")
	yb, _ := yaml.Marshal(&file)
	if err := os.WriteFile(usersFile, yb, 0o600); err != nil {
		return "", err
	}

	node, err := harness.StartNode(ctx, harness.NodeOptions{Name: "login1", Addr: "127.0.9.21", Dir: filepath.Join(base, "node"),
		UserCAPub: keys.UserCAPub, RevokedKeys: keys.RevokedKeys})
	if err != nil {
		return "", err
	}
	*stops = append(*stops, func() { node.Stop() })

	gossipKey, gatewayKey := key32(), key32()
	start := func(name, host, peer string) (*harness.Gateway, error) {
		return harness.StartGateway(context.Background(), harness.GatewayOptions{
			Dir: filepath.Join(base, name),
			Config: harness.GatewayConfig{
				Name: name, Listen: host + ":0", Keys: keys, UsersFile: usersFile,
				Nodes: []harness.NodeEntry{node.Entry("general")},
				Rules: []policy.Rule{
					{Name: "staff", Groups: []string{"staff"}, Pools: []string{"general"}, MFA: policy.MFARequired, MFAWindow: time.Hour},
					{Name: "brief", Groups: []string{"brief"}, Pools: []string{"general"}, MFA: policy.MFARequired, MFAWindow: briefWindow},
					{Name: "open", Groups: []string{"open"}, Pools: []string{"general"}},
					{Name: "fido", Groups: []string{"fido"}, Pools: []string{"general"}, MFA: policy.MFARequired, MFASKCounts: true},
				},
				Edit: func(c *config.Config) {
					m := mfa.DefaultConfig()
					m.Servers, m.SecretFile = []string{radiusAddr}, secretFile
					m.Timeout, m.Retransmit = 5*time.Second, time.Second
					m.UnlockCommand = "ssh -t " + host
					c.MFA = &m
					c.Gateway.LoginGraceTime = 60 * time.Second
					c.Gateway.AdmissionExempt = []string{"127.0.0.0/8"}
					cl := cluster.DefaultConfig()
					cl.Name, cl.BindAddr, cl.BindPort, cl.GatewayPort = name, host, 7946, 7947
					cl.SecretKeys, cl.GatewayKeys, cl.Label = []string{gossipKey}, []string{gatewayKey}, "mfae2e"
					if peer != "" {
						cl.Join, cl.GatewayJoin = []string{peer + ":7946"}, []string{peer + ":7947"}
					}
					cl.PushPullInterval, cl.GatewaySyncInterval, cl.RejoinInterval = 2*time.Second, 500*time.Millisecond, time.Second
					c.Cluster = &cl
				},
			},
		})
	}
	if gw1, err = start("gw1", "127.0.9.31", ""); err != nil {
		return "", err
	}
	*stops = append(*stops, func() { gw1.Close() })
	if gw2, err = start("gw2", "127.0.9.32", "127.0.9.31"); err != nil {
		return "", err
	}
	*stops = append(*stops, func() { gw2.Close() })
	err = harness.WaitFor(ctx, 30*time.Second, func() error {
		if n := len(gw1.Parts().Cluster().Members()); n < 2 {
			return fmt.Errorf("gw1 sees %d members", n)
		}
		return nil
	})
	return "FreeRADIUS, login1 and two gateways", err
}

func key32() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// askpass writes an SSH_ASKPASS program for user's prompts: "push" to
// the gateway's first prompt when challenge is set (FreeRADIUS then
// challenges), and otherwise the TOTP code at now+offset from oathtool.
func askpass(t *testing.T, user string, offset time.Duration, challenge bool) string {
	t.Helper()
	at := fmt.Sprintf("$(date -u -d @$(( $(date +%%s) + %d )) '+%%Y-%%m-%%d %%H:%%M:%%S') UTC", int(offset.Seconds()))
	script := "#!/bin/sh\n"
	if challenge {
		script += "case \"$1\" in *push*) echo push; exit 0;; esac\n"
	}
	script += fmt.Sprintf("exec oathtool --totp -b --now \"%s\" %s\n", at, totp[user])
	p := filepath.Join(t.TempDir(), "askpass")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// client is an OpenSSH client for u through g; with askpass it answers
// prompts, without it runs in BatchMode.
func client(g *harness.Gateway, u *harness.User, askpass string) *harness.Client {
	c := g.Client(u)
	c.Askpass = askpass
	return c
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// login runs `ssh … whoami` and returns the result.
func login(t *testing.T, c *harness.Client, user string) harness.Result {
	t.Helper()
	return harness.Run(c.SSH(testCtx(t, 60*time.Second), user, "whoami"), nil)
}

func loggedIn(r harness.Result, user string) bool {
	return r.ExitCode == 0 && strings.TrimSpace(string(r.Stdout)) == user
}

func fingerprint(u *harness.User) string { return ssh.FingerprintSHA256(u.PublicKey) }

package ade2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// okFor matches the successful auth event of user with method.
func okFor(user, method string) func(audit.Event) bool {
	return func(e audit.Event) bool { return e.User == user && e.Method == method && e.Result == "ok" }
}

// TestPasswordLogin: the AD password, checked by a bind as the user, logs
// the OpenSSH client in; the audit names the user, method and rule.
func TestPasswordLogin(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{})
	mustLogin(t, g.passwordClient(t, "password", pw(aliceName)), aliceName, aliceName)
	e := g.waitAudit(t, "password ok", okFor(aliceName, gateway.MethodPassword))
	if e.Rule != ruleName {
		t.Errorf("audit event %+v: want rule %s", e, ruleName)
	}
}

// TestKeyLogin: a key from the user's sshPublicKey attribute in AD logs in.
func TestKeyLogin(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{})
	u := users[aliceName]
	mustLogin(t, g.keyClient(u), aliceName, aliceName)
	e := g.waitAudit(t, "publickey ok", okFor(aliceName, gateway.MethodPublicKey))
	if want := sshFingerprint(u); e.KeyFP != want {
		t.Errorf("audited key %s, want %s", e.KeyFP, want)
	}

	// A key that is not in AD is refused, even for a valid user.
	other, err := harness.NewUser(t.TempDir(), "stranger", "")
	if err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, g.keyClient(other), aliceName)
	g.waitAudit(t, "unknown key refused", func(e audit.Event) bool {
		return e.User == aliceName && e.Result == "fail" && e.KeyFP == sshFingerprint(other) && strings.Contains(e.Reason, "key not authorized")
	})
}

// TestKeyboardInteractiveLogin: one "Password:" prompt, answered through
// SSH_ASKPASS, logs in.
func TestKeyboardInteractiveLogin(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{})
	mustLogin(t, g.passwordClient(t, "keyboard-interactive", pw(aliceName)), aliceName, aliceName)
	g.waitAudit(t, "keyboard-interactive ok", okFor(aliceName, gateway.MethodKbdInt))
}

// TestNameForms: HPC\alice, alice@realm (any case) and alice+node all land
// as the one Unix user alice, with a key and with a password.
func TestNameForms(t *testing.T) {
	t.Parallel()
	g := shared
	u := users[aliceName]
	upn := aliceName + "@" + dc.UPNSuffix()
	for _, tc := range []struct {
		login  string
		method string
	}{
		{dc.Domain() + `\` + aliceName, "publickey"},
		{strings.ToLower(dc.Domain()) + `\` + strings.ToUpper(aliceName), "publickey"},
		{upn, "publickey"},
		{strings.ToUpper(upn), "publickey"},
		{dc.Domain() + `\` + aliceName, "password"},
		{upn, "keyboard-interactive"},
	} {
		t.Run(tc.method+"/"+tc.login, func(t *testing.T) {
			t.Parallel()
			c := g.keyClient(u)
			if tc.method != "publickey" {
				c = g.passwordClient(t, tc.method, pw(aliceName))
			}
			mustLogin(t, c, tc.login, aliceName)
		})
	}
	// With a node suffix, the user part still takes every form.
	t.Run("node-suffix", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		login := dc.Domain() + `\` + aliceName + "+login2"
		r := harness.Run(g.keyClient(u).SSH(ctx, login, `id -un; echo "$SSH_CONNECTION"`), nil)
		out := strings.Fields(string(r.Stdout))
		if r.ExitCode != 0 || len(out) < 4 || out[0] != aliceName || out[3] != nodeHost("login2") {
			t.Fatalf("ssh -l %q: want %s on login2 (%s), got %v", login, aliceName, nodeHost("login2"), r)
		}
	})
}

// nodeHost is the IP address sshd of the named node listens on.
func nodeHost(name string) string {
	for _, n := range nodes {
		if n.Name == name {
			return n.Addr[:strings.LastIndexByte(n.Addr, ':')]
		}
	}
	return "?"
}

// TestNestedGroupPolicy: the only rule grants the outer group; alice is in
// the inner group only, so she gets in only if nested membership reaches the
// policy. bob, in no granted group, proves who he is and is then told he has
// no access (banner), with a "denied" audit; added to the inner group in AD,
// he gets in once his cached identity expires.
func TestNestedGroupPolicy(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{})

	id, err := g.dir.Lookup(t.Context(), aliceName)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(id.Groups, grpOuter) || !slices.Contains(id.Groups, grpNested) {
		t.Errorf("alice's groups %v: want both %s and %s (nested)", id.Groups, grpNested, grpOuter)
	}
	mustLogin(t, g.keyClient(users[aliceName]), aliceName, aliceName)
	if e := g.waitAudit(t, "alice ok", okFor(aliceName, gateway.MethodPublicKey)); e.Rule != ruleName {
		t.Errorf("alice let in by rule %q, want %q", e.Rule, ruleName)
	}

	bob := users[bobName]
	for _, c := range []*harness.Client{g.keyClient(bob), g.passwordClient(t, "password", pw(bobName))} {
		_, r := whoami(t, c, bobName)
		if r.ExitCode != 255 || !strings.Contains(string(r.Stderr), "frontdoor: your account has no access") {
			t.Fatalf("bob: want the no-access banner, got %v", r)
		}
	}
	for _, method := range []string{gateway.MethodPublicKey, gateway.MethodPassword} {
		g.waitAudit(t, "bob denied by "+method, func(e audit.Event) bool {
			return e.User == bobName && e.Method == method && e.Result == "denied"
		})
	}

	// Membership changes in AD reach the policy after cache_ttl (1s).
	if err := dc.AddMember(t.Context(), grpNested, bobName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.RemoveMember(context.Background(), grpNested, bobName) })
	err = harness.WaitFor(t.Context(), 30*time.Second, func() error {
		got, r := whoami(t, g.keyClient(bob), bobName)
		if got != bobName {
			return &resultError{r}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("bob, now in %s: %v", grpNested, err)
	}
}

func sshFingerprint(u *harness.User) string { return ssh.FingerprintSHA256(u.PublicKey) }

type resultError struct{ r harness.Result }

func (e *resultError) Error() string { return e.r.String() }

// TestKeyFromAltSecurityIdentities: with key_attribute altSecurityIdentities
// (the AWS HyperPod AD guide's "SSHKey:" values) the same key logs in.
func TestKeyFromAltSecurityIdentities(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{Edit: func(c *config.Config) { c.Directory.AD.KeyAttribute = "altSecurityIdentities" }})
	mustLogin(t, g.keyClient(users[aliceName]), aliceName, aliceName)
}

// TestKeyRemovedFromAD: a key deleted from AD stops working once the cached
// identity is older than cache_ttl (1s); another key added works.
func TestKeyRemovedFromAD(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{})
	ctx := t.Context()
	name := uniqueName("ade-rmkey")
	u, err := createUser(ctx, name, grpNested)
	if err != nil {
		t.Fatal(err)
	}
	mustLogin(t, g.keyClient(u), name, name)
	next, err := harness.NewUser(t.TempDir(), name, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := dc.SetSSHKey(ctx, name, next.AuthorizedKey()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = harness.WaitFor(ctx, 30*time.Second, func() error {
		if got, r := whoami(t, g.keyClient(u), name); got == name || r.ExitCode != 255 {
			return &resultError{r}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("key removed from AD still logs in: %v", err)
	}
	t.Logf("old key refused %v after it was replaced in AD", time.Since(start).Round(time.Millisecond))
	g.waitAudit(t, "old key refused", func(e audit.Event) bool {
		return e.User == name && e.Result == "fail" && e.KeyFP == sshFingerprint(u) && strings.Contains(e.Reason, "key not authorized")
	})
	mustLogin(t, g.keyClient(next), name, name)
}

// TestKeyOptionsNotBypassed: frontdoor cannot enforce authorized_keys options
// (from=, command=, ...), so a key carrying them in AD must not log in at
// all rather than log in without its restriction; the user's other,
// unrestricted key still works.
func TestKeyOptionsNotBypassed(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{})
	ctx := t.Context()
	name := uniqueName("ade-keyopts")
	restricted, err := createUser(ctx, name, grpNested)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := harness.NewUser(t.TempDir(), name, "")
	if err != nil {
		t.Fatal(err)
	}
	err = dc.SetSSHKey(ctx, name, `from="192.0.2.1",command="/bin/false" `+restricted.AuthorizedKey(), plain.AuthorizedKey())
	if err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, g.keyClient(restricted), name)
	mustLogin(t, g.keyClient(plain), name, name)
}

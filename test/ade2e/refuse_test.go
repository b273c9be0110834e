package ade2e_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// failFor matches a failed auth event of user with method whose reason
// contains reason.
func failFor(user, method, reason string) func(audit.Event) bool {
	return func(e audit.Event) bool {
		return e.User == user && e.Method == method && e.Result == "fail" && strings.Contains(e.Reason, reason)
	}
}

// refusedEverywhere asserts that user is refused with key, password and
// keyboard-interactive, each with the audit reason.
func refusedEverywhere(t *testing.T, g *adGateway, user, reason string) {
	t.Helper()
	mustRefuse(t, g.keyClient(users[user]), user)
	mustRefuse(t, g.passwordClient(t, "password", pw(user)), user)
	mustRefuse(t, g.passwordClient(t, "keyboard-interactive", pw(user)), user)
	for _, m := range []string{gateway.MethodPublicKey, gateway.MethodPassword, gateway.MethodKbdInt} {
		g.waitAudit(t, m+" refused: "+reason, failFor(user, m, reason))
	}
	for _, e := range g.authEvents(t, user) {
		if e.Result != "fail" {
			t.Errorf("%s: unexpected audit event %+v", user, e)
		}
	}
}

// TestDisabledAccountRefused: a disabled AD account (userAccountControl
// ACCOUNTDISABLE) is refused with the right password and its AD key; the
// client only sees "Permission denied".
func TestDisabledAccountRefused(t *testing.T) {
	t.Parallel()
	refusedEverywhere(t, newGateway(t, gwOptions{}), disName, "ad: account disabled")
}

// TestExpiredAccountRefused: accountExpires in the past refuses key and
// password logins.
func TestExpiredAccountRefused(t *testing.T) {
	t.Parallel()
	refusedEverywhere(t, newGateway(t, gwOptions{}), expName, "ad: account expired")
}

// TestPasswordExpiredRefused: "must change password at next logon" refuses
// key logins too (no bind happens for them, so frontdoor must check).
func TestPasswordExpiredRefused(t *testing.T) {
	t.Parallel()
	refusedEverywhere(t, newGateway(t, gwOptions{}), pwxName, "ad: password expired or must be changed")
}

// TestDisabledWhileCached: an account disabled in AD after it logged in is
// refused once its cached identity is older than cache_ttl (1s).
func TestDisabledWhileCached(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{})
	ctx := t.Context()
	name := uniqueName("ade-latedis")
	u, err := createUser(ctx, name, grpNested)
	if err != nil {
		t.Fatal(err)
	}
	mustLogin(t, g.keyClient(u), name, name)
	if err := dc.Disable(ctx, name); err != nil {
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
		t.Fatalf("disabled account still logs in: %v", err)
	}
	t.Logf("refused %v after the account was disabled", time.Since(start).Round(time.Millisecond))
	g.waitAudit(t, "refused after disable", failFor(name, gateway.MethodPublicKey, "ad: account disabled"))
}

// TestWrongPasswordRefused: a wrong password is refused with AD's 52e
// sub-code in the audit, with both password methods; an unknown account is
// refused the same way to the client. The right password still works.
func TestWrongPasswordRefused(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{})
	for _, m := range []string{"password", "keyboard-interactive"} {
		mustRefuse(t, g.passwordClient(t, m, "Wrong-Passw0rd!"), wrongName)
		g.waitAudit(t, m+" 52e", failFor(wrongName, m, "ad: 52e invalid credentials"))
	}
	const ghost = "ade-nosuchuser"
	mustRefuse(t, g.passwordClient(t, "password", pw(ghost)), ghost)
	mustRefuse(t, g.keyClient(users[aliceName]), ghost)
	g.waitAudit(t, "no such account (password)", failFor(ghost, gateway.MethodPassword, "ad: no such account"))
	g.waitAudit(t, "no such account (key)", failFor(ghost, gateway.MethodPublicKey, "ad: no such account"))

	mustLogin(t, g.passwordClient(t, "password", pw(wrongName)), wrongName, wrongName)
}

// TestEmptyPasswordRefused: an empty password, which AD would take for an
// anonymous bind and accept, is refused by OpenSSH and Go clients alike,
// with both password methods; the directory refuses it on its own too.
func TestEmptyPasswordRefused(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{})
	ctx := t.Context()
	for _, m := range []string{"password", "keyboard-interactive"} {
		mustRefuse(t, g.passwordClient(t, m, ""), emptyName)
	}
	for _, auth := range []ssh.AuthMethod{
		ssh.Password(""),
		ssh.KeyboardInteractive(func(_, _ string, q []string, _ []bool) ([]string, error) { return make([]string, len(q)), nil }),
	} {
		if err := g.dialGo(ctx, emptyName, auth); err == nil {
			t.Fatal("empty password logged in")
		}
	}
	for _, m := range []string{gateway.MethodPassword, gateway.MethodKbdInt} {
		g.waitAudit(t, m+" empty", failFor(emptyName, m, "empty password"))
	}
	for _, e := range g.authEvents(t, emptyName) {
		if e.Result != "fail" || !strings.Contains(e.Reason, "empty password") {
			t.Errorf("unexpected audit event %+v", e)
		}
	}
	if _, err := g.dir.VerifyPassword(ctx, emptyName, ""); !errors.Is(err, directory.ErrBadPassword) {
		t.Errorf("directory VerifyPassword with an empty password: %v, want ErrBadPassword", err)
	}
	mustLogin(t, g.passwordClient(t, "password", pw(emptyName)), emptyName, emptyName)
}

// injectionNames are names that must never match an account: LDAP filter
// and DN metacharacters, NUL, control characters, non-UTF-8, lookalikes,
// overlong input and foreign domains. Each is tried with the credentials of
// the account an unescaped filter, a truncating C string or a lenient
// comparison would land on (ade-inject).
var injectionNames = []string{
	"*",
	")(uid=*",
	"ade-injec*",
	"ade-inject)(objectClass=*",
	"*)(sAMAccountName=ade-inject",
	"ade-inject)(|(sAMAccountName=*",
	`ade-inject\2a`,
	"ade-inject\x00",
	"ade-inject\x00junk",
	"\x00",
	`HPC\*`,
	"HPC\\ade-inject\x00",
	`OTHER\ade-inject`,
	`HPC\HPC\ade-inject`,
	"ade-inject@*",
	"*@hpc.example.edu",
	"ade-inject@evil.example",
	"ade-inject@hpc.example.edu@evil.example",
	"CN=ade-inject,CN=Users,DC=hpc,DC=example,DC=edu",
	"ade-inject,CN=Users",
	"ade-inject ",
	" ade-inject",
	"ade-inject\t",
	"ade-inject\n",
	"ade-inject\xff",
	"\xc0\xafade-inject",
	"ade-\u0131nject",  // dotless i
	"ade-inject\u200b", // zero-width space
	"ade-injec\u0442",  // Cyrillic te
	"ade-inject+login1+x",
	"ade-inject-" + strings.Repeat("a", 10), // 21 characters: longer than a sAMAccountName
	strings.Repeat("a", 300),
	strings.Repeat("*", 1000),
}

// invalidReasons are the audit reasons of names refused before any LDAP
// request.
var invalidReasons = []string{
	"ad: bad characters or length", "ad: unknown domain prefix", "ad: unknown UPN suffix",
	"ad: name too long", "ad: empty name", "invalid user name",
}

// TestInjectionNamesRefused: every injection name is refused with all three
// methods before reaching AD (the audit reasons say so), and the account
// they aim at, and the others, are unaffected: they log in afterwards.
func TestInjectionNamesRefused(t *testing.T) {
	t.Parallel()
	g := newGateway(t, gwOptions{})
	ctx := t.Context()
	target := users[injectName]
	kbd := ssh.KeyboardInteractive(func(_, _ string, q []string, _ []bool) ([]string, error) {
		a := make([]string, len(q))
		for i := range a {
			a[i] = pw(injectName)
		}
		return a, nil
	})
	for _, name := range injectionNames {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := g.dialGo(dctx, name, ssh.PublicKeys(target.Signer), ssh.Password(pw(injectName)), kbd)
		cancel()
		if err == nil {
			t.Errorf("name %q logged in", name)
		} else if !strings.Contains(err.Error(), "unable to authenticate") {
			t.Errorf("name %q: %v, want an authentication failure", name, err)
		}
	}
	// The names OpenSSH users can type, through the real client. (OpenSSH
	// 9.2 itself refuses user names with shell metacharacters such as ")(uid=*":
	// "remote username contains invalid characters"; the Go client sent
	// those above.)
	for _, name := range []string{"*", "ade-injec*", `HPC\*`} {
		mustRefuse(t, g.keyClient(target), name)
		mustRefuse(t, g.passwordClient(t, "password", pw(injectName)), name)
	}

	evs := g.audits(t)
	n := 0
	for _, e := range evs {
		if e.Type != audit.TypeAuth {
			continue
		}
		n++
		known := false
		for _, r := range invalidReasons {
			known = known || strings.Contains(e.Reason, r)
		}
		if e.Result != "fail" || !known {
			t.Errorf("injection attempt audited as %s %q (user %q): want a name refusal before any LDAP request", e.Result, e.Reason, e.User)
		}
	}
	// Three methods per Go attempt (the key is only queried), two per
	// OpenSSH attempt.
	if min := 3*len(injectionNames) + 6; n < min {
		t.Errorf("%d auth events audited, want at least %d:\n%s", n, min, g.auditDump(t))
	}

	// No effect on the target or anyone else: no lockout, no throttling.
	mustLogin(t, g.keyClient(target), injectName, injectName)
	mustLogin(t, g.passwordClient(t, "password", pw(injectName)), injectName, injectName)
	mustLogin(t, g.passwordClient(t, "keyboard-interactive", pw(aliceName)), aliceName, aliceName)
}

// TestThrottle: after user_failures wrong passwords for one user, even the
// right password is refused without asking AD (audit: throttled), for every
// form of the name; another user logging in from the same address at the
// same time is not affected, and key logins of the throttled user still
// work.
func TestThrottle(t *testing.T) {
	t.Parallel()
	// One address (127.0.0.1): the pair's allowance is the account's.
	g := newGateway(t, gwOptions{Edit: func(c *config.Config) {
		c.Throttle.UserFailures, c.Throttle.UserSourceFailures, c.Throttle.UserWindow = 2, 2, 10*time.Minute
	}})
	for i := range 2 {
		mustRefuse(t, g.passwordClient(t, "password", "Wrong-Passw0rd-"+string(rune('a'+i))), thrName)
	}
	if evs := g.authEvents(t, thrName); len(evs) != 2 || !strings.Contains(evs[1].Reason, "52e") {
		t.Fatalf("want two 52e failures first:\n%s", g.auditDump(t))
	}
	for _, login := range []string{thrName, dc.Domain() + `\` + thrName, thrName + "@" + dc.UPNSuffix()} {
		mustRefuse(t, g.passwordClient(t, "password", pw(thrName)), login)
	}
	mustRefuse(t, g.passwordClient(t, "keyboard-interactive", pw(thrName)), thrName)
	throttled := 0
	for _, e := range g.authEvents(t, thrName)[2:] {
		if e.Result == "fail" && strings.Contains(e.Reason, "throttled") {
			throttled++
		} else {
			t.Errorf("after the limit: audit %q %q, want throttled", e.Result, e.Reason)
		}
	}
	if throttled != 4 {
		t.Errorf("%d throttled attempts audited, want 4:\n%s", throttled, g.auditDump(t))
	}
	mustLogin(t, g.passwordClient(t, "password", pw(thrOkName)), thrOkName, thrOkName)
	mustLogin(t, g.keyClient(users[thrName]), thrName, thrName)
}

// TestThrottleUPNAlias: in AD a user's UPN prefix often differs from the
// sAMAccountName (jdoe vs john.doe@hpc.example.edu). Both names log in as
// the same account, so they must share one failure allowance: otherwise
// alternating the two forms doubles the wrong passwords that reach AD, and
// a user_failures set just below AD's lockout threshold no longer protects
// the account from being locked out through frontdoor.
func TestThrottleUPNAlias(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g := newGateway(t, gwOptions{Edit: func(c *config.Config) {
		c.Throttle.UserFailures, c.Throttle.UserSourceFailures, c.Throttle.UserWindow = 2, 2, 10*time.Minute
	}})
	name := uniqueName("ade-jdoe")
	u, err := createUser(ctx, name, grpNested)
	if err != nil {
		t.Fatal(err)
	}
	upn := "ade-john.doe" + name[len("ade-jdoe"):] + "@" + dc.UPNSuffix()
	if err := dc.SetAttribute(ctx, name, "userPrincipalName", upn); err != nil {
		t.Fatal(err)
	}
	// Both forms are the same account.
	mustLogin(t, g.keyClient(u), upn, name)
	mustLogin(t, g.passwordClient(t, "password", pw(name)), upn, name)

	for _, login := range []string{name, name, upn, upn} {
		mustRefuse(t, g.passwordClient(t, "password", "Wrong-Passw0rd!"), login)
	}
	var toAD []string
	for _, e := range g.authEvents(t, name) {
		if e.Result == "fail" && strings.Contains(e.Reason, "52e") {
			toAD = append(toAD, e.Reason)
		}
	}
	if len(toAD) != 2 {
		t.Errorf("%d wrong passwords reached AD with user_failures 2 (sAMAccountName and UPN alternating), want 2:\n%s", len(toAD), g.auditDump(t))
	}
}

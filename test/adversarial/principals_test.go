package adversarial_test

import (
	"context"
	"os/exec"
	"os/user"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// No directory entry may become a certificate for a system account
// (issue 8, part 5). AD accounts named root and ubuntu (HyperPod's admin
// user), and one whose uidNumber is below backend.min_uid, each prove
// their own key — and are refused at the gateway, with the reason in the
// audit log and a short banner for the user. With the gateway's own
// checks switched off as far as the configuration allows (empty deny
// list, min_uid 0), root is still refused by the gateway, and the low-uid
// account by the login node itself (`frontdoor authorized-principals
// --min-uid 1000`, the deploy/ drop-in), whose local account is a system
// user.
func TestSystemPrincipalsRefused(t *testing.T) {
	ctx := t.Context()
	root := mustActor(t, ctx, "root")
	ubuntu := mustActor(t, ctx, "ubuntu")
	low := mustActor(t, ctx, "adv-lowuid")
	if err := dc.SetAttribute(ctx, low.name, "uidNumber", "999"); err != nil {
		t.Fatal(err)
	}
	// The node's account of the same name is a system user (uid < 1000).
	if _, err := user.Lookup(low.name); err != nil {
		if out, err := exec.Command("useradd", "-r", "-M", "-s", "/bin/bash", "-p", "*", low.name).CombinedOutput(); err != nil {
			t.Fatalf("useradd -r %s: %v: %s", low.name, err, out)
		}
	}
	if uid, _, err := harness.UnixIDs(low.name); err != nil || uid >= 1000 {
		t.Fatalf("local %s: uid %d, %v; want a system uid", low.name, uid, err)
	}

	strict := newGateway(t, gwOptions{}) // defaults: min_uid 1000, deny list
	loose := newGateway(t, gwOptions{Edit: func(c *config.Config) { c.Backend.DenyPrincipals, c.Backend.MinUID = []string{}, 0 }})
	for _, tt := range []struct {
		gw     string
		g      *harness.Gateway
		login  string
		a      *actor
		reason string // in the audit event of the refusal
		result string
	}{
		{"strict", strict, "root", root, `principal "root" is on backend.deny_principals`, "denied"},
		{"strict", strict, "ROOT", root, `is on backend.deny_principals`, "denied"},
		{"strict", strict, "root+login1", root, `principal "root" is on backend.deny_principals`, "denied"},
		{"strict", strict, "ubuntu", ubuntu, `principal "ubuntu" is on backend.deny_principals`, "denied"},
		{"strict", strict, low.name, low, `has uid 999, below backend.min_uid 1000`, "denied"},
		{"loose", loose, "root", root, "principal root is never allowed", "denied"},
		{"loose", loose, "Root", root, "principal root is never allowed", "denied"},
		// The gateway lets it through; login1 and login2 refuse the
		// certificate: the node's own lock.
		{"loose", loose, low.name, low, "refused the login certificate", audit.ResultError},
	} {
		t.Run(tt.gw+"/"+tt.login, func(t *testing.T) {
			before := len(audits(t, tt.g))
			rc := dialRaw(t, tt.g, "")
			userauth(t, rc)
			expect(t, "query", send(t, rc, "query", rawssh.PublicKeyQuery(tt.login, tt.a.pub, "")), rawssh.ReplyPKOK)
			r := send(t, rc, "sign", signed(t, rc, tt.login, tt.a))
			expect(t, "sign", r, rawssh.ReplyFailure)
			if len(r.Banners) != 1 || !strings.Contains(r.Banners[0], "frontdoor: ") {
				t.Errorf("banners %q, want one frontdoor message", r.Banners)
			}
			var found bool
			evs := audits(t, tt.g)[before:]
			for _, e := range evs {
				if e.Result == "ok" {
					t.Errorf("audit: %s ok for %q", e.Type, e.User)
				}
				if e.Type == audit.TypeAuth && e.Result == tt.result && strings.Contains(e.Reason, tt.reason) {
					found = true
				}
			}
			if !found {
				t.Errorf("no auth event %s with reason %q:\n%s", tt.result, tt.reason, dump(evs))
			}
		})
	}
	// Password logins meet the same check (root's password is right).
	rc := dialRaw(t, strict, "")
	userauth(t, rc)
	r := send(t, rc, "password root", rawssh.PasswordRequest("root", root.password))
	expect(t, "password root", r, rawssh.ReplyFailure)
	e := lastAuth(t, strict, "root")
	if e.Result != "denied" || !strings.Contains(e.Reason, "deny_principals") || e.Method != "password" {
		t.Errorf("root by password: %+v", e)
	}
}

func mustActor(t *testing.T, ctx context.Context, name string) *actor {
	t.Helper()
	u, err := harness.NewUser(t.TempDir(), name, "", group)
	if err != nil {
		t.Fatal(err)
	}
	u.Password = pw(name)
	if _, err := dc.CreateUser(ctx, name, u.Password, group); err != nil {
		t.Fatalf("AD account %s: %v", name, err)
	}
	t.Cleanup(func() { dc.DeleteUser(context.Background(), name) })
	if err := dc.SetSSHKey(ctx, name, u.AuthorizedKey()); err != nil {
		t.Fatal(err)
	}
	a, err := newActor(u)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

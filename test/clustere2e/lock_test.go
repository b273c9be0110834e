package clustere2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// lockBound is how long a lock made on one gateway may take to hold on
// the other (and an unlock or expiry to end): the direct send is
// coalesced for 20 ms; the rest is a loaded 2-core machine.
const lockBound = 3 * time.Second

// The locked user's words and the admin's reason: the first reaches the
// user, the second never does.
const (
	lockMessage = "call the help desk, ext 4242"
	lockReason  = "incident-7 stolen key"
)

// TestAccountLock: `frontdoor lock` on one gateway refuses the account's
// key and password logins on both, in every form of its name, within
// lockBound; --end-sessions closes its open OpenSSH session with the
// message on its terminal; the lock survives a restart of every gateway;
// --expire ends it; `frontdoor unlock` on the other gateway lifts it; a
// read-only token can do none of it.
func TestAccountLock(t *testing.T) {
	// A user with a password too (the pool's have keys only), in a users
	// file of this test's own.
	udir, err := os.MkdirTemp(base, "lock-users-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(udir, 0o755)
	pwName := userPrefix + "90"
	if err := harness.EnsureUnixUser(pwName); err != nil {
		t.Fatal(err)
	}
	pwUser, err := harness.NewUser(udir, pwName, "pw-"+filepath.Base(udir), "researchers")
	if err != nil {
		t.Fatal(err)
	}
	ufile := filepath.Join(udir, "users.yaml")
	if err := harness.WriteUsersFile(ufile, append(append([]*harness.User{}, users...), pwUser)...); err != nil {
		t.Fatal(err)
	}
	askpass, err := harness.WriteAskpass(udir, pwUser.Password)
	if err != nil {
		t.Fatal(err)
	}
	// An admin TCP listener per gateway with a full and a read-only token.
	const opsToken, roToken = "ops-token-0123456789abcdefghij", "dash-token-0123456789abcdefghij"
	tokens := filepath.Join(udir, "admin_tokens")
	if err := os.WriteFile(tokens, []byte("ops "+opsToken+"\ndash "+roToken+" read-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	adminTCP := map[string]string{"gw1": freeAddr(t, "127.0.0.1"), "gw2": freeAddr(t, "127.0.0.1")}
	w := newWorldOpts(t, worldOpts{edit: func(c *config.Config) {
		c.Directory.Static.File = ufile
		c.Gateway.AdminListen, c.Gateway.AdminTokenFile = adminTCP[c.Gateway.Name], tokens
	}}, 1.0, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gw1, gw2 := w.gws[0], w.gws[1]
	victim, bystander, brief := w.freshUser(), w.freshUser(), w.freshUser()
	pwClient := func(g *gw) *harness.Client {
		c := w.client(g, pwUser)
		c.Identity, c.Askpass = "", askpass
		return c
	}

	// Before any lock: key and password logins work through both (so the
	// refusals below are the lock's).
	for _, g := range w.gws {
		w.mustSSH(ctx, g, victim.Name, victim)
		if r := harness.Run(pwClient(g).SSH(ctx, pwName, "true"), nil); r.ExitCode != 0 {
			t.Fatalf("password login via %s before the lock: %s", g.name, r)
		}
	}
	// The victim's open interactive session, through gw2.
	term, err := harness.StartTerminal(w.client(gw2, victim).SSH(ctx, victim.Name, "-tt"), 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	pos, err := term.Expect(ctx, 0, victim.Name+"@", 45*time.Second)
	if err != nil {
		t.Fatalf("victim's shell: %v", err)
	}

	// A read-only token can lock nobody, through either gateway.
	for _, g := range w.gws {
		r := w.cliEnv(ctx, []string{"FRONTDOOR_ADMIN_TOKEN=" + roToken}, "lock", "--admin", "http://"+adminTCP[g.name], victim.Name)
		if r.ExitCode == 0 || !strings.Contains(string(r.Stderr), "read-only") {
			t.Fatalf("a read-only token locked via %s: %s", g.name, r)
		}
	}
	if locked, text := w.lockedOn(gw1, victim.Name); locked {
		t.Fatalf("after the read-only attempt the victim should still log in:\n%s", text)
	}

	// Lock on gw1 (over TCP with the full token), in a form of the name
	// the directory normalises: upper case and a +node suffix.
	r := w.cliEnv(ctx, []string{"FRONTDOOR_ADMIN_TOKEN=" + opsToken}, "lock", "--admin", "http://"+adminTCP["gw1"],
		"--reason", lockReason, "--message", lockMessage, "--end-sessions", strings.ToUpper(victim.Name)+"+login1")
	if r.ExitCode != 0 || !strings.Contains(string(r.Stdout), victim.Name+": locked on every gateway (by token:ops)") {
		t.Fatalf("frontdoor lock: %s", r)
	}
	took := w.waitLocked(victim.Name, true)
	t.Logf("lock made on gw1 refused by both gateways after %s", took.Round(time.Millisecond))
	if took > lockBound {
		t.Errorf("the lock took %s to hold on both gateways, more than %s", took, lockBound)
	}
	if r := w.cli(ctx, "lock", "--admin", gw1.admin, pwName); r.ExitCode != 0 {
		t.Fatalf("frontdoor lock %s: %s", pwName, r)
	}
	w.waitLocked(pwName, true)

	// The open session is closed, the message on its terminal.
	if _, err := term.Expect(ctx, pos, "closing this session: your account was locked by the administrators: "+lockMessage, 15*time.Second); err != nil {
		t.Fatalf("no notice on the locked session's terminal: %v", err)
	}
	if _, err := term.Wait(15 * time.Second); err != nil {
		t.Fatalf("the locked session's ssh did not end: %v", err)
	}
	if strings.Contains(term.Output(), lockReason) {
		t.Fatalf("the admin's reason reached the user's terminal: %q", term.Output())
	}

	w.checkLocked(ctx, victim, pwClient, true)
	// Others are not affected.
	for _, g := range w.gws {
		w.mustSSH(ctx, g, bystander.Name, bystander)
	}

	// Audit: the lock by the token's admin, and the refused logins.
	w.waitAudit(gw1, func(e auditEvent) bool {
		return e.Type == "admin" && e.User == "token:ops" && strings.HasPrefix(e.Reason, "lock "+victim.Name+" (reason: "+lockReason)
	}, "the lock")
	for _, g := range w.gws {
		w.waitAudit(g, func(e auditEvent) bool {
			return e.Type == "auth" && e.User == victim.Name && e.Result == "denied" && strings.Contains(e.Reason, "account locked by token:ops: "+lockReason)
		}, "a refused key login")
		w.waitAudit(g, func(e auditEvent) bool {
			return e.Type == "auth" && e.User == pwName && (e.Method == "password" || e.Method == "keyboard-interactive") &&
				e.Result == "denied" && strings.Contains(e.Reason, "account locked")
		}, "a refused password login")
	}

	// The lists: reasons for full admins, none in the status.
	var ls []admin.Lock
	if r := w.cli(ctx, "locks", "--admin", gw2.admin, "-o", "json"); r.ExitCode != 0 || json.Unmarshal(r.Stdout, &ls) != nil {
		t.Fatalf("frontdoor locks: %s", r)
	}
	if len(ls) != 2 || ls[0].User != victim.Name || ls[0].Reason != lockReason || ls[0].Message != lockMessage ||
		!ls[0].EndSessions || ls[0].Gateway != "gw1" || ls[1].User != pwName {
		t.Fatalf("locks on gw2: %+v", ls)
	}
	var st admin.Status
	if err := harness.AdminGetJSON(ctx, gw2.admin, "/v1/status", &st); err != nil || len(st.Locks) != 2 || st.Locks[0].Reason != "" {
		t.Fatalf("status locks: %+v %v", st.Locks, err)
	}
	if r := w.cliEnv(ctx, []string{"FRONTDOOR_ADMIN_TOKEN=" + roToken}, "locks", "--admin", "http://"+adminTCP["gw2"]); r.ExitCode == 0 {
		t.Fatalf("a read-only token listed the reasons: %s", r)
	}

	// A lock with an expiry: it ends by itself.
	if r := w.cli(ctx, "lock", "--admin", gw2.admin, "--expire", "4s", brief.Name); r.ExitCode != 0 {
		t.Fatalf("frontdoor lock --expire: %s", r)
	}
	w.waitLocked(brief.Name, true)

	// Every gateway restarts: the locks come back from their files.
	for _, g := range w.gws {
		g.proc.stop()
	}
	for _, g := range w.gws {
		if err := w.restartGateway(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range w.gws {
		if locked, text := w.lockedOn(g, victim.Name); !locked {
			t.Fatalf("%s after the restart of every gateway: the lock is gone:\n%s", g.name, text)
		}
	}
	w.checkLocked(ctx, victim, pwClient, true)
	if _, err := w.waitAll(30*time.Second, func(v view) error {
		for _, n := range w.nodes {
			if err := v.usable(n.name); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("nodes after the restart: %v", err)
	}

	// The expiry passes (restart included): brief logs in again.
	took = w.waitLocked(brief.Name, false)
	t.Logf("the expiring lock ended %s after the restart", took.Round(time.Millisecond))
	w.mustSSH(ctx, gw1, brief.Name, brief)

	// Unlock through the other gateway.
	start := time.Now()
	for _, u := range []string{victim.Name, pwName} {
		if r := w.cli(ctx, "unlock", "--admin", gw2.admin, u); r.ExitCode != 0 || !strings.Contains(string(r.Stdout), u+": unlocked on every gateway") {
			t.Fatalf("frontdoor unlock %s: %s", u, r)
		}
	}
	w.waitLocked(victim.Name, false)
	t.Logf("unlock made on gw2 lifted on both gateways after %s", time.Since(start).Round(time.Millisecond))
	w.checkLocked(ctx, victim, pwClient, false)
	if r := w.cli(ctx, "locks", "--admin", gw1.admin); r.ExitCode != 0 || !strings.Contains(string(r.Stdout), "(none)") {
		t.Fatalf("frontdoor locks after the unlocks: %s", r)
	}
}

// waitLocked waits until explain on every gateway refuses user as locked
// (want) or no longer does, and returns how long that took.
func (w *world) waitLocked(user string, want bool) time.Duration {
	w.t.Helper()
	start := time.Now()
	for _, g := range w.gws {
		if err := harness.WaitFor(context.Background(), 30*time.Second, func() error {
			if got, text := w.lockedOn(g, user); got != want {
				return fmt.Errorf("%s: %s locked %v, want %v:\n%s", g.name, user, got, want, text)
			}
			return nil
		}); err != nil {
			w.t.Fatal(err)
		}
	}
	return time.Since(start)
}

// lockedOn reports whether g's explain refuses user as locked.
func (w *world) lockedOn(g *gw, user string) (bool, string) {
	text, err := harness.AdminGet(context.Background(), g.admin, "/v1/explain?user="+user)
	if err != nil {
		return false, err.Error()
	}
	return strings.Contains(text, "refused: account locked by "), text
}

// checkLocked logs in with OpenSSH through each gateway with the key of u
// (as u and u+login1) and with the password user's password, and checks
// they are refused with the lock's message (locked) or let in.
func (w *world) checkLocked(ctx context.Context, u *harness.User, pwClient func(*gw) *harness.Client, locked bool) {
	w.t.Helper()
	for _, g := range w.gws {
		for _, login := range []string{u.Name, u.Name + "+login1"} {
			_, r := w.sshNode(ctx, g, login, u)
			w.checkRefusal(g, "key login "+login, r, locked, lockMessage)
		}
		r := harness.Run(pwClient(g).SSH(ctx, userPrefix+"90", "true"), nil)
		w.checkRefusal(g, "password login", r, locked, "contact them if you do not know why")
	}
}

func (w *world) checkRefusal(g *gw, what string, r harness.Result, locked bool, msg string) {
	w.t.Helper()
	switch {
	case !locked && r.ExitCode != 0:
		w.t.Fatalf("%s via %s should work: %s", what, g.name, r)
	case !locked:
	case r.ExitCode != 255:
		w.t.Fatalf("%s via %s should be refused: %s", what, g.name, r)
	case !strings.Contains(string(r.Stderr), "frontdoor: your account is locked on this cluster by its administrators") ||
		!strings.Contains(string(r.Stderr), msg):
		w.t.Fatalf("%s via %s: the refusal does not say the account is locked (%q): %s", what, g.name, msg, r)
	case strings.Contains(string(r.Stderr), lockReason):
		w.t.Fatalf("%s via %s: the admin's reason reached the user: %s", what, g.name, r)
	}
}

// auditEvent is the part of an audit record the lock test reads.
type auditEvent struct {
	Type, User, Method, Result, Reason string
}

// waitAudit waits until g's audit file holds an event for which match is
// true.
func (w *world) waitAudit(g *gw, match func(auditEvent) bool, what string) {
	w.t.Helper()
	path := filepath.Join(filepath.Dir(g.cfg), "audit.jsonl")
	err := harness.WaitFor(context.Background(), 15*time.Second, func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			var e auditEvent
			if json.Unmarshal([]byte(line), &e) == nil && match(e) {
				return nil
			}
		}
		return fmt.Errorf("%s: no audit record of %s in %s", g.name, what, path)
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

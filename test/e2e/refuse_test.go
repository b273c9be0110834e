package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// refused checks a refused login: ssh exits 255 with "Permission denied"
// and, if banner is set, the gateway's message on stderr.
func refused(t *testing.T, r harness.Result, banner string) {
	t.Helper()
	if r.ExitCode != 255 || !strings.Contains(string(r.Stderr), "Permission denied") {
		t.Fatalf("want a refusal (exit 255, Permission denied), got %s", r)
	}
	if banner != "" && !strings.Contains(string(r.Stderr), banner) {
		t.Fatalf("stderr lacks the gateway's message %q: %s", banner, r)
	}
}

// wantAudit waits for an audit event of type typ for user since start whose
// reason contains reason (and whose method is method, if given).
func wantAudit(t *testing.T, ctx context.Context, since time.Time, typ, user, result, reason string, method ...string) audit.Event {
	t.Helper()
	ev, err := gw.WaitAudit(ctx, 30*time.Second, func(e audit.Event) bool {
		return !e.Time.Before(since) && e.Type == typ && e.User == user && e.Result == result &&
			strings.Contains(e.Reason, reason) && (len(method) == 0 || e.Method == method[0])
	})
	if err != nil {
		evs, _ := gw.AuditEvents()
		var mine []audit.Event
		for _, e := range evs {
			if e.User == user && !e.Time.Before(since) {
				mine = append(mine, e)
			}
		}
		t.Fatalf("no audit event type=%s user=%s result=%s reason~%q: %v; this user's events: %+v", typ, user, result, reason, err, mine)
	}
	return ev
}

// stillServes checks the gateway keeps serving after a refusal.
func stillServes(t *testing.T, ctx context.Context) {
	t.Helper()
	r := run(client(alice).SSH(ctx, aliceName, "echo still-serving"), nil)
	mustExit(t, r, 0)
	if string(r.Stdout) != "still-serving\n" {
		t.Fatalf("stdout %q", r.Stdout)
	}
}

func TestRefuseWrongKey(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	since := time.Now()
	mallory, err := harness.NewUser(t.TempDir(), "mallory", "")
	if err != nil {
		t.Fatal(err)
	}
	c := client(alice)
	c.Identity = mallory.KeyPath
	refused(t, run(c.SSH(ctx, aliceName, "true"), nil), "")
	ev := wantAudit(t, ctx, since, audit.TypeAuth, aliceName, "fail", "key not authorized")
	if ev.KeyFP != ssh.FingerprintSHA256(mallory.PublicKey) {
		t.Errorf("audit key_fp %q, want the offered key %s", ev.KeyFP, ssh.FingerprintSHA256(mallory.PublicKey))
	}
	stillServes(t, ctx)
}

// TestPasswordLogin: the right password logs in, a wrong one is refused,
// with both the password and keyboard-interactive methods.
func TestPasswordLogin(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	dir := t.TempDir()
	good, err := harness.WriteAskpass(dir, alice.Password)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := harness.WriteAskpass(dir, "not-"+alice.Password)
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"password", "keyboard-interactive"} {
		t.Run(method, func(t *testing.T) {
			since := time.Now()
			c := client(alice)
			c.Identity = "" // no key: only the password can work
			c.Options = []string{"PreferredAuthentications=" + method}
			c.Askpass = good
			r := run(c.SSH(ctx, aliceName, "echo password-ok"), nil)
			mustExit(t, r, 0)
			if string(r.Stdout) != "password-ok\n" {
				t.Fatalf("stdout %q", r.Stdout)
			}
			wantAudit(t, ctx, since, audit.TypeAuth, aliceName, "ok", "", method)
			c.Askpass = bad
			refused(t, run(c.SSH(ctx, aliceName, "true"), nil), "")
			wantAudit(t, ctx, since, audit.TypeAuth, aliceName, "fail", "bad password", method)
		})
	}
	stillServes(t, ctx)
}

func TestRefuseUnknownUser(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	since := time.Now()
	refused(t, run(client(alice).SSH(ctx, "e2e-nobody", "true"), nil), "")
	wantAudit(t, ctx, since, audit.TypeAuth, "e2e-nobody", "fail", "unknown user")
	stillServes(t, ctx)
}

// TestRefuseNodeWithWrongHostKey: badnode's known_hosts entry does not match
// its key. The user is told, the audit says why, other nodes still work.
func TestRefuseNodeWithWrongHostKey(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	since := time.Now()
	r := run(client(carol).SSH(ctx, carolName+"+badnode", "true"), nil)
	refused(t, r, "frontdoor: login node badnode is not available right now")
	ev := wantAudit(t, ctx, since, audit.TypeBackend, carolName, "fail", "host key verification failed")
	if ev.Node != "badnode" {
		t.Errorf("backend audit event names node %q", ev.Node)
	}
	wantAudit(t, ctx, since, audit.TypeAuth, carolName, audit.ResultError, "no login node")
	// The session ID in the message matches the audit trail.
	if !strings.Contains(string(r.Stderr), "(session "+ev.Session+")") {
		t.Errorf("client message does not carry session %s: %s", ev.Session, r.Stderr)
	}
	r = run(client(carol).SSH(ctx, carolName+"+login1", "echo carol-ok"), nil)
	mustExit(t, r, 0)

	// A node reached at another node's address is refused: login2's key
	// is trusted under the name login2 only.
	since = time.Now()
	r = run(client(carol).SSH(ctx, carolName+"+impostor", "true"), nil)
	refused(t, r, "frontdoor: login node impostor is not available right now")
	ev = wantAudit(t, ctx, since, audit.TypeBackend, carolName, "fail", "host key verification failed")
	if ev.Node != "impostor" {
		t.Errorf("backend audit event names node %q", ev.Node)
	}
	stillServes(t, ctx)
}

func TestRefuseByPolicy(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	since := time.Now()
	refused(t, run(client(dave).SSH(ctx, daveName, "true"), nil), "frontdoor: your access is suspended; mail hpc-help@example.edu")
	wantAudit(t, ctx, since, audit.TypeAuth, daveName, "denied", "denied by policy")
	stillServes(t, ctx)
}

func TestRefuseUnknownNode(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	since := time.Now()
	refused(t, run(client(alice).SSH(ctx, aliceName+"+nosuchnode", "true"), nil), `there is no login node named "nosuchnode"`)
	wantAudit(t, ctx, since, audit.TypeAuth, aliceName, "denied", "route")
	// A pool the user may not use.
	refused(t, run(client(alice).SSH(ctx, aliceName+"+badnode", "true"), nil), "node badnode is in pool broken, which your access does not include")
}

package mfae2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// unlockLine is what the gateway's banner tells a client that cannot
// answer.
const unlockLine = "needs a second factor"

// waitMFA waits for an mfa audit event of user on g with result and a
// reason containing reason.
func waitMFA(t *testing.T, g *harness.Gateway, user, result, reason string) audit.Event {
	t.Helper()
	ev, err := g.WaitAudit(testCtx(t, 20*time.Second), 15*time.Second, func(e audit.Event) bool {
		return e.Type == audit.TypeMFA && e.User == user && e.Result == result && strings.Contains(e.Reason, reason)
	})
	if err != nil {
		t.Fatalf("no mfa audit event %s %q for %s: %v", result, reason, user, err)
	}
	return ev
}

// waitUnlockedOn waits until g's cluster member holds an unlock of u's key.
func waitUnlockedOn(t *testing.T, g *harness.Gateway, u *harness.User, want bool) {
	t.Helper()
	fp := fingerprint(u)
	err := harness.WaitFor(context.Background(), 20*time.Second, func() error {
		if _, ok := g.Parts().Cluster().MFAUnlocked(u.Name, fp); ok != want {
			return fmt.Errorf("%s: unlocked %v on %s", u.Name, ok, g.Config().Gateway.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A key login with the right code unlocks the key: the next login with it,
// through the other gateway and from a client that cannot answer, asks
// nothing. Another key of the same account is asked again.
func TestRightCodeUnlocksKeyOnEveryGateway(t *testing.T) {
	u := users["mfa-alice"]
	r := login(t, client(gw1, u, askpass(t, u.Name, 0, false)), u.Name)
	if !loggedIn(r, u.Name) {
		t.Fatalf("login with the right code: %s", r)
	}
	if !strings.Contains(string(r.Stderr), unlockLine) {
		t.Errorf("the prompt came without the banner line: %s", r.Stderr)
	}
	ev := waitMFA(t, gw1, u.Name, audit.ResultChallenge, "asked: no unlock")
	if ev.KeyFP != fingerprint(u) {
		t.Errorf("challenge audited for key %s, want %s", ev.KeyFP, fingerprint(u))
	}
	waitMFA(t, gw1, u.Name, audit.ResultOK, "unlocked until")

	waitUnlockedOn(t, gw2, u, true)
	r = login(t, client(gw2, u, ""), u.Name)
	if !loggedIn(r, u.Name) {
		t.Fatalf("BatchMode login through gw2 after the unlock: %s", r)
	}
	if strings.Contains(string(r.Stderr), unlockLine) {
		t.Errorf("an unlocked key was asked again: %s", r.Stderr)
	}
	waitMFA(t, gw2, u.Name, audit.ResultOK, "unlocked")

	// The account's other key is not unlocked by the first one's code.
	k2 := second[u.Name]
	start := time.Now()
	r = login(t, client(gw1, k2, ""), u.Name)
	if r.ExitCode == 0 || !strings.Contains(string(r.Stderr), unlockLine) || !strings.Contains(string(r.Stderr), "ssh -t 127.0.9.31") {
		t.Fatalf("second key in BatchMode: want a refusal with the unlock line: %s", r)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("BatchMode refusal took %v: a client that cannot answer must not hang", d)
	}
}

// BatchMode before any unlock: one clear line, and no hang.
func TestBatchModeGetsTheUnlockLine(t *testing.T) {
	u := users["mfa-dave"]
	start := time.Now()
	r := login(t, client(gw2, u, ""), u.Name)
	if r.ExitCode == 0 {
		t.Fatalf("BatchMode login without an unlock succeeded: %s", r)
	}
	if n := strings.Count(string(r.Stderr), unlockLine); n != 1 {
		t.Errorf("the unlock line appears %d times: %s", n, r.Stderr)
	}
	if !strings.Contains(string(r.Stderr), "ssh -t 127.0.9.32") {
		t.Errorf("the line does not say how to unlock: %s", r.Stderr)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v", d)
	}
	waitMFA(t, gw2, u.Name, audit.ResultChallenge, "asked")
}

// The server's challenge (FreeRADIUS asks for the code after "push") is
// the next prompt; its answer unlocks.
func TestChallengeRoundTrip(t *testing.T) {
	u := users["mfa-hank"]
	r := login(t, client(gw1, u, askpass(t, u.Name, 0, true)), u.Name)
	if !loggedIn(r, u.Name) {
		t.Fatalf("login through a challenge: %s", r)
	}
	waitMFA(t, gw1, u.Name, audit.ResultChallenge, "server challenge")
	waitMFA(t, gw1, u.Name, audit.ResultOK, "unlocked until")
}

// A wrong code is refused and counted like a wrong password: a few of them
// and the account's next attempts are refused before RADIUS is asked
// (the password throttle's backoff, and its cluster-wide ban).
func TestWrongCodeRefusedAndCounted(t *testing.T) {
	u := users["mfa-carol"]
	wrong := askpass(t, u.Name, -time.Hour, false)
	throttled := func() bool {
		evs, _ := gw1.AuditEvents()
		for _, e := range evs {
			if e.Type == audit.TypeMFA && e.User == u.Name && e.Result == audit.ResultFail && strings.Contains(e.Reason, "after repeated failures") {
				return true
			}
		}
		return false
	}
	for i := 0; !throttled(); i++ {
		if i == 5 {
			t.Fatal("five wrong codes and the throttle never refused an attempt")
		}
		if r := login(t, client(gw1, u, wrong), u.Name); r.ExitCode == 0 {
			t.Fatalf("wrong code %d logged in: %s", i, r)
		}
	}
	waitMFA(t, gw1, u.Name, audit.ResultFail, "wrong code")
	waitUnlockedOn(t, gw1, u, false)
	// Every test's client is 127.0.0.1: the throttle banned that source
	// too, for its backoff. The next test starts once the ban is over.
	err := harness.WaitFor(context.Background(), time.Minute, func() error {
		for _, g := range []*harness.Gateway{gw1, gw2} {
			if until, ok := g.Parts().Cluster().Banned("addr:127.0.0.1"); ok {
				return fmt.Errorf("127.0.0.1 banned on %s until %v", g.Config().Gateway.Name, until)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// `frontdoor mfa revoke` (the admin API) locks the account's keys again,
// on every gateway.
func TestRevokeLocksAgain(t *testing.T) {
	u := users["mfa-erin"]
	if r := login(t, client(gw1, u, askpass(t, u.Name, 0, false)), u.Name); !loggedIn(r, u.Name) {
		t.Fatalf("unlock: %s", r)
	}
	waitUnlockedOn(t, gw2, u, true)
	out, err := adminPost(testCtx(t, 10*time.Second), gw2.Config().Gateway.AdminSocket, "/v1/mfa/revoke", `{"user":"`+u.Name+`","comment":"lost laptop"}`)
	if err != nil {
		t.Fatalf("revoke: %v %s", err, out)
	}
	waitUnlockedOn(t, gw1, u, false)
	if r := login(t, client(gw1, u, ""), u.Name); r.ExitCode == 0 || !strings.Contains(string(r.Stderr), unlockLine) {
		t.Fatalf("BatchMode after revoke: %s", r)
	}
	evs, _ := gw2.AuditEvents()
	found := false
	for _, e := range evs {
		found = found || (e.Type == audit.TypeAdmin && strings.Contains(e.Reason, "mfa revoke "+u.Name))
	}
	if !found {
		t.Error("the revoke is not audited")
	}
}

// The unlock ends with the rule's window.
func TestWindowEnds(t *testing.T) {
	u := users["mfa-gina"]
	// The gateway unlocks while this login runs, after before: its window
	// ends no earlier than before + briefWindow.
	before := time.Now()
	if r := login(t, client(gw1, u, askpass(t, u.Name, 0, false)), u.Name); !loggedIn(r, u.Name) {
		t.Fatalf("unlock: %s", r)
	}
	unlockedAt := before
	if r := login(t, client(gw1, u, ""), u.Name); !loggedIn(r, u.Name) && time.Since(unlockedAt) < briefWindow {
		t.Fatalf("BatchMode inside the window: %s", r)
	}
	err := harness.WaitFor(context.Background(), 3*briefWindow, func() error {
		if r := login(t, client(gw1, u, ""), u.Name); r.ExitCode == 0 {
			return errors.New("still unlocked")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(unlockedAt); d < briefWindow {
		t.Errorf("locked after %v, before the %v window", d, briefWindow)
	}
}

// With FreeRADIUS down, a rule that requires MFA refuses with a clear
// message; a rule without MFA goes on. (Last: it stops the server and
// starts it again.)
func TestRadiusDown(t *testing.T) {
	radius.Stop()
	t.Cleanup(func() {
		r, err := harness.StartRADIUS(context.Background(), radiusO)
		if err != nil {
			t.Errorf("restarting FreeRADIUS: %v", err)
			return
		}
		radius = r
	})
	u := users["mfa-frank"]
	start := time.Now()
	r := login(t, client(gw1, u, askpass(t, u.Name, 0, false)), u.Name)
	if r.ExitCode == 0 {
		t.Fatalf("logged in with RADIUS down: %s", r)
	}
	if !strings.Contains(string(r.Stderr), "second-factor service cannot be reached") {
		t.Errorf("no clear message: %s", r.Stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("refusal took %v", d)
	}
	waitMFA(t, gw1, u.Name, audit.ResultError, "no RADIUS server answered")
	b := users["mfa-bob"]
	if r := login(t, client(gw1, b, ""), b.Name); !loggedIn(r, b.Name) {
		t.Fatalf("mfa: off rule with RADIUS down: %s", r)
	}
}

// adminPost POSTs a JSON body to the admin API on a Unix socket, as
// `frontdoor mfa revoke` does.
func adminPost(ctx context.Context, socket, path, body string) (string, error) {
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost"+path, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s: %s", path, resp.Status)
	}
	return string(b), nil
}

package slurme2e_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/internal/slurmsync"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
	slurmh "github.com/frontdoor-hpc/frontdoor/test/harness/slurm"
)

// assocs lists user's associations as "account" or "account/partition".
func assocs(t *testing.T, ctx context.Context, user string) []string {
	t.Helper()
	out, err := cl.Run(ctx, "sacctmgr", "--parsable2", "--noheader", "show", "assoc", "where", "user="+user, "format=account,partition")
	if err != nil {
		t.Fatal(err)
	}
	var as []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		acct, part, _ := strings.Cut(l, "|")
		if part != "" {
			acct += "/" + part
		}
		as = append(as, acct)
	}
	return as
}

func planNow(t *testing.T, ctx context.Context) (slurmsync.Result, []slurm.Change) {
	t.Helper()
	res, changes, err := slurmsync.Plan(ctx, thePolicy(), dir, slurm.DefaultParent, client)
	if err != nil {
		t.Fatal(err)
	}
	return res, changes
}

// TestLifecycle walks one cluster's accounting through its life: the first
// plan on an empty database, apply, a plan with nothing left to do, limits
// that hold for real jobs, a user leaving a group, a user joining one (the
// sync notices the directory change), and Slurm going down.
func TestLifecycle(t *testing.T) {
	ctx := testCtx(t, 8*time.Minute)
	au, events := auditLog(t)

	t.Run("first plan", func(t *testing.T) {
		res, changes := planNow(t, ctx)
		diff := slurm.Diff(changes, false)
		t.Logf("first plan:\n%s", diff)
		for _, want := range []string{"+ account sfe-vision", "+ account sfe-course", "+ qos fd-course", "+ user " + alice, "+ user " + bob, "+ user " + carol} {
			if !strings.Contains(diff, want) {
				t.Errorf("plan lacks %q", want)
			}
		}
		// erin is an admin first (no Slurm grant), dave in no group.
		for _, not := range []string{erin, dave} {
			if strings.Contains(diff, not) {
				t.Errorf("plan names %s:\n%s", not, diff)
			}
		}
		if res.Users[erin] != "" {
			t.Errorf("erin got rule %q, want none (admins match first)", res.Users[erin])
		}
	})

	t.Run("apply, then nothing to do", func(t *testing.T) {
		_, changes := planNow(t, ctx)
		rep, err := slurmsync.Apply(ctx, client, changes, au, "test")
		if err != nil {
			t.Fatalf("apply: %v (applied %d)", err, len(rep.Applied))
		}
		if _, again := planNow(t, ctx); slurm.Pending(again) != 0 {
			t.Fatalf("second plan not empty:\n%s", slurm.Diff(again, true))
		}
		n := 0
		for _, e := range events() {
			if e.Type == slurmsync.TypeSlurm && e.Result == "ok" {
				n++
			}
		}
		if n != len(rep.Applied) || n == 0 {
			t.Fatalf("%d audit events for %d applied changes", n, len(rep.Applied))
		}
		if got := strings.Join(assocs(t, ctx, alice), ","); !strings.Contains(got, "sfe-vision/h100") || !strings.Contains(got, "sfe-vision/general") {
			t.Fatalf("alice's associations: %s", got)
		}
	})

	t.Run("unmanaged account untouched", func(t *testing.T) {
		if _, err := cl.Run(ctx, "sacctmgr", "-i", "add", "account", "handmade", "description=made by hand"); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Run(ctx, "sacctmgr", "-i", "add", "user", dave, "account=handmade"); err != nil {
			t.Fatal(err)
		}
		_, changes := planNow(t, ctx)
		if d := slurm.Diff(changes, true); strings.Contains(d, "handmade") || slurm.Pending(changes) != 0 {
			t.Fatalf("plan touches what frontdoor does not manage:\n%s", d)
		}
		if got := assocs(t, ctx, dave); len(got) != 1 || got[0] != "handmade" {
			t.Fatalf("dave's associations: %v", got)
		}
	})

	t.Run("GPU limits hold for jobs", func(t *testing.T) {
		defer cl.CancelAll(ctx)
		// The lab's account holds at most 2 GPUs: alice takes both, bob's
		// job waits with AssocGrpGRES.
		a, err := cl.Submit(ctx, alice, "--account=sfe-vision", "--partition=h100", "--gres=gpu:2", "--wrap=sleep 300")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := cl.WaitJob(ctx, a, time.Minute, "RUNNING"); err != nil {
			t.Fatal(err)
		}
		b, err := cl.Submit(ctx, bob, "--account=sfe-vision", "--partition=h100", "--gres=gpu:1", "--wrap=sleep 300")
		if err != nil {
			t.Fatal(err)
		}
		if st, r, err := cl.WaitJob(ctx, b, time.Minute, "PENDING/AssocGrpGRES"); err != nil {
			t.Fatalf("bob over the account limit: %s (%s): %v", st, r, err)
		}
		// The course allows one GPU per user and refuses more at submit.
		if _, err := cl.Submit(ctx, carol, "--account=sfe-course", "--partition=general", "--gres=gpu:2", "--wrap=sleep 300"); err == nil {
			t.Fatal("carol's 2-GPU job was accepted; deny_on_limit should refuse it")
		} else {
			t.Logf("carol over her limit: %v", err)
		}
		c, err := cl.Submit(ctx, carol, "--account=sfe-course", "--partition=general", "--gres=gpu:1", "--wrap=sleep 300")
		if err != nil {
			t.Fatalf("carol within her limit: %v", err)
		}
		if _, _, err := cl.WaitJob(ctx, c, time.Minute, "RUNNING"); err != nil {
			t.Fatal(err)
		}
		// What the login banner reads: GPUs held now, per user and account.
		uc := &slurm.UsageCache{Client: client, TTL: time.Second, Wait: 10 * time.Second}
		if u := uc.Lookup(ctx, alice, "sfe-vision"); !u.Known || u.User != 2 || u.Account != 2 {
			t.Fatalf("usage for alice: %+v", u)
		}
		if u := uc.Lookup(ctx, carol, "sfe-course"); !u.Known || u.User != 1 || u.Account != 1 {
			t.Fatalf("usage for carol: %+v", u)
		}
	})

	s := &slurmsync.Syncer{Policy: thePolicy(), Dir: dir, Parent: slurm.DefaultParent, Slurm: client, Audit: au,
		Log: slog.New(slog.DiscardHandler), Interval: time.Hour, Watch: 300 * time.Millisecond, Timeout: 2 * time.Minute}

	t.Run("removed from the group, loses the association", func(t *testing.T) {
		if err := dc.RemoveMember(ctx, grpVision, bob); err != nil {
			t.Fatal(err)
		}
		if r := s.Once(ctx); r.Err != nil || r.Applied == 0 {
			t.Fatalf("sync: %+v", r)
		}
		if got := assocs(t, ctx, bob); len(got) != 0 {
			t.Fatalf("bob still has %v", got)
		}
		if got := assocs(t, ctx, alice); len(got) == 0 {
			t.Fatal("alice lost her association too")
		}
	})

	t.Run("directory change triggers a sync", func(t *testing.T) {
		sctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.Run(sctx) }()
		defer func() { stop(); <-done }()
		// Let the first round (at start) settle, then change AD.
		if err := harness.WaitFor(ctx, time.Minute, func() error {
			if _, c := planNow(t, ctx); slurm.Pending(c) != 0 {
				return errors.New("first round not done")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := dc.AddMember(ctx, grpCourse, dave); err != nil {
			t.Fatal(err)
		}
		if err := harness.WaitFor(ctx, time.Minute, func() error {
			for _, a := range assocs(t, ctx, dave) {
				if strings.HasPrefix(a, "sfe-course") {
					return nil
				}
			}
			return errors.New("dave has no sfe-course association yet")
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("dave associated %v after joining the group (sync interval 1h, directory polled every 300ms)", time.Since(start).Round(100*time.Millisecond))
		if got := assocs(t, ctx, dave); !strings.Contains(strings.Join(got, ","), "handmade") {
			t.Fatalf("dave's hand-made association went: %v", got)
		}
	})

	t.Run("a stuck user does not hold up the others", func(t *testing.T) {
		defer cl.CancelAll(ctx)
		// alice has a job running and leaves the lab; bob comes back.
		j, err := cl.Submit(ctx, alice, "--account=sfe-vision", "--partition=h100", "--gres=gpu:1", "--wrap=sleep 300")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := cl.WaitJob(ctx, j, time.Minute, "RUNNING"); err != nil {
			t.Fatal(err)
		}
		if err := dc.RemoveMember(ctx, grpVision, alice); err != nil {
			t.Fatal(err)
		}
		if err := dc.AddMember(ctx, grpVision, bob); err != nil {
			t.Fatal(err)
		}
		r := s.Once(ctx)
		if r.Err == nil || !strings.Contains(r.Err.Error(), alice) {
			t.Fatalf("sync with alice's job running: %+v, want her removal refused", r)
		}
		t.Logf("refused while her job runs: %v", r.Err)
		if got := assocs(t, ctx, bob); len(got) == 0 {
			t.Fatalf("bob was held up by alice's refusal: %+v", r)
		}
		cl.CancelAll(ctx)
		if err := harness.WaitFor(ctx, time.Minute, func() error {
			if r := s.Once(ctx); r.Err != nil {
				return r.Err
			}
			if got := assocs(t, ctx, alice); len(got) != 0 {
				return fmt.Errorf("alice still has %v", got)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Slurm down: a clear error", func(t *testing.T) {
		cl.StopDaemon(slurmh.SlurmDBD)
		defer func() {
			if err := cl.StartDaemon(context.Background(), slurmh.SlurmDBD); err != nil {
				t.Errorf("restart slurmdbd: %v", err)
			}
		}()
		_, _, err := slurmsync.Plan(ctx, thePolicy(), dir, slurm.DefaultParent, client)
		if !errors.Is(err, slurm.ErrUnavailable) {
			t.Fatalf("plan with slurmdbd down: %v, want ErrUnavailable", err)
		}
		t.Logf("plan with slurmdbd down: %v", err)
	})
}

// TestCLI runs `frontdoor slurm plan` and `apply` as an admin would, on a
// gateway configuration with an AD directory and a slurm section.
func TestCLI(t *testing.T) {
	ctx := testCtx(t, 3*time.Minute)
	d := t.TempDir()
	keys, err := harness.Keys(d)
	if err != nil {
		t.Fatal(err)
	}
	pol := thePolicy()
	path, err := harness.WriteGatewayConfig(d, harness.GatewayConfig{Keys: keys, UsersFile: filepath.Join(d, "unused.yaml"),
		Nodes: []harness.NodeEntry{{Name: "login1", Addr: "127.0.0.1:22", Pool: "general"}}, Rules: pol.Rules,
		Edit: func(c *config.Config) {
			c.Directory.Kind, c.Directory.AD = source.KindAD, harness.ADConfig(dc)
			sl := slurm.DefaultConfig()
			sl.Conf, sl.Partitions = cl.Conf(), []string{slurmh.PartitionGeneral, slurmh.PartitionH100}
			c.Slurm = &sl
		}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin, append(args, "--config", path)...).CombinedOutput()
		if err != nil {
			t.Fatalf("frontdoor %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out, err := exec.CommandContext(ctx, bin, "config", "check", path).CombinedOutput(); err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("config check: %v: %s", err, out)
	}
	// alice (re)joins the lab: the plan says so, with the commands.
	dc.RemoveMember(ctx, grpVision, alice) // whether or not the lifecycle ran first
	if err := dc.AddMember(ctx, grpVision, alice); err != nil {
		t.Fatal(err)
	}
	plan := run("slurm", "plan")
	if !strings.Contains(plan, "+ user "+alice) || !strings.Contains(plan, "sacctmgr") {
		t.Fatalf("plan:\n%s", plan)
	}
	applied := run("slurm", "apply")
	if !strings.Contains(applied, "applied: + user "+alice) {
		t.Fatalf("apply:\n%s", applied)
	}
	if again := run("slurm", "plan"); !strings.Contains(again, "nothing to do") {
		t.Fatalf("plan after apply:\n%s", again)
	}
}

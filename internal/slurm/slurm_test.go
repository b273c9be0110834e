package slurm

// Tests against a real Slurm (test/harness/slurm): one cluster per test
// binary, on free ports, started by the first test that needs it and
// stopped in TestMain. Slurm's daemons bind the wildcard address, so on a
// shared machine run them in a network namespace of your own:
//
//	ip netns exec fd-NAME env PATH=$PATH go test -race ./internal/slurm/

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	slurmh "github.com/frontdoor-hpc/frontdoor/test/harness/slurm"
	"github.com/frontdoor-hpc/frontdoor/test/harness/sys"
)

var (
	clusterOnce sync.Once
	cluster     *slurmh.Slurm
	startErr    error
	clusterDir  string
)

// Test users: Unix accounts on this machine (jobs run as them).
const (
	alice = "fdalice" // lab, within the limit
	bob   = "fdbob"   // lab, over the account's limit
	carol = "fdcarol" // lab, and a hand-made account
	dave  = "fddave"  // only in a hand-made account
)

// TestMain stops the one cluster the package's tests share. The cluster
// starts with the first test that needs it, so the pure tests and the
// fuzz workers (separate processes) do not each start a Slurm.
func TestMain(m *testing.M) {
	code := m.Run()
	if cluster != nil {
		if err := cluster.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the slurm test cluster:", err)
			code = 1
		}
	}
	if clusterDir != "" {
		os.RemoveAll(clusterDir)
	}
	os.Exit(code)
}

func startCluster() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if clusterDir, startErr = os.MkdirTemp("/tmp", "fd-slurm-test-"); startErr != nil {
		return
	}
	start := time.Now()
	if cluster, startErr = slurmh.Start(ctx, slurmh.Options{Dir: clusterDir}); startErr != nil {
		return
	}
	fmt.Fprintf(os.Stderr, "slurm test cluster up in %v (%s)\n", time.Since(start).Round(time.Millisecond), cluster.Conf())
	for _, u := range []string{alice, bob, carol, dave} {
		if err := slurmh.EnsureUser(u); err != nil {
			startErr = err
			return
		}
	}
}

func needCluster(t *testing.T) *Client {
	t.Helper()
	clusterOnce.Do(startCluster)
	if startErr != nil {
		t.Fatalf("real Slurm not available: %v", startErr)
	}
	return &Client{Conf: cluster.Conf(), Timeout: 20 * time.Second}
}

// labPolicy is the desired state most steps start from: a lab with a
// 2-GPU account limit and a per-user QOS, a CPU-only course.
func labPolicy() Desired {
	return Desired{
		Accounts: []Account{
			{Name: "lab", Description: "NLP lab", GPULimit: 2, GPUByType: map[string]int{"h100": 2}},
			{Name: "course", Description: "CS101"},
		},
		QOS: []QOS{{Name: "lab-user", MaxGPUPerUser: 2}},
		Users: []User{
			{Name: alice, Assocs: []Assoc{{Account: "lab", QOS: []string{"lab-user"}, DefaultQOS: "lab-user"}}},
			{Name: bob, Assocs: []Assoc{{Account: "lab", QOS: []string{"lab-user"}, DefaultQOS: "lab-user"}}},
			{Name: carol, DefaultAccount: "lab", Assocs: []Assoc{
				{Account: "lab", Partitions: []string{slurmh.PartitionH100}, QOS: []string{"lab-user"}, DefaultQOS: "lab-user"},
				{Account: "course"},
			}},
		},
	}
}

func plan(t *testing.T, c *Client, d Desired) []Change {
	t.Helper()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	cur, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch := Plan(d, cur)
	t.Logf("state read and planned in %v:\n%s", time.Since(start).Round(time.Millisecond), Diff(ch, false))
	return ch
}

func apply(t *testing.T, c *Client, d Desired) []Change {
	t.Helper()
	ch := plan(t, c, d)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := c.Apply(ctx, ch)
	if err != nil {
		t.Fatalf("apply: %v\napplied: %v\nnot applied: %v", err, rep.Applied, rep.NotApplied)
	}
	t.Logf("applied %d changes in %v", len(rep.Applied), time.Since(start).Round(time.Millisecond))
	if again := plan(t, c, d); Pending(again) != 0 {
		t.Fatalf("second plan after apply is not empty:\n%s", Diff(again, true))
	}
	return ch
}

// submitUntil submits a job as user until ok accepts the outcome:
// slurmdbd pushes association changes to slurmctld asynchronously, so the
// first submit after an apply may still see the old state.
func submitUntil(t *testing.T, user string, ok func(id string, err error) bool, args ...string) (id string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	werr := sys.WaitFor(ctx, 30*time.Second, func() error {
		id, err = cluster.Submit(ctx, user, args...)
		if ok(id, err) {
			return nil
		}
		if err == nil {
			_, _ = cluster.Run(ctx, "scancel", id)
		}
		return fmt.Errorf("submit as %s %v: id %q, %v", user, args, id, err)
	})
	if werr != nil {
		t.Fatal(werr)
	}
	return id, err
}

func accepted(_ string, err error) bool { return err == nil }

func waitJob(t *testing.T, id string, states ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, reason, err := cluster.WaitJob(ctx, id, 45*time.Second, states...); err != nil {
		t.Fatalf("job %s is %s (%s): %v", id, st, reason, err)
	}
}

func has(changes []Change, line string) bool {
	for _, c := range changes {
		if c.String() == line {
			return true
		}
	}
	return false
}

func mustRun(t *testing.T, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := cluster.Run(ctx, prog, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReconcile tells one story against the real Slurm, step by step (the
// steps share the accounting database, so they run in order).
func TestReconcile(t *testing.T) {
	c := needCluster(t)
	ctx := context.Background()

	// A hand-made account with a hand-made user, and one that bears a
	// name the policy will use later: neither is ever touched.
	mustRun(t, "sacctmgr", "-i", "add", "account", "handmade", "Description=made by hand", "Organization=physics")
	mustRun(t, "sacctmgr", "-i", "add", "user", dave, "account=handmade")
	mustRun(t, "sacctmgr", "-i", "add", "account", "shared", "Description=made by hand too", "Organization=physics")
	mustRun(t, "sacctmgr", "-i", "add", "user", carol, "account=handmade")
	handBefore := mustRun(t, "sacctmgr", "--parsable2", "--noheader", "show", "assoc", "where", "account=handmade,shared",
		"format=Account,User,Partition,GrpTRES,QOS,DefaultQOS,ParentName")

	t.Run("empty database: plan, apply, plan again is empty", func(t *testing.T) {
		ch := plan(t, c, labPolicy())
		for _, want := range []string{
			"+ account frontdoor parent=root",
			"+ qos lab-user MaxTRESPerUser=gres/gpu=2",
			"+ account course parent=frontdoor",
			"+ account lab parent=frontdoor GrpTRES=gres/gpu=2,gres/gpu:h100=2",
			"+ user fdalice account=lab QOS=lab-user DefaultQOS=lab-user",
			"+ user fdcarol account=lab partition=h100 QOS=lab-user DefaultQOS=lab-user",
			"+ user fdcarol account=course",
		} {
			if !has(ch, want) {
				t.Errorf("plan lacks %q", want)
			}
		}
		for _, c := range ch {
			if strings.Contains(c.String(), "handmade") || strings.Contains(c.String(), dave) {
				t.Errorf("plan touches hand-made state: %s", c)
			}
		}
		apply(t, c, labPolicy())
		cur, err := c.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := cur.Users[carol].DefaultAccount; got != "handmade" {
			// carol's default was set by hand before frontdoor knew her.
			t.Errorf("carol's default account = %q; a hand-set default must stay", got)
		}
		if a := cur.Accounts["lab"]; !a.Managed || a.Parent != "frontdoor" || a.Description != "nlp lab" {
			t.Errorf("lab = %+v", a)
		}
	})

	t.Run("account GPU limit: a user within it runs, one over it is held AssocGrpGRES", func(t *testing.T) {
		start := time.Now()
		running, _ := submitUntil(t, alice, accepted, "--account=lab", "--gres=gpu:1", "--wrap=sleep 600")
		waitJob(t, running, "RUNNING")
		held, _ := submitUntil(t, bob, accepted, "--account=lab", "--gres=gpu:2", "--wrap=sleep 600")
		waitJob(t, held, "PENDING/AssocGrpGRES")
		t.Logf("running + held in %v", time.Since(start).Round(time.Millisecond))

		table, err := c.RunningGPUs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if table.ByUser[alice] != 1 || table.ByAccount["lab"] != 1 || table.ByUser[bob] != 0 {
			t.Errorf("running GPUs = %+v", table)
		}
		uc := &UsageCache{Client: c, Wait: 10 * time.Second}
		if u := uc.Lookup(ctx, alice, "lab"); u.UserGPUs() != "1" || u.AccountGPUs() != "1" {
			t.Errorf("banner usage = %+v", u)
		}

		// Raising the limit releases the held job.
		d := labPolicy()
		d.Accounts[0].GPULimit, d.Accounts[0].GPUByType = 4, nil
		ch := apply(t, c, d)
		if !has(ch, "~ account lab GrpTRES gres/gpu=2,gres/gpu:h100=2 -> gres/gpu=4") {
			t.Errorf("plan:\n%s", Diff(ch, true))
		}
		waitJob(t, held, "RUNNING")
		if err := cluster.CancelAll(ctx); err != nil {
			t.Fatal(err)
		}
		apply(t, c, labPolicy())
	})

	t.Run("DenyOnLimit: an over-limit submit is refused", func(t *testing.T) {
		// Without the flag, over the per-user limit is held ...
		held, _ := submitUntil(t, alice, accepted, "--account=lab", "--gres=gpu:3", "--wrap=sleep 600")
		waitJob(t, held, "PENDING/QOSMaxGRESPerUser")
		if err := cluster.CancelAll(ctx); err != nil {
			t.Fatal(err)
		}
		// ... with it, refused at submit.
		d := labPolicy()
		d.QOS[0].DenyOnLimit = true
		ch := apply(t, c, d)
		if !has(ch, "~ qos lab-user DenyOnLimit off -> on") {
			t.Errorf("plan:\n%s", Diff(ch, true))
		}
		_, err := submitUntil(t, alice, func(_ string, err error) bool { return err != nil }, "--account=lab", "--gres=gpu:3", "--wrap=sleep 600")
		if !strings.Contains(err.Error(), "QOSMaxGRESPerUser") {
			t.Errorf("refusal does not name the limit: %v", err)
		}
		within, _ := submitUntil(t, alice, accepted, "--account=lab", "--gres=gpu:1", "--wrap=true")
		waitJob(t, within, "COMPLETED")
		apply(t, c, labPolicy())
	})

	t.Run("a user who left the group loses the association", func(t *testing.T) {
		d := labPolicy()
		d.Users = d.Users[:1] // bob and carol left
		ch := apply(t, c, d)
		for _, want := range []string{"- user fdbob", "- user fdcarol account=course", "- user fdcarol account=lab partition=h100"} {
			if !has(ch, want) {
				t.Errorf("plan lacks %q:\n%s", want, Diff(ch, false))
			}
		}
		cur, err := c.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cur.Users[bob]; ok {
			t.Errorf("bob still has associations: %+v", cur.Users[bob])
		}
		// carol keeps what a human gave her.
		if u := cur.Users[carol]; len(u.Assocs) != 1 || u.DefaultAccount != "handmade" {
			t.Errorf("carol = %+v, want only handmade", u)
		}
		_, err = submitUntil(t, bob, func(_ string, err error) bool { return err != nil }, "--account=lab", "--wrap=true")
		if !strings.Contains(err.Error(), "Invalid account") {
			t.Errorf("bob's submit: %v", err)
		}
	})

	t.Run("unmanaged accounts are untouched, clashes are reported", func(t *testing.T) {
		d := labPolicy()
		d.Accounts = append(d.Accounts, Account{Name: "shared", GPULimit: 1})
		d.Users[0].Assocs = append(d.Users[0].Assocs, Assoc{Account: "shared"})
		ch := plan(t, c, d)
		if len(ch) == 0 || ch[0].Op != OpConflict || ch[0].Name != "shared" {
			t.Fatalf("want the clash first:\n%s", Diff(ch, false))
		}
		rep, err := c.Apply(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Conflicts) != 1 {
			t.Errorf("conflicts = %v", rep.Conflicts)
		}
		after := mustRun(t, "sacctmgr", "--parsable2", "--noheader", "show", "assoc", "where", "account=handmade,shared",
			"format=Account,User,Partition,GrpTRES,QOS,DefaultQOS,ParentName")
		if after != handBefore {
			t.Errorf("hand-made associations changed:\nbefore:\n%s\nafter:\n%s", handBefore, after)
		}
		if out := mustRun(t, "sacctmgr", "--parsable2", "--noheader", "show", "account", "where", "name=handmade,shared",
			"format=Account,Description,Organization"); out != "handmade|made by hand|physics\nshared|made by hand too|physics\n" {
			t.Errorf("hand-made accounts changed: %q", out)
		}
	})

	t.Run("Slurm refuses a change mid-plan: stops there, reports the rest", func(t *testing.T) {
		d := labPolicy()
		d.Accounts = append(d.Accounts, Account{Name: "spare"})
		apply(t, c, d)
		id, _ := submitUntil(t, bob, accepted, "--account=lab", "--gres=gpu:1", "--wrap=sleep 600")
		waitJob(t, id, "RUNNING")

		// bob leaves while his job runs, the lab's limit changes and the
		// spare account goes.
		d = labPolicy()
		d.Users = []User{d.Users[0], d.Users[2]}
		d.Accounts[0].GPULimit = 3
		ch := plan(t, c, d)
		rep, err := c.Apply(ctx, ch)
		var ae *ApplyError
		if !errors.As(err, &ae) || errors.Is(err, ErrUnavailable) {
			t.Fatalf("Apply = %v, want an ApplyError that is not an outage", err)
		}
		t.Logf("Apply: %v", err)
		if rep.Failed == nil || rep.Failed.String() != "- user fdbob" ||
			len(rep.Applied) != 1 || rep.Applied[0].Kind != "account" ||
			len(rep.NotApplied) != 1 || rep.NotApplied[0].String() != "- account spare" {
			t.Fatalf("report: applied %v, failed %v, not applied %v", rep.Applied, rep.Failed, rep.NotApplied)
		}
		if err := cluster.CancelAll(ctx); err != nil {
			t.Fatal(err)
		}
		apply(t, c, d)
		apply(t, c, labPolicy())
	})

	t.Run("slurmdbd down: clear errors, nothing half-applied unreported", func(t *testing.T) {
		d := labPolicy()
		d.Accounts = append(d.Accounts, Account{Name: "newlab", GPULimit: 1})
		d.Users[0].Assocs = append(d.Users[0].Assocs, Assoc{Account: "newlab"})
		ch := plan(t, c, d)
		if Pending(ch) < 2 {
			t.Fatalf("want at least 2 changes:\n%s", Diff(ch, false))
		}
		cluster.StopDaemon(slurmh.SlurmDBD)
		defer func() {
			if err := cluster.StartDaemon(context.Background(), slurmh.SlurmDBD); err != nil {
				t.Fatal(err)
			}
		}()
		start := time.Now()
		_, err := c.State(ctx)
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("State with slurmdbd down: %v, want ErrUnavailable", err)
		}
		t.Logf("State failed in %v: %v", time.Since(start).Round(time.Millisecond), err)
		rep, err := c.Apply(ctx, ch)
		var ae *ApplyError
		if !errors.As(err, &ae) || !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Apply with slurmdbd down: %v", err)
		}
		if len(rep.Applied) != 0 || rep.Failed == nil || rep.Failed.String() != ch[0].String() || len(rep.NotApplied) != Pending(ch)-1 {
			t.Errorf("report = %+v", rep)
		}
		t.Logf("Apply failed: %v", err)
		if err := cluster.StartDaemon(ctx, slurmh.SlurmDBD); err != nil {
			t.Fatal(err)
		}
		// Back up: the same plan applies, then nothing is left.
		sys.WaitFor(ctx, 30*time.Second, func() error { _, err := c.State(ctx); return err })
		apply(t, c, d)
		apply(t, c, labPolicy())
	})
}

// TestUsageNeverBlocksLogin: the banner's GPU counts come from a cache;
// with slurmctld hung (SIGSTOP) a lookup answers "unknown" within the
// cache's Wait, and once slurmctld is back the counts return.
func TestUsageNeverBlocksLogin(t *testing.T) {
	c := needCluster(t)
	ctx := context.Background()
	apply(t, c, labPolicy())
	id, _ := submitUntil(t, alice, accepted, "--account=lab", "--gres=gpu:2", "--wrap=sleep 600")
	waitJob(t, id, "RUNNING")
	defer cluster.CancelAll(ctx)

	uc := &UsageCache{Client: &Client{Conf: cluster.Conf(), Timeout: 5 * time.Second}, TTL: time.Minute, Wait: 200 * time.Millisecond}
	var mu sync.Mutex
	var skew time.Duration // moves the cache's clock past its TTL
	uc.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	expire := func() { mu.Lock(); skew += time.Minute; mu.Unlock() }
	start := time.Now()
	u := uc.Lookup(ctx, alice, "lab")
	t.Logf("first lookup (squeue) in %v: %+v", time.Since(start).Round(time.Millisecond), u)
	if err := sys.WaitFor(ctx, 10*time.Second, func() error {
		if u := uc.Lookup(ctx, alice, "lab"); u.UserGPUs() != "2" || u.AccountGPUs() != "2" {
			return fmt.Errorf("usage %+v (%v)", u, uc.Err())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	if err := cluster.PauseDaemon(slurmh.SlurmCtld); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			cluster.ResumeDaemon(slurmh.SlurmCtld)
		}
	}()
	for i := 0; i < 3; i++ {
		expire()
		start := time.Now()
		u := uc.Lookup(ctx, alice, "lab")
		took := time.Since(start)
		t.Logf("lookup with slurmctld hung: %v: user %s, account %s", took.Round(time.Millisecond), u.UserGPUs(), u.AccountGPUs())
		if u.Known || took > time.Second {
			t.Fatalf("lookup with slurmctld hung took %v and returned %+v", took, u)
		}
	}
	if err := cluster.ResumeDaemon(slurmh.SlurmCtld); err != nil {
		t.Fatal(err)
	}
	resumed = true
	if err := sys.WaitFor(ctx, 30*time.Second, func() error {
		expire()
		if u := uc.Lookup(ctx, alice, "lab"); !u.Known {
			return fmt.Errorf("still unknown (%v)", uc.Err())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

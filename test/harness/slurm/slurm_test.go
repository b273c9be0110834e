package slurm

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCluster starts the cluster, runs a GPU job as an unprivileged user,
// shows an account limit holding a job with AssocGrpGRES, and checks that
// Close leaves no process behind.
func TestCluster(t *testing.T) {
	if err := Prerequisites(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("/tmp", "fd-slurm-harness-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if !t.Failed() { // keep the logs of a failure
			os.RemoveAll(dir)
		}
	}()
	start := time.Now()
	s, err := Start(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("cluster up in %v", time.Since(start))

	must := func(out string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := must(s.Run(ctx, "sinfo", "--noheader", "--format=%P|%G"))
	for _, want := range []string{PartitionGeneral + "*|gpu:" + GPUType + ":4", PartitionH100 + "|gpu:" + GPUType + ":4"} {
		if !strings.Contains(out, want) {
			t.Errorf("sinfo lacks %q:\n%s", want, out)
		}
	}
	if err := EnsureUser("fdslurm1"); err != nil {
		t.Fatal(err)
	}
	must(s.Run(ctx, "sacctmgr", "-i", "add", "account", "hlab", "cluster="+s.ClusterName()))
	must(s.Run(ctx, "sacctmgr", "-i", "modify", "account", "where", "name=hlab", "set", "GrpTRES=gres/gpu=2"))
	must(s.Run(ctx, "sacctmgr", "-i", "add", "user", "fdslurm1", "account=hlab"))

	t0 := time.Now()
	id := must(s.Submit(ctx, "fdslurm1", "--account=hlab", "--gres=gpu:1", "--wrap=echo ok"))
	if st, reason, err := s.WaitJob(ctx, id, time.Minute, "COMPLETED", "FAILED"); err != nil || st != "COMPLETED" {
		t.Fatalf("job %s: %s (%s) %v", id, st, reason, err)
	}
	t.Logf("one-GPU job submitted and completed in %v", time.Since(t0))

	long := must(s.Submit(ctx, "fdslurm1", "--account=hlab", "--gres=gpu:1", "--partition="+PartitionH100, "--wrap=sleep 300"))
	if _, _, err := s.WaitJob(ctx, long, time.Minute, "RUNNING"); err != nil {
		t.Fatal(err)
	}
	over := must(s.Submit(ctx, "fdslurm1", "--account=hlab", "--gres=gpu:3", "--wrap=sleep 300"))
	if st, reason, err := s.WaitJob(ctx, over, 30*time.Second, "PENDING/AssocGrpGRES"); err != nil || reason != "AssocGrpGRES" {
		t.Fatalf("over-limit job %s: %s (%s) %v", over, st, reason, err)
	}
	pids, err := s.Leftovers()
	if err != nil || len(pids) == 0 {
		t.Fatalf("a running job should show up among the cluster's processes: %v %v", pids, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if pids, err := s.Leftovers(); err != nil || len(pids) != 0 {
		t.Fatalf("after Close: processes %v (%v)", pids, err)
	}
	for _, name := range startOrder {
		if s.Running(name) {
			t.Errorf("%s still running", name)
		}
	}
}

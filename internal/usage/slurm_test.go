package usage_test

// Usage against a real Slurm (test/harness/slurm) on its own ports (6847,
// 6848, 6849, MariaDB 3337), so it can share a network namespace with
// other packages' clusters. Run in a namespace:
//
//	ip netns exec fd-NAME env PATH=$PATH go test -race ./internal/usage/

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/internal/usage"
	slurmh "github.com/frontdoor-hpc/frontdoor/test/harness/slurm"
)

var (
	clusterOnce sync.Once
	cluster     *slurmh.Slurm
	startErr    error
	clusterDir  string
)

// TestMain gives the AWS SDK test keys and nothing else to find (the S3
// tests), and stops the Slurm cluster the first test needing it started
// (so the pure tests and fuzz workers start none).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "usage-test")
	if err != nil {
		panic(err)
	}
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDUSAGETEST", "AWS_SECRET_ACCESS_KEY": "usage-test-secret",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		os.Setenv(k, v)
	}
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
	os.RemoveAll(dir)
	os.Exit(code)
}

// Test users (Unix accounts on this machine; jobs run as them).
const (
	ann = "fduann" // laba
	bob = "fdubob" // labb
	cat = "fducat" // laba
	dan = "fdudan" // labb
)

func needCluster(t *testing.T) *slurm.Client {
	t.Helper()
	clusterOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if startErr = slurmh.Prerequisites(); startErr != nil {
			return
		}
		if clusterDir, startErr = os.MkdirTemp("/tmp", "fd-usage-slurm-"); startErr != nil {
			return
		}
		start := time.Now()
		cluster, startErr = slurmh.Start(ctx, slurmh.Options{Dir: clusterDir, ClusterName: "fdusage",
			CtldPort: 6847, SlurmdPort: 6848, DBDPort: 6849, MySQLPort: 3337})
		if startErr != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "slurm test cluster up in %v (%s)\n", time.Since(start).Round(time.Millisecond), cluster.Conf())
		for _, u := range []string{ann, bob, cat, dan} {
			if startErr = slurmh.EnsureUser(u); startErr != nil {
				return
			}
		}
		for _, args := range [][]string{
			{"-i", "add", "account", "laba,labb", "cluster=fdusage"},
			{"-i", "add", "user", ann + "," + cat, "account=laba", "cluster=fdusage"},
			{"-i", "add", "user", bob + "," + dan, "account=labb", "cluster=fdusage"},
		} {
			if _, startErr = cluster.Run(ctx, "sacctmgr", args...); startErr != nil {
				return
			}
		}
	})
	if startErr != nil {
		t.Fatalf("real Slurm not available: %v", startErr)
	}
	return &slurm.Client{Conf: cluster.Conf(), Timeout: 20 * time.Second}
}

// submitted is a job and what the test itself saw of its run time.
type submitted struct {
	id, user, account, partition string
	gpus                         int
	submit, done                 time.Time // done: when the test saw it end (zero: running at the read)
	minRun                       time.Duration
}

// Jobs of four states, as four users in two accounts and two partitions:
// usage's GPU-hours per account lie between what the test's own clock
// allows (each job ran at least its minimum, at most from submission to
// the moment its end was seen) and agree with Slurm's ElapsedRaw; every
// state counts.
func TestUsageAgainstRealSlurm(t *testing.T) {
	sc := needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	from := time.Now().Add(-10 * time.Second).Truncate(time.Second)

	submit := func(user, account, partition string, gpus int, script string, minRun time.Duration) *submitted {
		t.Helper()
		j := &submitted{user: user, account: account, partition: partition, gpus: gpus, submit: time.Now(), minRun: minRun}
		id, err := cluster.Submit(ctx, user, "--account="+account, "--partition="+partition,
			"--gres=gpu:"+strconv.Itoa(gpus), "--wrap="+script)
		if err != nil {
			t.Fatalf("submit as %s: %v", user, err)
		}
		j.id = id
		return j
	}
	wait := func(j *submitted, states ...string) {
		t.Helper()
		st, reason, err := cluster.WaitJob(ctx, j.id, 90*time.Second, states...)
		if err != nil {
			t.Fatalf("job %s (%s): %v (last %s/%s)", j.id, j.user, err, st, reason)
		}
	}
	// ranFor polls until job j has run at least d by Slurm's own count.
	ranFor := func(j *submitted, d time.Duration) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			jobs, err := sc.Jobs(ctx, from, time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range jobs {
				if x.ID == j.id && !x.Start.IsZero() && time.Since(x.Start) >= d+time.Second {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s did not run for %v", j.id, d)
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}

	done := submit(ann, "laba", slurmh.PartitionH100, 2, "sleep 4", 4*time.Second)
	failed := submit(bob, "labb", slurmh.PartitionGeneral, 1, "sleep 2; exit 3", 2*time.Second)
	cancelled := submit(cat, "laba", slurmh.PartitionGeneral, 1, "sleep 600", 3*time.Second)
	wait(done, "COMPLETED")
	done.done = time.Now()
	wait(failed, "FAILED")
	failed.done = time.Now()
	running := submit(dan, "labb", slurmh.PartitionH100, 1, "sleep 600", 2*time.Second)
	wait(cancelled, "RUNNING")
	ranFor(cancelled, cancelled.minRun)
	if _, err := cluster.Run(ctx, "scancel", cancelled.id); err != nil {
		t.Fatal(err)
	}
	wait(cancelled, "CANCELLED")
	cancelled.done = time.Now()
	wait(running, "RUNNING")
	ranFor(running, running.minRun)
	all := []*submitted{done, failed, cancelled, running}

	read := time.Now()
	jobs, err := sc.Jobs(ctx, from, read.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := sc.GPUCapacity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].GPUs != slurmh.GPUs {
		t.Fatalf("GPU capacity from sinfo: %+v, want one node with %d GPUs (listed in two partitions)", nodes, slurmh.GPUs)
	}

	// Sessions of the same users, from a JSON-lines audit file.
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	ev := []audit.Event{
		{Time: from.Add(time.Second), Type: audit.TypeSessionStart, Gateway: "gw1", Session: "s1", User: ann, Node: "login1", Rule: "nlp"},
		{Time: from.Add(time.Second + 30*time.Minute), Type: audit.TypeSessionEnd, Gateway: "gw1", Session: "s1", User: ann, Node: "login1", Duration: 1800},
		{Time: from.Add(2 * time.Second), Type: audit.TypeSessionStart, Gateway: "gw1", Session: "s2", User: dan, Node: "login1", Rule: "vision"},
	}
	writeJSONL(t, auditFile, ev)
	var events []audit.Event
	files, err := usage.LocalFiles(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := usage.ReadFiles(files, from.Add(-time.Hour), read.Add(48*time.Hour), func(e audit.Event) { events = append(events, e) }); err != nil {
		t.Fatal(err)
	}

	cfg := usage.DefaultConfig()
	cfg.Rates = usage.Rates{
		InstanceTypes:    map[string]usage.InstanceRate{"ml.p5.48xlarge": {Hourly: 98.32, GPUs: 8}},
		Partitions:       map[string]string{slurmh.PartitionH100: "ml.p5.48xlarge"},
		DefaultGPUHourly: 2, LoginNodeHourly: 0.5}
	cfg.Budgets = map[string]usage.Budget{"laba": {Monthly: 100, WarnAt: usage.DefaultWarnAt}}
	cfg.CapacityInstanceType = "ml.p5.48xlarge"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rep := usage.Aggregate(usage.Input{From: from, To: read.Add(time.Hour), Now: read, By: usage.ByAccount,
		Jobs: jobs, Events: events, CapacityGPUs: nodes[0].GPUs, Config: cfg})

	byKey := map[string]usage.Row{}
	for _, r := range rep.Rows {
		byKey[r.Key] = r
	}
	for _, acct := range []string{"laba", "labb"} {
		var lo, hi, elapsed, cost float64
		for _, j := range all {
			if j.account != acct {
				continue
			}
			end := j.done
			if end.IsZero() {
				end = read
			}
			lo += float64(j.gpus) * j.minRun.Hours()
			hi += float64(j.gpus) * (end.Sub(j.submit) + 2*time.Second).Hours()
			for _, x := range jobs {
				if x.ID == j.id {
					run := x.Elapsed
					if x.End.IsZero() {
						run = read.Sub(x.Start)
					}
					elapsed += float64(x.GPUs) * run.Hours()
					price, _ := cfg.GPUHourly(x.Partition)
					cost += float64(x.GPUs) * run.Hours() * price
				}
			}
		}
		got := byKey[acct]
		t.Logf("%s: %.5f GPU-hours (%.1f GPU-seconds; bounds %.1f–%.1f s, Slurm's elapsed %.1f s), cost %.4f, jobs %v",
			acct, got.GPUHours, got.GPUHours*3600, lo*3600, hi*3600, elapsed*3600, got.GPUCost, got.JobStates)
		if got.GPUHours < lo || got.GPUHours > hi {
			t.Errorf("%s: %.1f GPU-seconds, want between %.1f and %.1f", acct, got.GPUHours*3600, lo*3600, hi*3600)
		}
		if math.Abs(got.GPUHours-elapsed)*3600 > 2*3 { // a second of rounding per job and GPU
			t.Errorf("%s: %.1f GPU-seconds, Slurm's ElapsedRaw says %.1f", acct, got.GPUHours*3600, elapsed*3600)
		}
		if math.Abs(got.GPUCost-cost) > 0.01 {
			t.Errorf("%s: GPU cost %.4f, want %.4f", acct, got.GPUCost, cost)
		}
	}
	wantStates := map[string]map[string]int{"laba": {"COMPLETED": 1, "CANCELLED": 1}, "labb": {"FAILED": 1, "RUNNING": 1}}
	for acct, want := range wantStates {
		if got := byKey[acct].JobStates; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: job states %v, want %v (every state counts)", acct, got, want)
		}
	}
	// Sessions go to the account of the user's jobs.
	if a, b := byKey["laba"], byKey["labb"]; a.Sessions != 1 || b.Sessions != 1 || b.OpenSessions != 1 || a.Users != 2 || b.Users != 2 {
		t.Errorf("sessions/users per account: laba %d/%d, labb %d (%d open)/%d", a.Sessions, a.Users, b.Sessions, b.OpenSessions, b.Users)
	}
	wantCap := float64(slurmh.GPUs) * read.Sub(from).Hours()
	if math.Abs(rep.CapacityGPUHours-wantCap) > 1e-6 || math.Abs(rep.IdleGPUHours-(wantCap-rep.AllocatedGPUHours)) > 1e-6 || rep.IdleGPUHours <= 0 {
		t.Errorf("capacity %.5f (want %.5f), allocated %.5f, idle %.5f", rep.CapacityGPUHours, wantCap, rep.AllocatedGPUHours, rep.IdleGPUHours)
	}
	if len(rep.Budgets) != 1 || rep.Budgets[0].Account != "laba" || rep.Budgets[0].Spent <= 0 {
		t.Errorf("budgets: %+v", rep.Budgets)
	}
	var tbl strings.Builder
	if err := usage.WriteTable(&tbl, rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", tbl.String())
	b, _ := json.Marshal(rep.Total)
	t.Logf("total: %s", b)

	t.Run("cli", func(t *testing.T) { testCLI(t, ctx, from, auditFile, ev, byKey) })
}

// testCLI runs the real `frontdoor usage --by group` (built from this
// tree) against the same Slurm: a static directory puts ann and cat in
// nlp-lab (policy rule nlp, account laba), bob and dan in vision-lab
// (rule vision, account labb); dan's job is still running, so vision only
// grows.
//
// The audit records come from the file and from S3 (gofakes3, filled by
// internal/audit/s3sink): the file's records again, which count once, and
// a session of bob's that only S3 has.
func testCLI(t *testing.T, ctx context.Context, from time.Time, auditFile string, fileEvents []audit.Event, byAccount map[string]usage.Row) {
	dir := t.TempDir()
	backend := s3mem.New()
	if err := backend.CreateBucket("audit-bucket"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	s3cfg := s3sink.DefaultConfig()
	s3cfg.Bucket, s3cfg.Region, s3cfg.Endpoint, s3cfg.PathStyle = "audit-bucket", "us-east-1", srv.URL, true
	s3cfg.SpoolDir = filepath.Join(dir, "spool")
	sink, err := s3sink.New(ctx, s3cfg, "gw1", s3sink.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range append(fileEvents,
		audit.Event{Time: from.Add(3 * time.Second), Type: audit.TypeSessionStart, Gateway: "gw2", Session: "s3", User: bob, Node: "login1", Rule: "vision"},
		audit.Event{Time: from.Add(4 * time.Second), Type: audit.TypeSessionEnd, Gateway: "gw2", Session: "s3", User: bob, Node: "login1", Duration: 1}) {
		sink.Record(e)
	}
	if err := sink.Close(ctx); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "frontdoor")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/frontdoor")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	users := "users:\n"
	for u, g := range map[string]string{ann: "nlp-lab", cat: "nlp-lab", bob: "vision-lab", dan: "vision-lab"} {
		users += fmt.Sprintf("  - {name: %s, groups: [%s], keys: []}\n", u, g)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.yaml"), []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`gateway:
  name: gw1
  host_keys: [host]
  user_ca_key: user_ca
backend:
  known_hosts: [known_hosts]
directory:
  static: {file: users.yaml}
nodes:
  - {name: login1, addr: "127.0.1.1:22"}
policy:
  rules:
    - {name: nlp, groups: [nlp-lab], pools: [default], slurm: {account: laba}}
    - {name: vision, groups: [vision-lab], pools: [default], slurm: {account: labb}}
slurm:
  conf: %s
  cluster: fdusage
audit:
  file: %s
  s3: {bucket: audit-bucket, region: us-east-1, endpoint: "%s", path_style: true, spool_dir: spool}
usage:
  rates:
    instance_types:
      ml.p5.48xlarge: {hourly: 98.32, gpus: 8}
    partitions: {h100: ml.p5.48xlarge}
    default_gpu_hourly: 2
    login_node_hourly: 0.5
  budgets:
    laba: {monthly: 100}
`, cluster.Conf(), auditFile, srv.URL)
	cfgPath := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(dir, "usage.svg")
	to := time.Now().Add(time.Hour)
	cmd := exec.CommandContext(ctx, bin, "usage", "--config", cfgPath, "--from", from.Format(time.RFC3339),
		"--to", to.Format(time.RFC3339), "--by", "group", "-o", "json", "--chart", chart)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("frontdoor usage: %v\n%s", err, stderr.String())
	}
	var rep usage.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	rows := map[string]usage.Row{}
	for _, r := range rep.Rows {
		rows[r.Key] = r
	}
	nlp, vision := rows["nlp"], rows["vision"]
	t.Logf("cli: nlp %.1f GPU-s (%v), vision %.1f GPU-s (%v), capacity %d GPUs, idle %.4f GPU-h, notes %q",
		nlp.GPUHours*3600, nlp.JobStates, vision.GPUHours*3600, vision.JobStates, rep.CapacityGPUs, rep.IdleGPUHours, rep.Notes)
	if len(rep.Rows) != 2 || math.Abs(nlp.GPUHours-byAccount["laba"].GPUHours) > 1e-9 || nlp.Users != 2 || nlp.Sessions != 1 { // file + S3: once
		t.Errorf("nlp: %+v, want laba's %+v", nlp, byAccount["laba"])
	}
	if vision.GPUHours < byAccount["labb"].GPUHours || vision.Jobs != 2 || vision.Sessions != 2 || vision.OpenSessions != 1 {
		t.Errorf("vision: %+v, want at least labb's %+v", vision, byAccount["labb"])
	}
	if rep.CapacityGPUs != slurmh.GPUs || len(rep.Budgets) != 1 || rep.Budgets[0].Spent <= 0 {
		t.Errorf("capacity %d, budgets %+v", rep.CapacityGPUs, rep.Budgets)
	}
	svg, err := os.ReadFile(chart)
	if err != nil || !strings.Contains(string(svg), "Cost per group") || !strings.Contains(string(svg), ">nlp<") {
		t.Errorf("chart: %v %.200s", err, svg)
	}
	// The table and csv forms too.
	for _, o := range []string{"table", "csv"} {
		out, err := exec.CommandContext(ctx, bin, "usage", "--config", cfgPath, "--from", from.Format(time.RFC3339),
			"--to", to.Format(time.RFC3339), "--by", "account", "-o", o).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "laba") || !strings.Contains(string(out), "labb") {
			t.Errorf("-o %s: %v\n%s", o, err, out)
		}
		if o == "table" {
			t.Logf("\n%s", out)
		}
	}
	if out, err := exec.CommandContext(ctx, bin, "usage", "--config", cfgPath, "--by", "rule").CombinedOutput(); err == nil {
		t.Errorf("--by rule accepted: %s", out)
	}
}

func writeJSONL(t *testing.T, path string, events []audit.Event) {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Package slurme2e checks that frontdoor keeps a real Slurm's accounting in
// step with the policy and a real Active Directory (Samba): plan, apply and
// sync; GPU limits that hold for jobs (held or refused); a user removed from
// a group losing the association; an account frontdoor does not manage left
// alone; and GPU use read for login banners.
package slurme2e_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/ad"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
	"github.com/frontdoor-hpc/frontdoor/test/harness/samba"
	slurmh "github.com/frontdoor-hpc/frontdoor/test/harness/slurm"
)

// dcAddr is this package's DC address; other packages use 127.0.2.2, .5, .7, .9.
const dcAddr = "127.0.2.8"

// Slurm ports of this package, apart from internal/slurm's defaults so the
// two suites can run at once.
const (
	ctldPort, slurmdPort, dbdPort, mysqlPort = 6837, 6838, 6839, 3327
)

// Users (sAMAccountName = Slurm user = Unix user for jobs) and groups.
const (
	alice     = "sfe-alice" // vision lab
	bob       = "sfe-bob"   // vision lab, later removed
	carol     = "sfe-carol" // course
	dave      = "sfe-dave"  // in no group at first, later joins the course
	erin      = "sfe-erin"  // admin: matched first by a rule without a Slurm grant
	grpVision = "sfe-vision"
	grpCourse = "sfe-course"
	grpAdmins = "sfe-admins"
)

var (
	dc     *samba.DC
	cl     *slurmh.Slurm
	dir    *ad.Directory
	client *slurm.Client
	base   string
	bin    string // the frontdoor binary, for the CLI
)

// thePolicy: admins (no Slurm grant) first, then a lab with an account GPU
// limit of 2, then a course with one GPU per user, refused over it.
func thePolicy() policy.Config {
	return policy.Config{Rules: []policy.Rule{
		{Name: "admins", Groups: []string{grpAdmins}, Pools: []string{"general"}},
		{Name: "vision", Groups: []string{grpVision}, Pools: []string{"general"},
			Slurm: &policy.Slurm{Account: "sfe-vision", Partitions: []string{slurmh.PartitionH100, slurmh.PartitionGeneral},
				DefaultPartition: slurmh.PartitionH100, GPUsPerAccount: 2}},
		{Name: "course", Groups: []string{grpCourse}, Pools: []string{"general"},
			Slurm: &policy.Slurm{Account: "sfe-course", Partitions: []string{slurmh.PartitionGeneral},
				GPUsPerUser: 1, DenyOnLimit: true}},
	}}
}

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	if err := slurmh.Prerequisites(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: slurme2e:", err)
		return 1
	}
	if err := harness.Prerequisites("samba", "samba-tool"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: slurme2e:", err)
		return 1
	}
	var err error
	if base, err = os.MkdirTemp("/tmp", "frontdoor-slurme2e-"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	os.Chmod(base, 0o755)
	defer os.RemoveAll(base)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() { // Slurm and Samba come up side by side
		var err error
		cl, err = slurmh.Start(ctx, slurmh.Options{Dir: filepath.Join(base, "slurm"), CtldPort: ctldPort,
			SlurmdPort: slurmdPort, DBDPort: dbdPort, MySQLPort: mysqlPort})
		errc <- err
	}()
	dc, err = samba.Start(ctx, samba.Options{Dir: filepath.Join(base, "samba"), Addr: dcAddr})
	serr := <-errc
	if cl != nil {
		defer cl.Close()
	}
	if dc != nil {
		defer dc.Close()
	}
	if err != nil || serr != nil {
		fmt.Fprintf(os.Stderr, "FAIL: slurme2e: samba: %v; slurm: %v\n", err, serr)
		return 1
	}
	if err := populate(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: slurme2e: populate:", err)
		return 1
	}
	cfg := ad.DefaultConfig()
	cfg.URLs, cfg.BaseDN, cfg.BindDN, cfg.BindPassword = []string{dc.URL()}, dc.BaseDN(), dc.AdminDN(), dc.AdminPassword()
	cfg.CAFile, cfg.Domain = dc.CAFile(), dc.Domain()
	cfg.Derive()
	if dir, err = ad.New(cfg, slog.New(slog.DiscardHandler)); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: slurme2e: directory:", err)
		return 1
	}
	defer dir.Close()
	client = &slurm.Client{Conf: cl.Conf(), Timeout: 30 * time.Second}
	var rm func()
	if bin, rm, err = harness.BuildFrontdoor(ctx, filepath.Join("..", "..")); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: slurme2e: build:", err)
		return 1
	}
	defer rm()
	return m.Run()
}

func pw(name string) string { return "Pw-" + name + "-0k!" }

func populate(ctx context.Context) error {
	for _, g := range []string{grpVision, grpCourse, grpAdmins} {
		if err := dc.CreateGroup(ctx, g); err != nil {
			return err
		}
	}
	for name, groups := range map[string][]string{alice: {grpVision}, bob: {grpVision}, carol: {grpCourse},
		dave: nil, erin: {grpAdmins, grpVision}} {
		if _, err := dc.CreateUser(ctx, name, pw(name), groups...); err != nil {
			return err
		}
		if err := slurmh.EnsureUser(name); err != nil {
			return err
		}
	}
	return nil
}

// auditLog is a throwaway audit trail; events returns what it recorded.
func auditLog(t *testing.T) (*audit.Logger, func() []audit.Event) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(p, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, func() []audit.Event {
		evs, err := harness.ReadAudit(p)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

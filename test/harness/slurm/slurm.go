// Package slurm runs a real Slurm with accounting on loopback for tests and
// the local stack: munged, MariaDB on its own port, slurmdbd, slurmctld and
// one slurmd whose four GPUs (type h100) are character devices made with
// mknod in the state directory.
//
// Everything lives under Options.Dir; nothing under /etc is read or written
// (munge, MariaDB and every Slurm daemon get explicit paths). The daemons
// run in the foreground as children of the test process, in their own
// process groups and with a parent-death signal, so none outlives a crashed
// test binary. Close cancels every job, stops the daemons in reverse order
// and kills anything still carrying this instance's SLURM_CONF in its
// environment (slurmstepd and job processes), so no process leaks.
//
// Ports are picked free on 127.0.0.1 unless Options names them (Slurm's
// usual 6817-6819 and MariaDB on 3307 are just as fine in a network
// namespace of one's own), so several test packages can each run a
// cluster at once. slurmctld, slurmd and slurmdbd bind the wildcard address
// (Slurm has no option to bind one address); MariaDB binds 127.0.0.1.
// Slurm 22.05 resolves its listen address with AF_INET+AI_ADDRCONFIG,
// which fails in a namespace that only has a loopback interface;
// CommunicationParameters=EnableIPv6 makes it ask for AF_UNSPEC, which
// succeeds there too.
//
// Start returns once a job could be scheduled: the node is idle and the
// accounting database lists the gres/gpu TRES (sacctmgr refuses
// GrpTRES=gres/gpu=N before that). Typical use, in TestMain:
//
//	s, err := slurm.Start(ctx, slurm.Options{Dir: dir})
//	defer s.Close()
//	out, err := s.Run(ctx, "sacctmgr", "-i", "add", "account", "lab")
//	err = slurm.EnsureUser("alice")
//	id, err := s.Submit(ctx, "alice", "--account=lab", "--gres=gpu:1", "--wrap=sleep 30")
//	state, reason, err := s.JobState(ctx, id)
//
// From a shell: SLURM_CONF=$(s.Conf()) sinfo; the state directory keeps
// every daemon's log under log/.
//
// Debian packages: slurmctld slurmd slurmdbd slurm-client munge
// mariadb-server (`make deps`).
package slurm

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness/sys"
)

// Partitions the test cluster has; both hold the one node.
const (
	// PartitionGeneral is the default partition.
	PartitionGeneral = "general"
	// PartitionH100 is the "dedicated H100" partition.
	PartitionH100 = "h100"
	// GPUType is the GRES type of the node's GPUs (gres/gpu:h100).
	GPUType = "h100"
	// GPUs is how many GPUs the node has.
	GPUs = 4
)

// Options configure a test Slurm. Zero values get the defaults noted.
type Options struct {
	// Dir is the state directory (required). It is made world-traversable
	// (0755) so jobs of unprivileged test users can read slurm.conf and
	// reach the munge socket; its parents must be traversable too.
	Dir string
	// ClusterName is Slurm's ClusterName (default "frontdoor").
	ClusterName string
	// Ports of slurmctld, slurmd, slurmdbd and MariaDB; zero picks a free
	// one on 127.0.0.1 (Slurm's usual ones are 6817, 6818, 6819).
	CtldPort, SlurmdPort, DBDPort, MySQLPort int
	// CPUs the node declares (default 16, whatever the hardware has:
	// SlurmdParameters=config_overrides), so many one-GPU jobs fit at once.
	CPUs int
	// ReadyTimeout bounds the start of each daemon (default 2m: on two
	// shared cores MariaDB's first start alone can take tens of seconds).
	ReadyTimeout time.Duration
	// Log receives the daemons' stdout/stderr (default Dir/log/daemons.log).
	Log io.Writer
}

// Slurm is a running test cluster.
type Slurm struct {
	opts     Options
	host     string // short host name: the node and controller name
	conf     string // SLURM_CONF
	munge    string // munge socket
	log      io.Writer
	logClose io.Closer

	// mu protects the following.
	mu      sync.Mutex
	daemons map[string]*daemon
	closed  bool
}

// Daemon names, for StopDaemon/StartDaemon.
const (
	Munge     = "munged"
	MariaDB   = "mariadbd"
	SlurmDBD  = "slurmdbd"
	SlurmCtld = "slurmctld"
	Slurmd    = "slurmd"
)

// startOrder is the order the daemons come up in; Close uses the reverse.
var startOrder = []string{Munge, MariaDB, SlurmDBD, SlurmCtld, Slurmd}

// Packages are the Debian packages the harness needs.
const Packages = "slurmctld slurmd slurmdbd slurm-client munge mariadb-server"

// Prerequisites reports, as one error naming the Debian packages to
// install, whether every program the harness runs is present, and whether
// the process runs as root. Test suites fail on it; they never skip.
func Prerequisites() error {
	var missing []string
	for _, p := range []string{"munged", "munge", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld",
		"slurmd", "slurmstepd", "sacctmgr", "sbatch", "squeue", "scontrol", "scancel", "sinfo", "sacct", "mknod", "useradd"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat(filepath.Join("/usr/sbin", p)); err != nil {
				missing = append(missing, p)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("slurm harness: missing %s: apt-get install --no-install-recommends %s (or `make deps`)",
			strings.Join(missing, ", "), Packages)
	}
	if os.Geteuid() != 0 {
		return errors.New("slurm harness: must run as root (SlurmUser=root, mknod, useradd)")
	}
	return nil
}

// Start writes the configuration into opts.Dir, starts every daemon and
// returns when the cluster schedules jobs and accounts for gres/gpu.
func Start(ctx context.Context, opts Options) (*Slurm, error) {
	if err := Prerequisites(); err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		return nil, errors.New("slurm harness: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if opts.ClusterName == "" {
		opts.ClusterName = "frontdoor"
	}
	taken := map[int]bool{opts.CtldPort: true, opts.SlurmdPort: true, opts.DBDPort: true, opts.MySQLPort: true}
	for _, p := range []*int{&opts.CtldPort, &opts.SlurmdPort, &opts.DBDPort, &opts.MySQLPort} {
		for *p == 0 {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			if !taken[port] {
				*p, taken[port] = port, true
			}
		}
	}
	if opts.CPUs == 0 {
		opts.CPUs = 16
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 2 * time.Minute
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	host, _, _ = strings.Cut(host, ".")

	s := &Slurm{
		opts:    opts,
		host:    host,
		conf:    filepath.Join(dir, "etc", "slurm.conf"),
		munge:   filepath.Join(dir, "run", "munge.socket"),
		daemons: map[string]*daemon{},
	}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	if s.log = opts.Log; s.log == nil {
		f, err := os.OpenFile(filepath.Join(dir, "log", "daemons.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		s.log, s.logClose = f, f
	}
	for _, name := range startOrder {
		if err := s.StartDaemon(ctx, name); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.waitTRES(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// prepare creates the directories, the munge key, the fake GPU devices, the
// MariaDB data directory and every configuration file. It starts afresh:
// state from an earlier run in Dir (jobs, database) is removed.
func (s *Slurm) prepare() error {
	dir := s.opts.Dir
	for _, sub := range []string{"etc", "run", "log", "spool", "db", "munge", "dev", "tmp"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return err
		}
	}
	for _, sub := range []string{"etc", "run", "log", "spool/ctld", "spool/d", "db", "munge", "dev", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	// Users' sbatch reads etc/ and talks to run/munge.socket; munged
	// insists its key directory is not writable by group or others.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(dir, "munge"), 0o700); err != nil {
		return err
	}
	if err := traversable(dir); err != nil {
		return err
	}
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "munge", "munge.key"), key, 0o400); err != nil {
		return err
	}
	// slurmd drops GPUs without a File= (the node goes INVAL+DRAIN), so
	// each fake GPU is a character device; 1,3 is /dev/null's number.
	for i := 0; i < GPUs; i++ {
		p := filepath.Join(dir, "dev", "nvidia"+strconv.Itoa(i))
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(mkdev(1, 3))); err != nil {
			return fmt.Errorf("slurm harness: mknod %s: %w", p, err)
		}
	}
	data := map[string]any{
		"Dir": dir, "Host": s.host, "Cluster": s.opts.ClusterName, "Munge": s.munge,
		"CtldPort": s.opts.CtldPort, "SlurmdPort": s.opts.SlurmdPort, "DBDPort": s.opts.DBDPort,
		"MySQLPort": s.opts.MySQLPort, "CPUs": s.opts.CPUs, "GPUs": GPUs, "GPUType": GPUType,
		"GPULast": GPUs - 1, "General": PartitionGeneral, "H100": PartitionH100,
		"DBPass": dbPassword,
	}
	files := []struct {
		name, tmpl string
		mode       os.FileMode
	}{
		{"etc/my.cnf", myCnf, 0o600},
		{"etc/init.sql", initSQL, 0o600},
		{"etc/slurm.conf", slurmConf, 0o644},
		{"etc/gres.conf", gresConf, 0o644},
		{"etc/cgroup.conf", cgroupConf, 0o644},
		// slurmdbd has no -f: it reads slurmdbd.conf next to SLURM_CONF,
		// and refuses it unless it is private.
		{"etc/slurmdbd.conf", slurmdbdConf, 0o600},
	}
	for _, f := range files {
		var b bytes.Buffer
		if err := template.Must(template.New(f.name).Parse(f.tmpl)).Execute(&b, data); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b.Bytes(), f.mode); err != nil {
			return err
		}
	}
	return nil
}

// traversable checks that every parent of dir lets others search it, so a
// test user's sbatch can reach slurm.conf. os.MkdirTemp makes 0700
// directories; callers chmod them or use a directory under /tmp.
func traversable(dir string) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("slurm harness: %s is not searchable by others (mode %v); test users' jobs could not read slurm.conf: chmod o+x it or put Dir elsewhere", d, fi.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("slurm harness: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func mkdev(major, minor uint32) uint64 {
	return uint64(major)<<8 | uint64(minor)
}

// dbPassword is the MariaDB password of slurmdbd's database user; the
// database listens on loopback only, inside the test's namespace.
const dbPassword = "frontdoor-test"

const myCnf = `[mysqld]
user=root
datadir={{.Dir}}/db
socket={{.Dir}}/run/mysqld.sock
pid-file={{.Dir}}/run/mysqld.pid
# A private tmpdir: two bootstrapping servers sharing /tmp clash on
# temporary-table names ("Unknown table 'mysql.tmp_user_sys'").
tmpdir={{.Dir}}/tmp
port={{.MySQLPort}}
bind-address=127.0.0.1
skip-name-resolve
log-error={{.Dir}}/log/mariadb.log
innodb_lock_wait_timeout=900
init-file={{.Dir}}/etc/init.sql
`

// initSQL runs at every MariaDB start; it creates slurmdbd's user.
const initSQL = `CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{{.DBPass}}';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
`

const slurmConf = `# Written by the frontdoor test harness (test/harness/slurm).
ClusterName={{.Cluster}}
SlurmctldHost={{.Host}}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={{.CtldPort}}
SlurmdPort={{.SlurmdPort}}
AuthType=auth/munge
AuthInfo=socket={{.Munge}}
CredType=cred/munge
# Slurm 22.05 asks for AF_INET with AI_ADDRCONFIG, which fails in a
# loopback-only network namespace; AF_UNSPEC works.
CommunicationParameters=EnableIPv6
StateSaveLocation={{.Dir}}/spool/ctld
SlurmdSpoolDir={{.Dir}}/spool/d
SlurmctldPidFile={{.Dir}}/run/slurmctld.pid
SlurmdPidFile={{.Dir}}/run/slurmd.pid
SlurmctldLogFile={{.Dir}}/log/slurmctld.log
SlurmdLogFile={{.Dir}}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={{.DBDPort}}
# slurmctld and sacctmgr ignore AuthInfo=socket= towards slurmdbd.
AccountingStoragePass={{.Munge}}
AccountingStorageTRES=gres/gpu,gres/gpu:{{.GPUType}}
AccountingStorageEnforce=associations,limits,qos
SchedulerParameters=sched_interval=2,bf_interval=1
KillWait=2
MinJobAge=600
ReturnToService=2
NodeName={{.Host}} NodeAddr=127.0.0.1 CPUs={{.CPUs}} RealMemory=4000 Gres=gpu:{{.GPUType}}:{{.GPUs}} State=UNKNOWN
PartitionName={{.General}} Nodes={{.Host}} Default=YES MaxTime=INFINITE State=UP
PartitionName={{.H100}} Nodes={{.Host}} MaxTime=INFINITE State=UP
`

const gresConf = `AutoDetect=off
NodeName={{.Host}} Name=gpu Type={{.GPUType}} File={{.Dir}}/dev/nvidia[0-{{.GPULast}}]
`

// cgroupConf: slurmd initialises a cgroup plugin even with
// proctrack/linuxproc, and autodetection fails on a tmpfs-mounted v1
// hierarchy.
const cgroupConf = `CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
`

const slurmdbdConf = `AuthType=auth/munge
AuthInfo=socket={{.Munge}}
CommunicationParameters=EnableIPv6
DbdAddr=127.0.0.1
DbdHost={{.Host}}
DbdPort={{.DBDPort}}
SlurmUser=root
PidFile={{.Dir}}/run/slurmdbd.pid
LogFile={{.Dir}}/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={{.MySQLPort}}
StorageUser=slurm
StoragePass={{.DBPass}}
StorageLoc=slurm_acct_db
`

// Conf is the SLURM_CONF path.
func (s *Slurm) Conf() string { return s.conf }

// Dir is the state directory.
func (s *Slurm) Dir() string { return s.opts.Dir }

// ClusterName is Slurm's ClusterName.
func (s *Slurm) ClusterName() string { return s.opts.ClusterName }

// NodeName is the one compute node (the short host name).
func (s *Slurm) NodeName() string { return s.host }

// Env is the environment Slurm client commands need: os.Environ with
// SLURM_CONF pointing at this cluster.
func (s *Slurm) Env() []string {
	env := make([]string, 0, len(os.Environ())+1)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SLURM_CONF=") {
			env = append(env, e)
		}
	}
	return append(env, "SLURM_CONF="+s.conf)
}

// Run runs a Slurm client program (sacctmgr, sbatch, squeue, ...) as root
// against this cluster and returns its standard output; a failure carries
// the standard error.
func (s *Slurm) Run(ctx context.Context, prog string, args ...string) (string, error) {
	return s.run(ctx, nil, prog, args...)
}

// RunAs runs a Slurm client program as the local Unix user name (which
// must exist: EnsureUser), the way that user would from a login node.
func (s *Slurm) RunAs(ctx context.Context, name, prog string, args ...string) (string, error) {
	uid, gid, err := sys.UnixIDs(name)
	if err != nil {
		return "", fmt.Errorf("slurm harness: user %s: %w", name, err)
	}
	return s.run(ctx, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, prog, args...)
}

func (s *Slurm) run(ctx context.Context, cred *syscall.Credential, prog string, args ...string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = s.Env()
	cmd.Dir = "/tmp"
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", prog, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// EnsureUser creates the local Unix user name if missing (idempotent, safe
// across test processes): jobs run as real users, and slurmctld maps the
// submitting uid to the accounting user by name.
func EnsureUser(name string) error { return sys.EnsureUnixUser(name) }

// Submit submits a batch job as user name (sbatch --parsable, output to
// /dev/null, working directory /tmp) and returns the job id. args are
// further sbatch options, e.g. "--account=lab", "--gres=gpu:2",
// "--wrap=sleep 60".
func (s *Slurm) Submit(ctx context.Context, name string, args ...string) (string, error) {
	all := append([]string{"--parsable", "--output=/dev/null", "--chdir=/tmp"}, args...)
	out, err := s.RunAs(ctx, name, "sbatch", all...)
	if err != nil {
		return "", err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("slurm harness: sbatch printed %q, not a job id", out)
	}
	return id, nil
}

// JobState returns a job's state (PENDING, RUNNING, COMPLETED, ...) and
// reason (AssocGrpGRES, None, ...), from squeue (MinJobAge=600 keeps
// finished jobs listed).
func (s *Slurm) JobState(ctx context.Context, id string) (state, reason string, err error) {
	out, err := s.Run(ctx, "squeue", "--noheader", "--states=all", "--jobs="+id, "--format=%T|%r")
	if err != nil {
		return "", "", err
	}
	line := strings.TrimSpace(out)
	state, reason, ok := strings.Cut(line, "|")
	if !ok {
		return "", "", fmt.Errorf("slurm harness: job %s: squeue printed %q", id, out)
	}
	return state, reason, nil
}

// WaitJob polls until job id is in one of states, and returns the state
// and reason it saw last. A state may name the reason too, as
// "PENDING/AssocGrpGRES": a fresh job is PENDING (None) until the
// scheduler has looked at it.
func (s *Slurm) WaitJob(ctx context.Context, id string, timeout time.Duration, states ...string) (state, reason string, err error) {
	err = sys.WaitFor(ctx, timeout, func() error {
		var err error
		if state, reason, err = s.JobState(ctx, id); err != nil {
			return err
		}
		for _, want := range states {
			st, r, hasReason := strings.Cut(want, "/")
			if state == st && (!hasReason || reason == r) {
				return nil
			}
		}
		return fmt.Errorf("job %s is %s (%s), want %s", id, state, reason, strings.Join(states, "|"))
	})
	return state, reason, err
}

// CancelAll cancels every job of the cluster and waits until none is
// pending or running.
func (s *Slurm) CancelAll(ctx context.Context) error {
	ids, err := s.activeJobs(ctx)
	if err != nil || len(ids) == 0 {
		return err
	}
	if _, err := s.Run(ctx, "scancel", ids...); err != nil {
		return err
	}
	return sys.WaitFor(ctx, 30*time.Second, func() error {
		ids, err := s.activeJobs(ctx)
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			return fmt.Errorf("jobs still active: %s", strings.Join(ids, " "))
		}
		return nil
	})
}

func (s *Slurm) activeJobs(ctx context.Context) ([]string, error) {
	out, err := s.Run(ctx, "squeue", "--noheader", "--states=PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED", "--format=%i")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// waitTRES waits until the node is idle and sacctmgr lists gres/gpu: then
// jobs schedule and GrpTRES=gres/gpu=N is accepted.
func (s *Slurm) waitTRES(ctx context.Context) error {
	err := sys.WaitFor(ctx, s.opts.ReadyTimeout, func() error {
		out, err := s.Run(ctx, "sinfo", "--noheader", "--Node", "--format=%t")
		if err != nil {
			return err
		}
		// One line per partition the node is in.
		for _, st := range strings.Fields(out) {
			if st != "idle" {
				return fmt.Errorf("node %s is %q, want idle", s.host, st)
			}
		}
		out, err = s.Run(ctx, "sacctmgr", "--parsable2", "--noheader", "show", "tres", "format=Type,Name")
		if err != nil {
			return err
		}
		for _, want := range []string{"gres|gpu", "gres|gpu:" + GPUType} {
			if !containsLine(out, want) {
				return fmt.Errorf("sacctmgr show tres lacks %s", want)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("slurm harness: not ready (logs in %s): %w", filepath.Join(s.opts.Dir, "log"), err)
	}
	return nil
}

func containsLine(out, want string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == want {
			return true
		}
	}
	return false
}

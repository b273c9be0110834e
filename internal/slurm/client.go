package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Client runs the Slurm command-line tools. The zero value uses the tools
// on $PATH and the environment's SLURM_CONF.
type Client struct {
	// Conf is the SLURM_CONF passed to every command; empty keeps the
	// environment's (and Slurm's default, /etc/slurm/slurm.conf).
	Conf string
	// Cluster is the cluster whose associations are managed. Empty: the
	// only cluster in the accounting database (State fails if there are
	// several).
	Cluster string
	// BinDir holds sacctmgr, squeue, ...; empty: $PATH.
	BinDir string
	// Timeout bounds each command (default DefaultTimeout). A slurmdbd
	// that accepts connections but never answers costs one Timeout.
	Timeout time.Duration
}

// DefaultTimeout is a command's time limit when Client.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// ErrUnavailable is wrapped when a command could not reach slurmdbd or
// slurmctld (down, refusing, timing out): an outage, not a bad request.
var ErrUnavailable = errors.New("slurm unavailable")

// CommandError is a Slurm command that failed.
type CommandError struct {
	// Command is the program and its arguments.
	Command []string
	// Output is what it printed (stderr and stdout, trimmed).
	Output string
	// Err is the exit status or the context's error.
	Err error
	// unavailable: the output or a timeout says Slurm could not be reached.
	unavailable bool
}

func (e *CommandError) Error() string {
	msg := shellJoin(e.Command) + ": " + e.Err.Error()
	if e.unavailable {
		msg += " (" + ErrUnavailable.Error() + ")"
	}
	if e.Output != "" {
		msg += ": " + truncate(e.Output, 600)
	}
	return msg
}

// Unwrap exposes the exit error and, for outages, ErrUnavailable.
func (e *CommandError) Unwrap() []error {
	if e.unavailable {
		return []error{e.Err, ErrUnavailable}
	}
	return []error{e.Err}
}

// outageSigns are what sacctmgr and squeue print when they cannot reach
// slurmdbd or slurmctld.
var outageSigns = []string{
	"Connection refused",
	"persistent connection",
	"Problem talking to the database",
	"Unable to contact slurm controller",
	"Socket timed out",
	"Connection timed out",
	"Zero Bytes were transmitted or received",
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// run runs prog with args under the client's timeout and returns stdout.
func (c *Client) run(ctx context.Context, prog string, args ...string) (string, error) {
	return c.runEnv(ctx, nil, prog, args...)
}

// runEnv is run with extra environment variables (NAME=value).
func (c *Client) runEnv(ctx context.Context, env []string, prog string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	path := prog
	if c.BinDir != "" {
		path = filepath.Join(c.BinDir, prog)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = time.Second
	if c.Conf != "" || len(env) > 0 {
		cmd.Env = os.Environ()
		if c.Conf != "" {
			cmd.Env = append(withoutVar(cmd.Env, "SLURM_CONF"), "SLURM_CONF="+c.Conf)
		}
		for _, kv := range env {
			name, _, _ := strings.Cut(kv, "=")
			cmd.Env = append(withoutVar(cmd.Env, name), kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.String(), nil
	}
	out := strings.TrimSpace(stderr.String() + "\n" + stdout.String())
	e := &CommandError{Command: append([]string{prog}, args...), Output: out, Err: err}
	if ctxErr := ctx.Err(); ctxErr != nil {
		e.Err = fmt.Errorf("%w (after %v)", ctxErr, c.timeout())
		e.unavailable = true
	}
	for _, sign := range outageSigns {
		if strings.Contains(out, sign) {
			e.unavailable = true
		}
	}
	return "", e
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}

// query runs a read-only sacctmgr command with parsable output and
// returns its rows.
func (c *Client) query(ctx context.Context, fields int, args ...string) ([][]string, error) {
	out, err := c.run(ctx, "sacctmgr", append([]string{"--parsable2", "--noheader"}, args...)...)
	if err != nil {
		return nil, err
	}
	rows, err := parseRows(out, fields)
	if err != nil {
		return nil, fmt.Errorf("sacctmgr %s: %w", strings.Join(args, " "), err)
	}
	return rows, nil
}

// State reads every account, QOS, user and association of the cluster.
func (c *Client) State(ctx context.Context) (State, error) {
	cluster, err := c.cluster(ctx)
	if err != nil {
		return State{}, err
	}
	st := State{Cluster: cluster, Accounts: map[string]AccountState{}, QOS: map[string]QOSState{}, Users: map[string]UserState{}}

	// The four reads are independent; run them at once (each sacctmgr
	// costs a round trip to slurmdbd and a process start).
	queries := []struct {
		what   string
		fields int
		args   []string
	}{
		// Description last: it is free text and may hold a '|'.
		{"accounts", 2, []string{"show", "account", "format=Account,Description"}},
		{"QOS", 4, []string{"show", "qos", "format=Name,MaxTRESPerUser,Flags,Description"}},
		{"users", 2, []string{"show", "user", "format=User,DefaultAccount"}},
		{"associations", 7, []string{"show", "assoc", "where", "cluster=" + cluster,
			"format=Account,User,Partition,ParentName,GrpTRES,DefaultQOS,QOS"}},
	}
	results := make([][][]string, len(queries))
	errs := make([]error, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if results[i], errs[i] = c.query(ctx, q.fields, q.args...); errs[i] != nil {
				errs[i] = fmt.Errorf("slurm: read %s: %w", q.what, errs[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return State{}, err // the first, in the order above
		}
	}
	accounts, qos, users, assocs := results[0], results[1], results[2], results[3]

	for _, r := range accounts {
		desc, managed := splitDescription(r[1])
		st.Accounts[r[0]] = AccountState{Name: r[0], Description: desc, Managed: managed, GrpTRES: TRES{}}
	}

	for _, r := range qos {
		lim, err := parseTRES(r[1])
		if err != nil {
			return State{}, fmt.Errorf("slurm: QOS %s: %w", r[0], err)
		}
		desc, managed := splitDescription(r[3])
		st.QOS[r[0]] = QOSState{Name: r[0], Description: desc, Managed: managed, MaxTRESPerUser: lim,
			DenyOnLimit: contains(strings.Split(r[2], ","), "DenyOnLimit")}
	}

	for _, r := range users {
		st.Users[r[0]] = UserState{Name: r[0], DefaultAccount: r[1], Assocs: map[AssocKey]AssocState{}}
	}

	for _, r := range assocs {
		account, user, partition, parent := r[0], r[1], r[2], r[3]
		if user == "" {
			a, ok := st.Accounts[account]
			if !ok {
				continue // listed between the two reads; the next plan sees it
			}
			var err error
			if a.GrpTRES, err = parseTRES(r[4]); err != nil {
				return State{}, fmt.Errorf("slurm: account %s: %w", account, err)
			}
			a.Parent, a.InCluster = parent, true
			st.Accounts[account] = a
			continue
		}
		u, ok := st.Users[user]
		if !ok {
			u = UserState{Name: user, Assocs: map[AssocKey]AssocState{}}
		}
		k := AssocKey{Account: account, Partition: partition}
		u.Assocs[k] = AssocState{AssocKey: k, DefaultQOS: r[5], QOS: parseList(r[6])}
		st.Users[user] = u
	}
	// A user record without associations in this cluster is none of this
	// cluster's business.
	for name, u := range st.Users {
		if len(u.Assocs) == 0 {
			delete(st.Users, name)
		}
	}
	return st, nil
}

// cluster is Client.Cluster or the database's only cluster.
func (c *Client) cluster(ctx context.Context) (string, error) {
	if c.Cluster != "" {
		return c.Cluster, nil
	}
	rows, err := c.query(ctx, 1, "show", "cluster", "format=Cluster")
	if err != nil {
		return "", fmt.Errorf("slurm: read clusters: %w", err)
	}
	switch len(rows) {
	case 1:
		return rows[0][0], nil
	case 0:
		return "", errors.New("slurm: the accounting database has no cluster yet (has slurmctld registered?)")
	default:
		names := make([]string, len(rows))
		for i, r := range rows {
			names[i] = r[0]
		}
		return "", fmt.Errorf("slurm: the accounting database has clusters %s: name the one to manage", strings.Join(names, ", "))
	}
}

// Report says what Apply did.
type Report struct {
	// Applied are the changes whose command succeeded, in order.
	Applied []Change
	// Failed is the change whose command failed (nil when none did).
	Failed *Change
	// NotApplied are the changes after Failed, never attempted.
	NotApplied []Change
	// Conflicts are the "!" changes, which have no command.
	Conflicts []Change
}

// ApplyError is Apply's error: which change failed and what is left.
type ApplyError struct {
	Change Change
	// Uncertain: the command was cut off (timeout, cancellation), so it
	// may or may not have taken effect; the next plan shows which.
	Uncertain bool
	// Remaining counts the changes not attempted.
	Remaining int
	Err       error
}

func (e *ApplyError) Error() string {
	s := fmt.Sprintf("slurm: apply %q failed", e.Change.String())
	if e.Uncertain {
		s += " (cut off: it may have taken effect; plan again to see)"
	}
	return fmt.Sprintf("%s; %d later change(s) not applied: %v", s, e.Remaining, e.Err)
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply runs the changes in order, one sacctmgr -i command each, and stops
// at the first failure. The report lists what was applied and what was
// not; the error is an *ApplyError (wrapping ErrUnavailable when Slurm
// could not be reached). Conflicts are skipped. Applying a plan twice is
// harmless: the second Plan is empty.
func (c *Client) Apply(ctx context.Context, changes []Change) (Report, error) {
	var r Report
	for i, ch := range changes {
		if ch.Op == OpConflict {
			r.Conflicts = append(r.Conflicts, ch)
			continue
		}
		if len(ch.Args) == 0 {
			return r, fmt.Errorf("slurm: change %q has no command", ch.String())
		}
		_, err := c.run(ctx, "sacctmgr", append([]string{"-i"}, ch.Args...)...)
		if err != nil {
			failed := ch
			r.Failed = &failed
			for _, rest := range changes[i+1:] {
				if rest.Op == OpConflict {
					r.Conflicts = append(r.Conflicts, rest)
				} else {
					r.NotApplied = append(r.NotApplied, rest)
				}
			}
			return r, &ApplyError{Change: ch, Uncertain: errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled),
				Remaining: len(r.NotApplied), Err: err}
		}
		r.Applied = append(r.Applied, ch)
	}
	return r, nil
}

// shellJoin joins a command line, quoting arguments with spaces or quotes
// so it can be pasted into a shell.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"|;&$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

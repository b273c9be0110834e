package slurm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Job is one job allocation from Slurm's accounting (sacct -X): what it
// held and when. A requeued job appears once per run (sacct -D), each run
// with its own Start and End.
type Job struct {
	// ID is the job id as sacct prints it (123, 123_4 for an array task,
	// 123+0 for a heterogeneous component).
	ID        string
	User      string
	Account   string
	Partition string
	// State is the base state (COMPLETED, FAILED, CANCELLED, RUNNING,
	// TIMEOUT, ...), without "by UID" or a "+" suffix.
	State string
	// Start is zero when the job never started (pending, cancelled while
	// queued). End is zero while it runs.
	Start, End time.Time
	// Elapsed is Slurm's own count of run time.
	Elapsed time.Duration
	// GPUs is the gres/gpu count of the allocation (0: none).
	GPUs int
	// TRES is the whole allocation, e.g. cpu, mem (MB), gres/gpu:h100.
	TRES TRES
}

// JobStates are every job state sacct selects by (Slurm 22.05's man page;
// it refuses states it does not account, such as CONFIGURING): Jobs asks
// for all of them, so a failed, cancelled, timed-out or preempted job's GPU
// time counts as much as a completed one's (the GPUs were held either way).
var JobStates = []string{"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
	"OUT_OF_MEMORY", "PENDING", "PREEMPTED", "RUNNING", "REQUEUED", "RESIZING", "REVOKED", "SUSPENDED", "TIMEOUT"}

// jobFields is the sacct --format of Jobs, in parseJobs' column order.
const jobFields = "JobID,User,Account,Partition,State,Start,End,ElapsedRaw,AllocTRES"

// sacctTime is how sacct prints times under SLURM_TIME_FORMAT=standard.
const sacctTime = "2006-01-02T15:04:05"

// Jobs reads every job allocation that was in any state during [from, to)
// from slurmdbd (sacct --parsable2, all users, all states, every run of a
// requeued job). Times are exchanged in UTC (TZ=UTC for the command), so
// the answer does not depend on the machine's time zone.
func (c *Client) Jobs(ctx context.Context, from, to time.Time) ([]Job, error) {
	args := []string{"--parsable2", "--noheader", "--allusers", "--allocations", "--duplicates",
		"--starttime=" + from.UTC().Format(sacctTime), "--endtime=" + to.UTC().Format(sacctTime),
		"--state=" + strings.Join(JobStates, ","), "--format=" + jobFields}
	if c.Cluster != "" {
		args = append(args, "--clusters="+c.Cluster)
	}
	out, err := c.runEnv(ctx, []string{"TZ=UTC", "SLURM_TIME_FORMAT=standard"}, "sacct", args...)
	if err != nil {
		return nil, fmt.Errorf("slurm: read jobs: %w", err)
	}
	jobs, err := ParseJobs(out)
	if err != nil {
		return nil, fmt.Errorf("slurm: read jobs: %w", err)
	}
	return jobs, nil
}

// ParseJobs reads the output of sacct --parsable2 --noheader
// --format=JobID,User,Account,Partition,State,Start,End,ElapsedRaw,AllocTRES
// with times in UTC. None of these columns is free text, so a row with
// another number of columns is an error, as is a time or TRES that does
// not parse: usage figures built on a misread row would be wrong silently.
func ParseJobs(out string) ([]Job, error) {
	var jobs []Job
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) != 9 {
			return nil, fmt.Errorf("sacct line %d: %d fields, want 9: %q", i+1, len(cols), truncate(line, 120))
		}
		j := Job{ID: cols[0], User: cols[1], Account: cols[2], Partition: cols[3], State: baseState(cols[4])}
		if j.ID == "" || j.State == "" {
			return nil, fmt.Errorf("sacct line %d: no job id or state: %q", i+1, truncate(line, 120))
		}
		var err error
		if j.Start, err = parseSacctTime(cols[5]); err != nil {
			return nil, fmt.Errorf("sacct line %d: job %s: start: %w", i+1, j.ID, err)
		}
		if j.End, err = parseSacctTime(cols[6]); err != nil {
			return nil, fmt.Errorf("sacct line %d: job %s: end: %w", i+1, j.ID, err)
		}
		if !j.Start.IsZero() && !j.End.IsZero() && j.End.Before(j.Start) {
			return nil, fmt.Errorf("sacct line %d: job %s ends before it starts", i+1, j.ID)
		}
		if cols[7] != "" {
			s, err := strconv.ParseInt(cols[7], 10, 64)
			if err != nil || s < 0 || s > 100*365*86400 {
				return nil, fmt.Errorf("sacct line %d: job %s: elapsed %q is not a number of seconds", i+1, j.ID, truncate(cols[7], 40))
			}
			j.Elapsed = time.Duration(s) * time.Second
		}
		if j.TRES, err = parseTRES(cols[8]); err != nil {
			return nil, fmt.Errorf("sacct line %d: job %s: %w", i+1, j.ID, err)
		}
		if j.GPUs, err = gpusOf(j.TRES); err != nil {
			return nil, fmt.Errorf("sacct line %d: job %s: %w", i+1, j.ID, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// maxGPUs bounds a GPU count read from Slurm (a node's, a job's): far
// above any machine's, far below a sum of many that could wrap around.
const maxGPUs = 1 << 16

// gpusOf is an allocation's gres/gpu count; older Slurm lists only typed
// GPUs, which are summed then (gres/gpu:TYPE).
func gpusOf(t TRES) (int, error) {
	n := t["gres/gpu"]
	if n == 0 {
		for k, v := range t {
			if strings.HasPrefix(k, "gres/gpu:") {
				n += min(v, maxGPUs+1) // no wrap-around, however many types
			}
		}
	}
	if n > maxGPUs {
		return 0, fmt.Errorf("%d GPUs is not a plausible count", n)
	}
	return n, nil
}

// baseState is "CANCELLED" of "CANCELLED by 1000" and "RUNNING" of
// "RUNNING+" (sacct's mark of a state that changed).
func baseState(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), " ")
	return strings.TrimRight(s, "+")
}

// parseSacctTime reads a sacct time; "Unknown", "None" and empty are zero.
func parseSacctTime(s string) (time.Time, error) {
	switch s {
	case "", "Unknown", "None":
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation(sacctTime, s, time.UTC)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a time", truncate(s, 40))
	}
	return t, nil
}

// NodeGPUs is a compute node's GPU count from slurmctld.
type NodeGPUs struct {
	Node string
	GPUs int
}

// GPUCapacity reads each compute node's configured GPUs (sinfo's GRES
// column, one row per node and partition; a node in two partitions counts
// once). It is the capacity now, not over a past window: a cluster that
// grew or shrank in the window needs usage.capacity_gpus instead.
func (c *Client) GPUCapacity(ctx context.Context) ([]NodeGPUs, error) {
	out, err := c.run(ctx, "sinfo", "--noheader", "--Node", "--format=%N|%G")
	if err != nil {
		return nil, fmt.Errorf("slurm: read node GPUs: %w", err)
	}
	return ParseNodeGPUs(out)
}

// ParseNodeGPUs reads `sinfo --noheader --Node --format=%N|%G` lines such
// as "node1|gpu:h100:4(S:0-1),shard:8": GPUs are the gpu[:TYPE]:N entries.
func ParseNodeGPUs(out string) ([]NodeGPUs, error) {
	seen := map[string]bool{}
	var nodes []NodeGPUs
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, gres, ok := strings.Cut(line, "|")
		if !ok || name == "" || strings.Contains(gres, "|") {
			return nil, fmt.Errorf("sinfo line %d: want NODE|GRES: %q", i+1, truncate(line, 120))
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		n := 0
		if gres != "(null)" && gres != "" {
			for _, g := range splitGRES(gres) {
				if p := strings.IndexByte(g, '('); p >= 0 {
					g = g[:p]
				}
				parts := strings.Split(g, ":")
				if parts[0] != "gpu" || len(parts) < 2 {
					continue
				}
				k, err := strconv.Atoi(parts[len(parts)-1])
				if err != nil || k < 0 || k > maxGPUs {
					return nil, fmt.Errorf("sinfo line %d: GRES %q: bad GPU count", i+1, truncate(g, 60))
				}
				n += k
			}
		}
		nodes = append(nodes, NodeGPUs{Node: name, GPUs: n})
	}
	return nodes, nil
}

// splitGRES splits on commas outside parentheses ("gpu:4(S:0,1),shard:8").
func splitGRES(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

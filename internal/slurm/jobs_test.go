package slurm

import (
	"strings"
	"testing"
	"time"
)

// sacctSample is sacct 22.05's -X -D --parsable2 output for jobs of
// several states (times in UTC).
const sacctSample = `12|fdalice|lab|h100|COMPLETED|2026-11-02T10:00:00|2026-11-02T12:00:00|7200|billing=2,cpu=2,gres/gpu:h100=2,gres/gpu=2,mem=1000M,node=1
13|fdbob|lab|general|FAILED|2026-11-02T10:00:05|2026-11-02T10:00:07|2|billing=1,cpu=1,gres/gpu=1,mem=500M,node=1
14|fdcarol|other|general|CANCELLED by 0|2026-11-02T10:00:05|2026-11-02T10:30:05|1800|billing=1,cpu=1,gres/gpu=1,node=1
15|fdcarol|other|general|CANCELLED by 1001|None|2026-11-02T10:01:00|0|
16|fddave|other|h100|RUNNING|2026-11-03T00:00:00|Unknown|3600|cpu=4,gres/gpu:h100=4,node=1
17_3|fddave|other|h100|PENDING|Unknown|Unknown|0|
18+0|fdalice|lab|general|REQUEUED|2026-11-02T09:00:00|2026-11-02T09:10:00|600|cpu=1,gres/gpu:a100=1,gres/gpu:h100=2
`

func TestParseJobs(t *testing.T) {
	jobs, err := ParseJobs(sacctSample)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 7 {
		t.Fatalf("%d jobs", len(jobs))
	}
	j := jobs[0]
	if j.ID != "12" || j.User != "fdalice" || j.Account != "lab" || j.Partition != "h100" || j.State != "COMPLETED" ||
		!j.Start.Equal(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)) || j.End.Sub(j.Start) != 2*time.Hour ||
		j.Elapsed != 2*time.Hour || j.GPUs != 2 || j.TRES["mem"] != 1000 {
		t.Errorf("job 12: %+v", j)
	}
	if jobs[2].State != "CANCELLED" || jobs[3].State != "CANCELLED" || !jobs[3].Start.IsZero() || jobs[3].GPUs != 0 {
		t.Errorf("cancelled: %+v / %+v", jobs[2], jobs[3])
	}
	if r := jobs[4]; r.State != "RUNNING" || !r.End.IsZero() || r.GPUs != 4 {
		t.Errorf("running: %+v", r)
	}
	if p := jobs[5]; p.ID != "17_3" || !p.Start.IsZero() || p.State != "PENDING" {
		t.Errorf("pending: %+v", p)
	}
	if h := jobs[6]; h.ID != "18+0" || h.GPUs != 3 {
		t.Errorf("typed GPUs only: %+v (want their sum)", h)
	}

	for _, bad := range []string{
		"12|u|a|p|COMPLETED|2026-11-02T10:00:00|2026-11-02T12:00:00|7200",          // 8 fields
		"12|u|a|p|COMPLETED|2026-11-02T10:00:00|2026-11-02T12:00:00|7200|x|y",      // 10
		"12|u|a|p|COMPLETED|yesterday|2026-11-02T12:00:00|7200|",                   // time
		"12|u|a|p|COMPLETED|2026-11-02T12:00:00|2026-11-02T10:00:00|7200|",         // backwards
		"12|u|a|p|COMPLETED|2026-11-02T10:00:00|2026-11-02T12:00:00|-5|",           // elapsed
		"12|u|a|p|COMPLETED|2026-11-02T10:00:00|2026-11-02T12:00:00|7200|gres/gpu", // TRES
		"|u|a|p|COMPLETED|||0|", // no id
	} {
		if _, err := ParseJobs(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestParseNodeGPUs(t *testing.T) {
	nodes, err := ParseNodeGPUs("node1|gpu:h100:4(S:0-1)\nnode1|gpu:h100:4(S:0-1)\nnode2|gpu:a100:2,gpu:h100:2,shard:8\ncpu1|(null)\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 || nodes[0] != (NodeGPUs{"node1", 4}) || nodes[1] != (NodeGPUs{"node2", 4}) || nodes[2] != (NodeGPUs{"cpu1", 0}) {
		t.Errorf("%+v", nodes)
	}
	for _, bad := range []string{"node1", "node1|gpu:h100:x", "|gpu:4"} {
		if _, err := ParseNodeGPUs(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func FuzzParseJobs(f *testing.F) {
	for _, l := range strings.Split(sacctSample, "\n") {
		f.Add(l)
	}
	f.Add(sacctSample)
	f.Fuzz(func(t *testing.T, s string) {
		jobs, err := ParseJobs(s)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.ID == "" || j.State == "" || j.GPUs < 0 || j.Elapsed < 0 {
				t.Fatalf("accepted a job that cannot be: %+v", j)
			}
			if !j.Start.IsZero() && !j.End.IsZero() && j.End.Before(j.Start) {
				t.Fatalf("accepted a job ending before it starts: %+v", j)
			}
		}
	})
}

func FuzzParseNodeGPUs(f *testing.F) {
	f.Add("node1|gpu:h100:4(S:0-1)\nnode2|gpu:a100:2,gpu:h100:2,shard:8\ncpu1|(null)\n")
	f.Fuzz(func(t *testing.T, s string) {
		nodes, err := ParseNodeGPUs(s)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, n := range nodes {
			if n.GPUs < 0 || n.Node == "" || seen[n.Node] {
				t.Fatalf("bad node %+v", n)
			}
			seen[n.Node] = true
		}
	})
}

package slurm

import (
	"strings"
	"testing"
)

// Fuzz targets over what Slurm's commands print, beyond the per-parser
// ones in parse_test.go and jobs_test.go. Their seeds
// (testdata/fuzz/FuzzXxx) include the output of the harness's real Slurm
// 22.05 (test/harness/slurm) for the exact commands the client runs:
// sacctmgr's four reads, sacct's job listing, squeue and sinfo.

// FuzzDescription: a description Validate accepts is read back as itself
// from what Plan stores: managedDescription, as sacctmgr --parsable2
// prints it in the last column, through parseRows and splitDescription.
// Otherwise Plan would see a change on every run and never converge. Any
// stored text is managed exactly when it starts with Marker.
func FuzzDescription(f *testing.F) {
	f.Fuzz(func(t *testing.T, desc string) {
		stored := managedDescription(desc)
		d := Desired{Accounts: []Account{{Name: "lab", Description: desc}}}
		if d.Validate() == nil {
			rows, err := parseRows("lab|"+stored+"\n", 2)
			if err != nil || len(rows) != 1 {
				t.Fatalf("description %q stored as %q: %v", desc, stored, err)
			}
			got, managed := splitDescription(rows[0][1])
			if !managed || !strings.EqualFold(got, desc) {
				t.Fatalf("description %q stored as %q reads back as %q (managed %v)", desc, stored, got, managed)
			}
		}
		if _, managed := splitDescription(desc); managed != strings.HasPrefix(desc, Marker) {
			t.Fatalf("splitDescription(%q): managed %v", desc, managed)
		}
	})
}

// FuzzRunningTotals: squeue's running jobs add up: every user's and every
// account's GPUs sum to the same total, that of the rows' gres/gpu counts,
// and no count is negative, whatever the number of rows.
func FuzzRunningTotals(f *testing.F) {
	f.Fuzz(func(t *testing.T, out string, repeat uint16) {
		// Many rows of the same kind: the sums must not wrap.
		out = strings.Repeat(out, int(repeat%2048)+1)
		tab, err := parseRunning(out)
		if err != nil {
			return
		}
		rows, err := parseSuffixed(out, 3)
		if err != nil {
			t.Fatalf("parseRunning accepted what parseSuffixed refuses: %v", err)
		}
		want := 0
		for _, r := range rows {
			tres, err := parseTRES(r[2])
			if err != nil {
				t.Fatalf("parseRunning accepted TRES %q: %v", r[2], err)
			}
			if n := tres["gres/gpu"]; n > 0 {
				want += n
			}
		}
		sum := func(m map[string]int) int {
			s := 0
			for k, v := range m {
				if v <= 0 {
					t.Fatalf("%q holds %d GPUs", k, v)
				}
				s += v
			}
			return s
		}
		if u, a := sum(tab.ByUser), sum(tab.ByAccount); u != want || a != want || want < 0 {
			t.Fatalf("users hold %d GPUs, accounts %d, the rows say %d", u, a, want)
		}
	})
}

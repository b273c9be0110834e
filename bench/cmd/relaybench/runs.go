package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Run-to-run spread on a 2-core machine is as large as the differences the
// goals are about: the same binary's same-run ratios move by up to 0.16
// between runs. A goal met once is luck; one met in every run of a series
// is a result. summarizeRuns reads several relay JSON files (a series of
// runs of one build, unpinned and pinned mixed as they come) and lays out
// each goal's value in every run, its median (nearest rank, as the
// transfers' medians) and how many runs met it.

// loadResult reads one relaybench result.
func loadResult(path string) (*result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Goals) == 0 {
		return nil, fmt.Errorf("%s: no goals (a run without the transfer phase?)", path)
	}
	return &r, nil
}

// summarizeRuns returns the Markdown table of results' goals: one row per
// goal and pinning, one column per run, then the median and the count of
// runs that met it. names label the runs' columns.
func summarizeRuns(names []string, results []*result) string {
	type row struct {
		goal, aim string
		values    []float64 // NaN-free: a run without the goal leaves it out
		met, of   int
		byRun     map[int]goal
	}
	var order []string
	rows := map[string]*row{}
	for i, r := range results {
		for _, g := range r.Goals {
			key := g.Goal
			if r.Pinned {
				key += ", pinned"
			}
			rw := rows[key]
			if rw == nil {
				rw = &row{goal: key, aim: g.Aim, byRun: map[int]goal{}}
				rows[key] = rw
				order = append(order, key)
			}
			rw.values = append(rw.values, g.Value)
			rw.byRun[i] = g
			rw.of++
			if g.Met {
				rw.met++
			}
		}
	}
	var b strings.Builder
	b.WriteString("| goal | aim |")
	for _, n := range names {
		fmt.Fprintf(&b, " %s |", n)
	}
	b.WriteString(" median | met |\n|---|---|")
	b.WriteString(strings.Repeat("---|", len(names)+2))
	b.WriteString("\n")
	all, total := 0, 0
	for _, key := range order {
		rw := rows[key]
		fmt.Fprintf(&b, "| %s | %s |", rw.goal, rw.aim)
		for i := range results {
			g, ok := rw.byRun[i]
			switch {
			case !ok:
				b.WriteString("  |")
			case g.Met:
				fmt.Fprintf(&b, " **%.2f** |", g.Value)
			default:
				fmt.Fprintf(&b, " %.2f |", g.Value)
			}
		}
		fmt.Fprintf(&b, " %.2f | %d of %d |\n", median(rw.values), rw.met, rw.of)
		total++
		if rw.met == rw.of {
			all++
		}
	}
	fmt.Fprintf(&b, "\nMet in every run: %d of %d goals. Bold: met in that run.\n", all, total)
	return b.String()
}

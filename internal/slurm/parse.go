package slurm

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// parseRows splits `--parsable2 --noheader` output into rows of exactly
// fields columns. sacctmgr separates columns with '|' and escapes nothing,
// so a free-text column (Description) must be the last one asked for: any
// '|' beyond fields-1 stays in it. Blank lines are skipped; a row with too
// few columns is an error (the command printed something unexpected).
func parseRows(out string, fields int) ([][]string, error) {
	if fields < 1 {
		return nil, fmt.Errorf("parsable2: want at least one field")
	}
	var rows [][]string
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		cols := strings.SplitN(line, "|", fields)
		if len(cols) != fields {
			return nil, fmt.Errorf("parsable2 line %d: %d fields, want %d: %q", i+1, len(cols), fields, truncate(line, 120))
		}
		rows = append(rows, cols)
	}
	return rows, nil
}

// parseSuffixed splits squeue --Format output whose every field ends in
// '|' into rows of exactly fields columns.
func parseSuffixed(out string, fields int) ([][]string, error) {
	var rows [][]string
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r ")
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "|") {
			return nil, fmt.Errorf("squeue line %d: no trailing '|': %q", i+1, truncate(line, 120))
		}
		cols := strings.Split(strings.TrimSuffix(line, "|"), "|")
		if len(cols) != fields {
			return nil, fmt.Errorf("squeue line %d: %d fields, want %d: %q", i+1, len(cols), fields, truncate(line, 120))
		}
		for j := range cols {
			cols[j] = strings.TrimSpace(cols[j])
		}
		rows = append(rows, cols)
	}
	return rows, nil
}

// parseTRES reads a TRES list as sacctmgr and squeue print it:
// "cpu=1,mem=4000M,gres/gpu=2,gres/gpu:h100=2". Sizes with a unit suffix
// (K, M, G, T, P) are converted to megabytes, which is what Slurm counts
// memory in; frontdoor only compares them.
func parseTRES(s string) (TRES, error) {
	t := TRES{}
	s = strings.TrimSpace(s)
	if s == "" {
		return t, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validTRESName.MatchString(k) || v == "" {
			return nil, fmt.Errorf("TRES %q: %q is not name=count", truncate(s, 80), kv)
		}
		n, err := parseCount(v)
		if err != nil {
			return nil, fmt.Errorf("TRES %q: %s: %w", truncate(s, 80), k, err)
		}
		t[k] = n
	}
	return t, nil
}

func parseCount(v string) (int, error) {
	num, unit := v, byte(0)
	if c := v[len(v)-1]; c < '0' || c > '9' {
		num, unit = v[:len(v)-1], c
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("count %q is not a non-negative number", v)
	}
	mult := map[byte]int{0: 1, 'M': 1, 'G': 1 << 10, 'T': 1 << 20, 'P': 1 << 30}
	switch m, ok := mult[unit]; {
	case unit == 'K':
		return n / 1024, nil
	case !ok:
		return 0, fmt.Errorf("count %q: unknown unit %q", v, unit)
	case n > (1<<53)/m:
		return 0, fmt.Errorf("count %q too large", v)
	default:
		return n * m, nil
	}
}

// validTRESName: "cpu", "gres/gpu", "gres/gpu:h100", "fs/disk".
var validTRESName = regexp.MustCompile(`^[A-Za-z0-9_./:-]+$`)

// parseList reads a comma-separated name list ("labq,normal"), sorted.
func parseList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

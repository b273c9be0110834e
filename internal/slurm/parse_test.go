package slurm

import (
	"strings"
	"testing"
)

func TestParseRows(t *testing.T) {
	rows, err := parseRows("lab|frontdoor: the lab\nroot|default root account\n\nodd|has | a pipe\n", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[2][1] != "has | a pipe" || rows[0][0] != "lab" {
		t.Errorf("rows = %q", rows)
	}
	if _, err := parseRows("a|b\nc\n", 2); err == nil {
		t.Error("short row accepted")
	}
	if rows, err := parseRows("a||\n", 3); err != nil || rows[0][1] != "" || rows[0][2] != "" {
		t.Errorf("empty fields: %q %v", rows, err)
	}
}

func TestParseTRES(t *testing.T) {
	got, err := parseTRES("cpu=1,mem=4000M,node=1,billing=1,gres/gpu=2,gres/gpu:h100=2")
	if err != nil {
		t.Fatal(err)
	}
	want := TRES{"cpu": 1, "mem": 4000, "node": 1, "billing": 1, "gres/gpu": 2, "gres/gpu:h100": 2}
	if !got.Equal(want) {
		t.Errorf("got %v", got)
	}
	if got, _ := parseTRES("mem=2G"); got["mem"] != 2048 {
		t.Errorf("mem=2G -> %v", got)
	}
	for _, bad := range []string{"gpu", "=1", "a=", "a=-1", "a=1X", "a=x"} {
		if _, err := parseTRES(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if s := want.String(); s != "billing=1,cpu=1,gres/gpu=2,gres/gpu:h100=2,mem=4000,node=1" {
		t.Errorf("String = %s", s)
	}
	if s := setTo(TRES{"gres/gpu": 2, "cpu": 4}, TRES{"gres/gpu": 4}); s != "cpu=-1,gres/gpu=4" {
		t.Errorf("setTo = %s", s)
	}
}

func TestParseRunning(t *testing.T) {
	out := "fdalice|lab|cpu=1,node=1,billing=1,gres/gpu=1,gres/gpu:h100=1|\n" +
		"fdalice|lab|cpu=2,node=1,billing=2,gres/gpu=2,gres/gpu:h100=2|\n" +
		"fdbob|course|cpu=1,node=1,billing=1|\n" +
		"fdbob|lab|cpu=1,gres/gpu=1|\n"
	tab, err := parseRunning(out)
	if err != nil {
		t.Fatal(err)
	}
	if tab.ByUser["fdalice"] != 3 || tab.ByUser["fdbob"] != 1 || tab.ByAccount["lab"] != 4 || tab.ByAccount["course"] != 0 {
		t.Errorf("table = %+v", tab)
	}
	if _, err := parseRunning("fdalice|lab|gres/gpu=1\n"); err == nil {
		t.Error("line without trailing '|' accepted")
	}
	if u := (Usage{}); u.UserGPUs() != "unknown" || u.AccountGPUs() != "unknown" {
		t.Errorf("unknown usage prints %q %q", u.UserGPUs(), u.AccountGPUs())
	}
}

func TestDescriptions(t *testing.T) {
	for _, d := range []string{"", "NLP lab"} {
		got, managed := splitDescription(managedDescription(d))
		if !managed || got != d {
			t.Errorf("%q -> %q %v", d, got, managed)
		}
	}
	if _, managed := splitDescription("made by hand, frontdoor: not"); managed {
		t.Error("marker in the middle counts as managed")
	}
}

// FuzzParseRows: any sacctmgr output either parses into rows of exactly
// the asked width, whose fields joined back give the line, or is an error;
// never a panic.
func FuzzParseRows(f *testing.F) {
	f.Add("lab|frontdoor: x\nroot|default\n", 2)
	f.Add("a|b|c|d|e|f|g\n\n", 7)
	f.Add("|||\r\n", 4)
	f.Add("x", 0)
	f.Fuzz(func(t *testing.T, out string, fields int) {
		if fields > 64 {
			fields = 64
		}
		rows, err := parseRows(out, fields)
		if err != nil {
			return
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(out, "\n") {
			lines[strings.TrimSuffix(l, "\r")] = true
		}
		for _, r := range rows {
			if len(r) != fields {
				t.Fatalf("row %q has %d fields, want %d", r, len(r), fields)
			}
			if !lines[strings.Join(r, "|")] {
				t.Fatalf("row %q is not a line of the input", r)
			}
		}
	})
}

// FuzzParseTRES: a TRES list parses into counts that print and parse back
// to the same, or is an error.
func FuzzParseTRES(f *testing.F) {
	f.Add("cpu=1,mem=4000M,gres/gpu=2,gres/gpu:h100=2")
	f.Add("mem=1K")
	f.Add("a=99999999999999999999P")
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := parseTRES(s)
		if err != nil {
			return
		}
		for k, v := range tr {
			if v < 0 || strings.ContainsAny(k, ",=") {
				t.Fatalf("%q: %s=%d", s, k, v)
			}
		}
		back, err := parseTRES(tr.String())
		if err != nil || !back.Equal(tr) {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, tr, tr.String(), back, err)
		}
	})
}

// FuzzParseRunning: squeue output never panics the usage parser and GPU
// counts are never negative.
func FuzzParseRunning(f *testing.F) {
	f.Add("fdalice|lab|cpu=1,gres/gpu=1|\n")
	f.Add("a|b|c|\n|||\n")
	f.Fuzz(func(t *testing.T, out string) {
		tab, err := parseRunning(out)
		if err != nil {
			return
		}
		for _, m := range []map[string]int{tab.ByUser, tab.ByAccount} {
			for k, v := range m {
				if v < 0 {
					t.Fatalf("%q: %s holds %d", out, k, v)
				}
			}
		}
	})
}

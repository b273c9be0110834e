package usage

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/usage/costtest"
)

// budgetsEnv is a fake AWS Budgets, its client, a config and an audit file.
type budgetsEnv struct {
	f     *costtest.Server
	api   BudgetsAPI
	cfg   Config
	au    *audit.Logger
	audit string
}

func newBudgetsEnv(t *testing.T) *budgetsEnv {
	t.Helper()
	f := startFake(t)
	cfg := testConfig()
	a := fakeAWS(f, "off")
	cfg.AWS = &a
	cfg.Budgets = map[string]Budget{
		"nlp":      {Monthly: 20000, WarnAt: 0.8, Notify: []string{"pi@nlp.example.edu", "admin@nlp.example.edu"}},
		"vision":   {Monthly: 5000.5, WarnAt: 0.9},
		"students": {Monthly: 100, WarnAt: 1, Notify: []string{"hpc@example.edu"}},
	}
	api, tr, err := NewBudgetsClient(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	au, err := audit.Open(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { au.Close() })
	return &budgetsEnv{f: f, api: api, cfg: cfg, au: au, audit: path}
}

func (e *budgetsEnv) plan(t *testing.T) []BudgetChange {
	t.Helper()
	cs, err := PlanBudgets(context.Background(), e.api, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (e *budgetsEnv) apply(t *testing.T, cs []BudgetChange) {
	t.Helper()
	n, err := ApplyBudgets(context.Background(), e.api, e.cfg, cs, e.au, "test")
	if err != nil || n != PendingBudgetChanges(cs) {
		t.Fatalf("applied %d of %d: %v", n, PendingBudgetChanges(cs), err)
	}
}

func ops(cs []BudgetChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Op+" "+c.Budget)
	}
	return out
}

// Budgets are created with the filter, the amount, the notifications and
// the ownership tags; a second plan is empty and writes nothing; a
// foreign budget of a wanted name is reported and never touched, one
// without the prefix never even looked at.
func TestBudgetsCreateThenInStep(t *testing.T) {
	e := newBudgetsEnv(t)
	e.f.PutBudget("frontdoor-ml-cluster-students", "1.00") // someone's, by hand
	e.f.PutBudget("finance-total", "99999.00")
	e.f.SetBudgetsPageSize(1) // DescribeBudgets pages are followed

	cs := e.plan(t)
	want := []string{"create frontdoor-ml-cluster-nlp", "conflict frontdoor-ml-cluster-students", "create frontdoor-ml-cluster-vision"}
	if !slices.Equal(ops(cs), want) || e.f.Writes() != 0 {
		t.Fatalf("plan %v (writes %d), want %v", ops(cs), e.f.Writes(), want)
	}
	if e.f.Calls("ListTagsForResource") != 1 {
		t.Errorf("ListTagsForResource %d times: only the prefixed budget is looked at", e.f.Calls("ListTagsForResource"))
	}
	e.apply(t, cs)

	nlp, ok := e.f.Budget("frontdoor-ml-cluster-nlp")
	if !ok || nlp.Amount != "20000.00" || !slices.Equal(nlp.Metrics, []string{"UnblendedCost"}) {
		t.Fatalf("nlp budget: %+v", nlp)
	}
	var filter struct {
		And []struct {
			Tags struct {
				Key                  string
				Values, MatchOptions []string
			}
		}
	}
	if err := json.Unmarshal([]byte(nlp.Filter), &filter); err != nil || len(filter.And) != 2 ||
		filter.And[0].Tags.Key != "frontdoor:cluster" || filter.And[0].Tags.Values[0] != "ml-cluster" ||
		filter.And[1].Tags.Key != "frontdoor:account" || filter.And[1].Tags.Values[0] != "nlp" || filter.And[1].Tags.MatchOptions[0] != "EQUALS" {
		t.Errorf("nlp filter %s", nlp.Filter)
	}
	if !slices.Contains(nlp.Tags, costtest.Tag{Key: ManagedByTag, Value: ManagedByValue}) || !slices.Contains(nlp.Tags, costtest.Tag{Key: "frontdoor:cluster", Value: "ml-cluster"}) {
		t.Errorf("nlp tags %v", nlp.Tags)
	}
	var notes []string
	for _, n := range nlp.Notifications {
		notes = append(notes, n.NotificationType+" "+n.ComparisonOperator+" "+strings.TrimRight(strings.TrimRight(jsonNum(n.Threshold), "0"), ".")+" "+strings.Join(n.Addresses, ","))
	}
	wantN := []string{"ACTUAL GREATER_THAN 80 pi@nlp.example.edu,admin@nlp.example.edu", "ACTUAL GREATER_THAN 100 pi@nlp.example.edu,admin@nlp.example.edu",
		"FORECASTED GREATER_THAN 80 pi@nlp.example.edu,admin@nlp.example.edu", "FORECASTED GREATER_THAN 100 pi@nlp.example.edu,admin@nlp.example.edu"}
	if !slices.Equal(notes, wantN) {
		t.Errorf("nlp notifications\n%v\nwant\n%v", notes, wantN)
	}
	if v, _ := e.f.Budget("frontdoor-ml-cluster-vision"); v.Amount != "5000.50" || len(v.Notifications) != 0 {
		t.Errorf("vision: %+v", v)
	}

	writes := e.f.Writes()
	again := e.plan(t)
	if PendingBudgetChanges(again) != 0 || e.f.Writes() != writes {
		t.Errorf("second plan: %v", ops(again))
	}
	if s, _ := e.f.Budget("frontdoor-ml-cluster-students"); s.Amount != "1.00" || len(s.Notifications) != 0 || len(s.Tags) != 0 {
		t.Errorf("the foreign budget was touched: %+v", s)
	}
	if f, _ := e.f.Budget("finance-total"); f.Amount != "99999.00" {
		t.Errorf("finance-total touched: %+v", f)
	}
	lines := auditLines(t, e.audit)
	if len(lines) != 2 || !strings.Contains(lines[0], `"type":"budgets.change"`) || !strings.Contains(lines[0], `"result":"ok"`) ||
		!strings.Contains(lines[0], "create frontdoor-ml-cluster-nlp") {
		t.Errorf("audit:\n%s", strings.Join(lines, "\n"))
	}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) + ".0" }

func auditLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), TypeBudgets) {
			out = append(out, sc.Text())
		}
	}
	return out
}

// A changed amount is one update; changed addresses and warn_at are
// subscriber and notification changes; an account taken out of the
// config loses its budget; each time the next plan is empty. A budget
// with the prefix and the managed-by tag but another cluster's tag is not
// ours: never deleted.
func TestBudgetsFollowTheConfig(t *testing.T) {
	e := newBudgetsEnv(t)
	e.f.PutBudget("frontdoor-ml-cluster-old", "5.00", costtest.Tag{Key: ManagedByTag, Value: ManagedByValue},
		costtest.Tag{Key: "frontdoor:cluster", Value: "other-cluster"})
	e.apply(t, e.plan(t))

	steps := []struct {
		name   string
		change func(c *Config)
		want   []string
	}{
		{"amount", func(c *Config) { b := c.Budgets["vision"]; b.Monthly = 6000; c.Budgets["vision"] = b },
			[]string{"update frontdoor-ml-cluster-vision"}},
		{"addresses", func(c *Config) {
			b := c.Budgets["nlp"]
			b.Notify = []string{"pi@nlp.example.edu", "new@nlp.example.edu"}
			c.Budgets["nlp"] = b
		}, []string{
			"add-subscriber frontdoor-ml-cluster-nlp", "remove-subscriber frontdoor-ml-cluster-nlp",
			"add-subscriber frontdoor-ml-cluster-nlp", "remove-subscriber frontdoor-ml-cluster-nlp",
			"add-subscriber frontdoor-ml-cluster-nlp", "remove-subscriber frontdoor-ml-cluster-nlp",
			"add-subscriber frontdoor-ml-cluster-nlp", "remove-subscriber frontdoor-ml-cluster-nlp"}},
		{"warn_at", func(c *Config) { b := c.Budgets["students"]; b.WarnAt = 0.5; c.Budgets["students"] = b },
			[]string{"add-notification frontdoor-ml-cluster-students", "add-notification frontdoor-ml-cluster-students"}},
		{"removed", func(c *Config) { delete(c.Budgets, "vision") }, []string{"delete frontdoor-ml-cluster-vision"}},
	}
	for _, st := range steps {
		st.change(&e.cfg)
		cs := e.plan(t)
		if !slices.Equal(ops(cs), st.want) {
			t.Fatalf("%s: plan %v, want %v", st.name, ops(cs), st.want)
		}
		e.apply(t, cs)
		if again := e.plan(t); PendingBudgetChanges(again) != 0 {
			t.Fatalf("%s: plan after apply %v", st.name, ops(again))
		}
	}
	if v, _ := e.f.Budget("frontdoor-ml-cluster-nlp"); len(v.Notifications) != 4 || !slices.Equal(v.Notifications[0].Addresses, []string{"pi@nlp.example.edu", "new@nlp.example.edu"}) {
		t.Errorf("nlp after the address change: %+v", v.Notifications)
	}
	if o, ok := e.f.Budget("frontdoor-ml-cluster-old"); !ok || o.Amount != "5.00" {
		t.Errorf("another cluster's budget was changed or deleted: %+v", o)
	}
}

// Missing permissions name the IAM action and the policy; the failed
// change and those not attempted are audited.
func TestBudgetsPermissions(t *testing.T) {
	e := newBudgetsEnv(t)
	e.f.Deny("CreateBudget", true)
	cs := e.plan(t)
	_, err := ApplyBudgets(context.Background(), e.api, e.cfg, cs, e.au, "test")
	if !errors.Is(err, ErrAccessDenied) || !strings.Contains(err.Error(), "budgets:ModifyBudget") || !strings.Contains(err.Error(), "deploy/iam-budgets-policy.json") {
		t.Errorf("denied: %v", err)
	}
	lines := auditLines(t, e.audit)
	if len(lines) != 3 || !strings.Contains(lines[0], `"result":"fail"`) || !strings.Contains(lines[1], "not attempted") {
		t.Errorf("audit:\n%s", strings.Join(lines, "\n"))
	}
	e.f.Deny("DescribeBudgets", true)
	if _, err := PlanBudgets(context.Background(), e.api, e.cfg); !errors.Is(err, ErrAccessDenied) || !strings.Contains(err.Error(), "budgets:ViewBudget") {
		t.Errorf("plan denied: %v", err)
	}
	e.cfg.AWS.AccountID = ""
	if _, err := PlanBudgets(context.Background(), e.api, e.cfg); !errors.Is(err, ErrNoAccountID) {
		t.Errorf("no account id: %v", err)
	}
}

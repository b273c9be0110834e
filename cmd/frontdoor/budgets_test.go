package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fdusage "github.com/frontdoor-hpc/frontdoor/internal/usage"
	"github.com/frontdoor-hpc/frontdoor/internal/usage/costtest"
)

// frontdoor budgets plan | apply against the fake AWS Budgets: the plan
// shows the creations and the foreign budget it leaves alone, apply makes
// them and audits them, and the next plan has nothing to do.
func TestBudgetsCommand(t *testing.T) {
	dir := t.TempDir()
	awsTestEnv(t, costtest.AccessKeyID, costtest.SecretAccessKey)
	fake := costtest.Start(t, "us-east-1")
	fake.PutBudget("frontdoor-ml-vision", "1.00")
	audit := filepath.Join(dir, "audit.jsonl")
	cfg := `gateway: {name: gw1, host_keys: [host], user_ca_key: ca}
backend: {known_hosts: [kh]}
directory: {static: {file: users.yaml}}
nodes: [{name: login1, addr: "127.0.1.1:22", pool: general}]
policy: {rules: [{name: all, groups: ["*"], pools: [general]}]}
audit: {file: ` + audit + `}
usage:
  budgets:
    nlp: {monthly: 20000, notify: [pi@nlp.example.edu]}
    vision: {monthly: 500}
  aws:
    cluster: ml
    account_id: "` + costtest.AccountID + `"
    budgets_endpoint: ` + fake.URL + `
`
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(verb string, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := runBudgets(context.Background(), verb, append([]string{"--config", path}, args...), &out); err != nil {
			t.Fatalf("budgets %s: %v\n%s", verb, err, out.String())
		}
		return out.String()
	}
	plan := run("plan")
	if !strings.Contains(plan, "+ create frontdoor-ml-nlp: 20000.00 USD a month") || !strings.Contains(plan, "! conflict frontdoor-ml-vision") ||
		fake.Writes() != 0 {
		t.Errorf("plan:\n%s", plan)
	}
	var changes []fdusage.BudgetChange
	if err := json.Unmarshal([]byte(run("plan", "-o", "json")), &changes); err != nil || len(changes) != 2 || changes[0].Op != "create" {
		t.Errorf("plan -o json: %+v %v", changes, err)
	}
	applied := run("apply")
	if !strings.Contains(applied, "applied: create frontdoor-ml-nlp") || !strings.Contains(applied, "left alone: conflict frontdoor-ml-vision") {
		t.Errorf("apply:\n%s", applied)
	}
	if b, ok := fake.Budget("frontdoor-ml-nlp"); !ok || len(b.Notifications) != 4 {
		t.Errorf("nlp budget: %+v", b)
	}
	if again := run("plan"); !strings.Contains(again, "nothing to do") || strings.Contains(again, "+ ") {
		t.Errorf("second plan:\n%s", again)
	}
	data, _ := os.ReadFile(audit)
	if !strings.Contains(string(data), `"type":"budgets.change"`) || !strings.Contains(string(data), "frontdoor budgets apply") {
		t.Errorf("audit:\n%s", data)
	}
	if b, _ := fake.Budget("frontdoor-ml-vision"); b.Amount != "1.00" {
		t.Errorf("the foreign budget changed: %+v", b)
	}
}

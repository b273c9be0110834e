package usage

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
)

var (
	nov1 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	dec1 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
)

func at(day, hour int) time.Time { return time.Date(2026, 11, day, hour, 0, 0, 0, time.UTC) }

func testConfig() Config {
	c := DefaultConfig()
	c.Rates = Rates{
		InstanceTypes:    map[string]InstanceRate{"ml.p5.48xlarge": {Hourly: 80, GPUs: 8}},
		Partitions:       map[string]string{"h100": "ml.p5.48xlarge"},
		DefaultGPUHourly: 2, LoginNodeHourly: 1,
	}
	c.CapacityInstanceType = "ml.p5.48xlarge"
	return c
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func rowOf(t *testing.T, r Report, key string) Row {
	t.Helper()
	for _, x := range r.Rows {
		if x.Key == key {
			return x
		}
	}
	t.Fatalf("no row %q in %+v", key, r.Rows)
	return Row{}
}

func TestJobsClippedToTheWindowAllStates(t *testing.T) {
	jobs := []slurm.Job{
		// Started before the window: only Nov 1 00:00–02:00 counts.
		{ID: "1", User: "ann", Account: "laba", Partition: "h100", State: "COMPLETED", Start: time.Date(2026, 10, 31, 22, 0, 0, 0, time.UTC), End: at(1, 2), GPUs: 4},
		// Failed and cancelled jobs held their GPUs too.
		{ID: "2", User: "ann", Account: "laba", Partition: "general", State: "FAILED", Start: at(2, 0), End: at(2, 3), GPUs: 1},
		{ID: "3", User: "bob", Account: "labb", Partition: "general", State: "CANCELLED", Start: at(3, 0), End: at(3, 1), GPUs: 2},
		// Cancelled while pending: never ran, counts nothing.
		{ID: "4", User: "bob", Account: "labb", Partition: "general", State: "CANCELLED", GPUs: 0},
		// Running: until now (Nov 10 12:00), not the window's end.
		{ID: "5", User: "bob", Account: "labb", Partition: "h100", State: "RUNNING", Start: at(10, 0), GPUs: 1},
		// Ends after the window: clipped at Dec 1.
		{ID: "6", User: "cat", Account: "labb", Partition: "x", State: "TIMEOUT", Start: time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC), End: time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC), GPUs: 1},
		// Entirely outside.
		{ID: "7", User: "cat", Account: "labb", State: "COMPLETED", Start: at(1, 0).AddDate(0, -1, 0), End: at(2, 0).AddDate(0, -1, 0), GPUs: 8},
	}
	now := at(10, 12)
	r := Aggregate(Input{From: nov1, To: dec1, Now: now, By: ByAccount, Jobs: jobs, Config: testConfig(), CapacityGPUs: 8})
	a, b := rowOf(t, r, "laba"), rowOf(t, r, "labb")
	if !near(a.GPUHours, 4*2+3) || !near(a.GPUCost, 8*10+3*2) {
		t.Errorf("laba: %.2f GPU-h, cost %.2f; want 11, 86", a.GPUHours, a.GPUCost)
	}
	// Job 6 starts after now: running clipped to now means it is not in
	// the window yet; bob's running job counts 12 h.
	if !near(b.GPUHours, 2+12) || b.Jobs != 2 || b.JobStates["CANCELLED"] != 1 || b.JobStates["RUNNING"] != 1 {
		t.Errorf("labb: %+v", b)
	}
	if !near(r.CapacityGPUHours, 8*(9*24+12)) || !near(r.IdleGPUHours, r.CapacityGPUHours-25) || !near(r.IdleCost, r.IdleGPUHours*10) {
		t.Errorf("capacity %.1f idle %.1f cost %.1f", r.CapacityGPUHours, r.IdleGPUHours, r.IdleCost)
	}

	// Once the month is over, job 6 counts its hour in the window, unpriced.
	r = Aggregate(Input{From: nov1, To: dec1, Now: dec1.AddDate(0, 0, 3), By: ByUser, Jobs: jobs, Config: DefaultConfig()})
	c := rowOf(t, r, "cat")
	if !near(c.GPUHours, 1) || !near(c.UnpricedGPUHours, 1) || c.JobStates["TIMEOUT"] != 1 || len(r.Notes) == 0 {
		t.Errorf("cat: %+v notes %v", c, r.Notes)
	}
	if rb := rowOf(t, r, "bob"); !near(rb.GPUHours, 2+(20*24+24)) {
		t.Errorf("bob after the month: %.1f GPU-h (running job until Dec 1)", rb.GPUHours)
	}
	// Days: 30 days, job 1's 8 GPU-hours on Nov 1 and none on Oct 31.
	if len(r.Days) != 30 || !near(r.Days[0].GPUHours["ann"], 8) || !near(r.Days[29].GPUHours["cat"], 1) {
		t.Errorf("days: %d, first %v, last %v", len(r.Days), r.Days[0], r.Days[29])
	}
	var sum float64
	for _, d := range r.Days {
		for _, v := range d.GPUHours {
			sum += v
		}
	}
	if !near(sum, r.AllocatedGPUHours) {
		t.Errorf("days add up to %.2f, allocated %.2f", sum, r.AllocatedGPUHours)
	}
}

func ev(typ, gw, id, user, node string, t time.Time) audit.Event {
	return audit.Event{Time: t, Type: typ, Gateway: gw, Session: id, User: user, Node: node}
}

func TestSessionsAndLoginNodeShare(t *testing.T) {
	events := []audit.Event{
		// ann: two overlapping sessions on login1, 10–12 and 11–13.
		ev(audit.TypeSessionStart, "gw1", "a1", "ann", "login1", at(2, 10)),
		ev(audit.TypeSessionEnd, "gw1", "a1", "ann", "login1", at(2, 12)),
		ev(audit.TypeSessionStart, "gw1", "a2", "ann", "login1", at(2, 11)),
		ev(audit.TypeSessionEnd, "gw1", "a2", "ann", "login1", at(2, 13)),
		// bob on login1 12–14 (shares 12–13 with ann).
		ev(audit.TypeSessionStart, "gw2", "b1", "bob", "login1", at(2, 12)),
		ev(audit.TypeSessionEnd, "gw2", "b1", "bob", "login1", at(2, 14)),
		// The same record read twice (file and S3).
		ev(audit.TypeSessionStart, "gw2", "b1", "bob", "login1", at(2, 12)),
		// cat: only the end survived (start before the records read).
		{Time: at(1, 2), Type: audit.TypeSessionEnd, Gateway: "gw1", Session: "c1", User: "cat", Node: "login2", Duration: 4 * 3600},
		// dan: no end (still running, or gw3 crashed): counts up to
		// open_session_max (24h) after its start.
		ev(audit.TypeSessionStart, "gw3", "d1", "dan", "login2", at(5, 0)),
		// A session id reused by another gateway is another session.
		ev(audit.TypeSessionStart, "gw9", "a1", "eve", "login3", at(3, 0)),
		ev(audit.TypeSessionEnd, "gw9", "a1", "eve", "login3", at(3, 1)),
		// Unusable: an end with neither start nor duration.
		ev(audit.TypeSessionEnd, "gw1", "zz", "zed", "login3", at(3, 0)),
	}
	events[0].Rule, events[4].Rule = "nlp", "vision"
	r := Aggregate(Input{From: nov1, To: dec1, Now: at(20, 0), By: ByUser, Events: Dedup(events), Config: testConfig()})
	a, b, c, d, e := rowOf(t, r, "ann"), rowOf(t, r, "bob"), rowOf(t, r, "cat"), rowOf(t, r, "dan"), rowOf(t, r, "eve")
	if a.Sessions != 2 || !near(a.SessionHours, 4) || !near(a.LoginNodeHours, 2+0.5) {
		t.Errorf("ann: %d sessions, %.2f h, login-node %.2f h; want 2, 4, 2.5 (alone 10–12, shares 12–13)", a.Sessions, a.SessionHours, a.LoginNodeHours)
	}
	if b.Sessions != 1 || !near(b.SessionHours, 2) || !near(b.LoginNodeHours, 1.5) || !near(b.LoginCost, 1.5) {
		t.Errorf("bob: %+v", b)
	}
	// cat's session ran Oct 31 22:00 – Nov 1 02:00: 2 h in the window.
	if !near(c.SessionHours, 2) || !near(c.LoginNodeHours, 2) {
		t.Errorf("cat: %+v", c)
	}
	if d.OpenSessions != 1 || !near(d.SessionHours, 24) {
		t.Errorf("dan: %+v, want one open session of 24h", d)
	}
	if e.Sessions != 1 {
		t.Errorf("eve: %+v", e)
	}
	// Login-node hours add up to the nodes' busy time: login1 10–14,
	// login2 2 h (cat) + 24 h (dan), login3 1 h.
	if !near(r.Total.LoginNodeHours, 4+26+1) || r.Total.Users != 5 || len(r.Notes) != 1 {
		t.Errorf("total %+v, notes %v", r.Total, r.Notes)
	}

	// An open session counts only until now.
	r = Aggregate(Input{From: nov1, To: dec1, Now: at(5, 6), By: ByUser, Events: events, Config: testConfig()})
	if d := rowOf(t, r, "dan"); !near(d.SessionHours, 6) {
		t.Errorf("dan before the cap: %.2f h, want 6", d.SessionHours)
	}

	// By group: the caller's classification, else the latest session's rule.
	r = Aggregate(Input{From: nov1, To: dec1, Now: at(20, 0), By: ByGroup, Events: events, Config: testConfig(),
		UserGroup: map[string]string{"cat": "nlp"}})
	if g := rowOf(t, r, "nlp"); g.Users != 2 || g.Sessions != 3 {
		t.Errorf("nlp: %+v (ann by her session's rule, cat by the directory)", g)
	}
	if g := rowOf(t, r, NoGroup); g.Users != 2 { // dan and eve: no rule anywhere
		t.Errorf("no group: %+v", g)
	}
}

func TestGroupAndAccountOfJobsAndSessions(t *testing.T) {
	jobs := []slurm.Job{
		{ID: "1", User: "ann", Account: "laba", Partition: "general", State: "COMPLETED", Start: at(2, 0), End: at(2, 10), GPUs: 1},
		{ID: "2", User: "ann", Account: "labx", Partition: "general", State: "COMPLETED", Start: at(2, 0), End: at(2, 1), GPUs: 1},
	}
	events := []audit.Event{
		ev(audit.TypeSessionStart, "gw1", "a1", "ann", "login1", at(2, 0)),
		ev(audit.TypeSessionEnd, "gw1", "a1", "ann", "login1", at(2, 2)),
	}
	cfg := testConfig()
	cfg.Budgets = map[string]Budget{"laba": {Monthly: 30, WarnAt: 0.5}, "labz": {Monthly: 10, WarnAt: DefaultWarnAt}}
	// By account: jobs by their own account, the session by ann's main one.
	r := Aggregate(Input{From: nov1, To: dec1, Now: dec1, By: ByAccount, Jobs: jobs, Events: events, Config: cfg})
	if a := rowOf(t, r, "laba"); a.Sessions != 1 || !near(a.GPUHours, 10) || !near(a.Cost, 10*2+2*1) {
		t.Errorf("laba: %+v", a)
	}
	if x := rowOf(t, r, "labx"); x.Sessions != 0 || !near(x.GPUHours, 1) {
		t.Errorf("labx: %+v", x)
	}
	// Budgets: laba spent 22 of 30 (past warn_at 0.5), labz nothing.
	if len(r.Budgets) != 2 || !near(r.Budgets[0].Spent, 22) || r.Budgets[0].Status != BudgetWarn || r.Budgets[1].Status != BudgetOK {
		t.Errorf("budgets %+v", r.Budgets)
	}
	// By group: everything of ann in her group, whatever the account.
	r = Aggregate(Input{From: nov1, To: dec1, Now: dec1, By: ByGroup, Jobs: jobs, Events: events, Config: cfg,
		UserGroup: map[string]string{"ann": "nlp"}, UserAccount: map[string]string{"ann": "labx"}})
	if len(r.Rows) != 1 || r.Rows[0].Key != "nlp" || r.Rows[0].Jobs != 2 || !near(r.Rows[0].GPUHours, 11) {
		t.Errorf("by group: %+v", r.Rows)
	}
	// The budget follows UserAccount for login cost: labx's session cost.
	if !near(r.Budgets[0].Spent, 20) {
		t.Errorf("laba spend with ann's sessions on labx: %.2f, want 20", r.Budgets[0].Spent)
	}
}

func TestMonthsCoveredAndBudgetWarning(t *testing.T) {
	for _, tc := range []struct {
		from, to time.Time
		want     float64
	}{
		{nov1, dec1, 1},
		{nov1, at(16, 0), 0.5},
		{time.Date(2026, 10, 17, 0, 0, 0, 0, time.UTC), at(16, 0), 15.0/31 + 0.5},
		{nov1, time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC), 3},
	} {
		if got := monthsCovered(tc.from, tc.to); !near(got, tc.want) {
			t.Errorf("monthsCovered(%v, %v) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	b := Budget{Monthly: 5000, WarnAt: 0.8}
	if s := BudgetWarning("nlp", 3999, b); s != "" {
		t.Errorf("below warn_at: %q", s)
	}
	if s := BudgetWarning("nlp", 4100, b); !strings.Contains(s, "82%") || !strings.Contains(s, "nlp") {
		t.Errorf("past warn_at: %q", s)
	}
	if s := BudgetWarning("nlp", 5200, b); !strings.Contains(s, "over its monthly budget") {
		t.Errorf("over: %q", s)
	}
	if s := BudgetWarning("nlp", 100, Budget{}); s != "" {
		t.Errorf("no budget: %q", s)
	}
	if s := BudgetWarning("nlp", 900, Budget{Monthly: 1000, WarnAt: DefaultWarnAt}); s == "" {
		t.Error("past the default warn_at 0.8: no warning")
	}
	f, to := MonthWindow(time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC))
	if !f.Equal(dec1) || !to.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("MonthWindow: %v %v", f, to)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := testConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no gpus", func(c *Config) { c.Rates.InstanceTypes["ml.p5.48xlarge"] = InstanceRate{Hourly: 1} }, "usage.rates.instance_types.ml.p5.48xlarge.gpus: must be between 1 and 64"},
		{"no price", func(c *Config) { c.Rates.InstanceTypes["ml.p5.48xlarge"] = InstanceRate{GPUs: 8} }, "usage.rates.instance_types.ml.p5.48xlarge.hourly: required"},
		{"bad type", func(c *Config) { c.Rates.InstanceTypes["P5 big"] = InstanceRate{Hourly: 1, GPUs: 1} }, `"P5 big" is not an instance type name`},
		{"unknown type", func(c *Config) { c.Rates.Partitions["gpu"] = "ml.p4d.24xlarge" }, `usage.rates.partitions.gpu: instance type "ml.p4d.24xlarge" is not in rates.instance_types`},
		{"negative", func(c *Config) { c.Rates.LoginNodeHourly = -1 }, "usage.rates.login_node_hourly: must be a price"},
		{"nan", func(c *Config) { c.Rates.DefaultGPUHourly = math.NaN() }, "usage.rates.default_gpu_hourly: must be a price"},
		{"budget", func(c *Config) { c.Budgets = map[string]Budget{"nlp": {Monthly: 0, WarnAt: 0.8}} }, "usage.budgets.nlp.monthly: must be a positive amount"},
		{"warn", func(c *Config) { c.Budgets = map[string]Budget{"nlp": {Monthly: 1, WarnAt: 1.5}} }, "usage.budgets.nlp.warn_at: must be a fraction"},
		{"account", func(c *Config) { c.Budgets = map[string]Budget{"a b": {Monthly: 1, WarnAt: 0.5}} }, `usage.budgets.a b: "a b" is not a Slurm account name`},
		{"mixed-case account", func(c *Config) { c.Budgets = map[string]Budget{"NLP": {Monthly: 1, WarnAt: 0.5}} }, `usage.budgets.NLP: "NLP" is not a Slurm account name`},
		{"warn unset", func(c *Config) { c.Budgets = map[string]Budget{"nlp": {Monthly: 1}} }, "usage.budgets.nlp.warn_at: must be a fraction"},
		{"partition", func(c *Config) { c.Rates.Partitions["a,b"] = "ml.p5.48xlarge" }, `usage.rates.partitions.a,b: "a,b" is not a Slurm partition name`},
		{"lookback", func(c *Config) { c.AuditLookback = -time.Hour }, "usage.audit_lookback"},
		{"capacity", func(c *Config) { c.CapacityGPUs = -1 }, "usage.capacity_gpus"},
		{"capacity type", func(c *Config) { c.CapacityInstanceType = "ml.g5.xlarge" }, "usage.capacity_instance_type"},
		{"currency", func(c *Config) { c.Currency = "dollars" }, "usage.currency"},
		{"open max", func(c *Config) { c.OpenSessionMax = time.Second }, "usage.open_session_max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			c.Rates.InstanceTypes = map[string]InstanceRate{"ml.p5.48xlarge": {Hourly: 80, GPUs: 8}}
			c.Rates.Partitions = map[string]string{"h100": "ml.p5.48xlarge"}
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
	if p, ok := testConfig().GPUHourly("h100"); !ok || p != 10 {
		t.Errorf("h100: %v %v", p, ok)
	}
	if p, ok := (Config{}).GPUHourly("h100"); ok || p != 0 {
		t.Errorf("no rates: %v %v", p, ok)
	}
}

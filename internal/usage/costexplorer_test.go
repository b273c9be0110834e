package usage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient/awsjsontest"
	"github.com/frontdoor-hpc/frontdoor/internal/usage/costtest"
)

// startFake serves Cost Explorer and Budgets for one test, with the
// SDK's credentials set to the fake's and no endpoint variables, so the
// machine's AWS setup plays no part.
func startFake(t *testing.T) *costtest.Server {
	t.Helper()
	awsjsontest.Setenv(t.Setenv)
	for _, k := range endpointVars {
		t.Setenv(k, "")
	}
	return costtest.Start(t, "us-east-1")
}

// endpointVars are the SDK's endpoint variables for the two services.
var endpointVars = []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_COST_EXPLORER", "AWS_ENDPOINT_URL_BUDGETS"}

func fakeAWS(f *costtest.Server, cacheDir string) AWSConfig {
	c := DefaultAWSConfig()
	c.Cluster = "ml-cluster"
	c.Endpoint, c.BudgetsEndpoint = f.URL, f.URL
	c.AccountID = costtest.AccountID
	c.CacheDir = cacheDir
	c.Derive()
	return c
}

func newBills(t *testing.T, cfg AWSConfig) *BillSource {
	t.Helper()
	s, err := NewBillSource(context.Background(), cfg, "USD")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Months relative to the real clock: the fake refuses days after today,
// as Cost Explorer does.
func months() (twoBack, lastMonth, thisMonth time.Time) {
	thisMonth, _ = MonthWindow(time.Now())
	return thisMonth.AddDate(0, -2, 0), thisMonth.AddDate(0, -1, 0), thisMonth
}

func cost(day time.Time, account, role, amount string) costtest.Cost {
	return costtest.Cost{Day: day, Cluster: "ml-cluster", Account: account, Role: role, Unblended: amount}
}

// One report is one request: the window's days, MONTHLY, filtered on the
// cluster tag (EQUALS), grouped by the account and role tags; a window
// across a month boundary comes back as two periods; another cluster's
// cost and days outside the window are not in it.
func TestBillRequestAndMonthBoundary(t *testing.T) {
	f := startFake(t)
	twoBack, last, _ := months()
	f.SetCosts(
		cost(twoBack.AddDate(0, 0, 13), "nlp", "compute", "1000"), // before the window
		cost(twoBack.AddDate(0, 0, 14), "nlp", "compute", "10.123456789"),
		cost(twoBack.AddDate(0, 0, 20), "nlp", "compute", "0.000000001"),
		cost(twoBack.AddDate(0, 0, 20), "", "login", "2.50"),
		cost(last.AddDate(0, 0, 2), "shared", "compute", "40"),
		cost(last.AddDate(0, 0, 9), "vision", "", "-1.25"),    // a credit, no role tag
		cost(last.AddDate(0, 0, 10), "nlp", "compute", "500"), // the window's end is excluded
		costtest.Cost{Day: last.AddDate(0, 0, 3), Cluster: "other-cluster", Account: "nlp", Role: "compute", Unblended: "77"},
	)
	s := newBills(t, fakeAWS(f, "off"))
	from, to := twoBack.AddDate(0, 0, 14), last.AddDate(0, 0, 10)
	b, err := s.Bill(context.Background(), from, to, false)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.CERequests()
	if len(reqs) != 1 || b.Requests != 1 || b.Cached {
		t.Fatalf("%d requests (bill says %d, cached %v), want 1", len(reqs), b.Requests, b.Cached)
	}
	r := reqs[0]
	want := costtest.CERequest{Start: from.Format("2006-01-02"), End: to.Format("2006-01-02"), Granularity: "MONTHLY",
		Metrics: []string{"UnblendedCost"}, FilterKey: "frontdoor:cluster", FilterValues: []string{"ml-cluster"},
		FilterMatch: []string{"EQUALS"}, GroupBy: []string{"TAG:frontdoor:account", "TAG:frontdoor:role"}}
	if !sameRequest(r, want) {
		t.Errorf("request\n got %+v\nwant %+v", r, want)
	}
	total, _ := b.Total()
	if total.FloatString(10) != "51.3734567900" || b.Estimated {
		t.Errorf("total %s estimated %v; lines %+v", total.FloatString(10), b.Estimated, b.Lines)
	}
	periods := map[time.Time]bool{}
	for _, l := range b.Lines {
		periods[l.Start] = true
	}
	// Cost Explorer's periods start at the window's first day, then at
	// the month's.
	if len(periods) != 2 || !periods[from] || !periods[last] {
		t.Errorf("periods %v, want %s and %s", periods, from, last)
	}
	if !slices.ContainsFunc(b.Lines, func(l BillLine) bool { return l.Account == "vision" && l.Role == "" && l.Amount == "-1.2500000000" }) {
		t.Errorf("the untagged-role credit is missing: %+v", b.Lines)
	}
}

func sameRequest(a, b costtest.CERequest) bool {
	return a.Start == b.Start && a.End == b.End && a.Granularity == b.Granularity && slices.Equal(a.Metrics, b.Metrics) &&
		a.FilterKey == b.FilterKey && slices.Equal(a.FilterValues, b.FilterValues) && slices.Equal(a.FilterMatch, b.FilterMatch) &&
		slices.Equal(a.GroupBy, b.GroupBy) && a.NextPageToken == b.NextPageToken
}

// Grouped results come in pages: every page is followed (and counted),
// the token sent back as given; past max_requests the report stops with
// ErrRequestBudget and the endpoint never sees more.
func TestBillPaginationAndRequestBudget(t *testing.T) {
	f := startFake(t)
	_, last, _ := months()
	var costs []costtest.Cost
	for i, a := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7"} {
		costs = append(costs, cost(last.AddDate(0, 0, i), a, "compute", "1.01"))
	}
	f.SetCosts(costs...)
	f.SetPageSize(2)
	s := newBills(t, fakeAWS(f, "off"))
	b, err := s.Bill(context.Background(), last, last.AddDate(0, 0, 7), false)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.CERequests()
	if len(b.Lines) != 7 || b.Requests != 4 || len(reqs) != 4 {
		t.Fatalf("%d lines in %d requests (endpoint saw %d), want 7 in 4", len(b.Lines), b.Requests, len(reqs))
	}
	for i, r := range reqs {
		want := ""
		if i > 0 {
			want = "page-" + string(rune('0'+2*i))
		}
		if r.NextPageToken != want || r.Start != reqs[0].Start || !slices.Equal(r.GroupBy, reqs[0].GroupBy) {
			t.Errorf("page %d: %+v", i, r)
		}
	}

	cfg := fakeAWS(f, "off")
	cfg.MaxRequests = 3
	s = newBills(t, cfg)
	_, err = s.Bill(context.Background(), last, last.AddDate(0, 0, 7), false)
	if !errors.Is(err, ErrRequestBudget) || !strings.Contains(err.Error(), "max_requests") {
		t.Errorf("over the budget: %v", err)
	}
	if n := len(f.CERequests()); n != 4+3 {
		t.Errorf("the endpoint saw %d requests for a budget of 3", n-4)
	}
}

// The cache: a second report of the same window sends nothing (from
// memory, and from disk in another process); estimated figures are asked
// again after cache_ttl, final ones never; --refresh asks; a cache file
// that does not parse is ignored.
func TestBillCache(t *testing.T) {
	f := startFake(t)
	twoBack, last, _ := months()
	f.SetCosts(cost(twoBack.AddDate(0, 0, 3), "nlp", "compute", "3.33"), cost(last.AddDate(0, 0, 3), "nlp", "compute", "4.44"))
	f.SetOpenFrom(last) // last month is not closed: estimated
	dir := t.TempDir()
	cfg := fakeAWS(f, dir)
	s := newBills(t, cfg)
	ctx := context.Background()
	get := func(s *BillSource, from, to time.Time, refresh bool) Bill {
		t.Helper()
		b, err := s.Bill(ctx, from, to, refresh)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	calls := func() int { return f.Calls("GetCostAndUsage") }

	final := get(s, twoBack, last, false)
	est := get(s, last, last.AddDate(0, 0, 5), false)
	if calls() != 2 || final.Estimated || !est.Estimated {
		t.Fatalf("calls %d, final estimated %v, last month estimated %v", calls(), final.Estimated, est.Estimated)
	}
	if b := get(s, last, last.AddDate(0, 0, 5), false); calls() != 2 || !b.Cached || b.Requests != 0 || b.Lines[0].Amount != est.Lines[0].Amount {
		t.Errorf("second report: calls %d, cached %v, requests %d", calls(), b.Cached, b.Requests)
	}
	// Another process (the next `frontdoor usage`), the same disk cache.
	s2 := newBills(t, cfg)
	if b := get(s2, twoBack, last, false); calls() != 2 || !b.Cached {
		t.Errorf("from disk: calls %d cached %v", calls(), b.Cached)
	}
	// A day later: the estimated answer has expired, the final one not.
	s2.now = func() time.Time { return time.Now().Add(cfg.CacheTTL + time.Minute) }
	get(s2, last, last.AddDate(0, 0, 5), false)
	get(s2, twoBack, last, false)
	if calls() != 3 {
		t.Errorf("after cache_ttl: %d calls, want 3 (the estimated window asked again)", calls())
	}
	get(s2, twoBack, last, true)
	if calls() != 4 {
		t.Errorf("--refresh: %d calls, want 4", calls())
	}
	// A tampered cache file is ignored and replaced.
	files, _ := filepath.Glob(filepath.Join(dir, "bill-*.json"))
	if len(files) != 2 {
		t.Fatalf("cache files %v", files)
	}
	for _, p := range files {
		data, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.ReplaceAll(string(data), `"amount":"`, `"amount":"1/3`)), 0o600)
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", p, st.Mode())
		}
	}
	s3 := newBills(t, cfg)
	if b := get(s3, twoBack, last, false); calls() != 5 || b.Cached {
		t.Errorf("tampered cache: calls %d cached %v", calls(), b.Cached)
	}
}

// Tags not activated as cost allocation tags are an error that says so
// (and how to fix it), found with one ListCostAllocationTags request;
// active tags on untagged resources are a note; missing permissions name
// the action and the policy.
func TestBillTagsAndPermissions(t *testing.T) {
	f := startFake(t)
	_, last, _ := months()
	f.SetCosts(cost(last.AddDate(0, 0, 1), "nlp", "compute", "5"))
	ctx := context.Background()
	from, to := last, last.AddDate(0, 0, 3)

	f.SetTagStatus(costtest.TagAccount, "Inactive")
	_, err := newBills(t, fakeAWS(f, "off")).Bill(ctx, from, to, false)
	if !errors.Is(err, ErrTagsInactive) || !strings.Contains(err.Error(), "frontdoor:account is Inactive") || !strings.Contains(err.Error(), "update-cost-allocation-tags-status") {
		t.Errorf("inactive account tag: %v", err)
	}
	f.SetTagStatus(costtest.TagAccount, "Active")
	f.SetTagStatus(costtest.TagCluster, "")
	_, err = newBills(t, fakeAWS(f, "off")).Bill(ctx, from, to, false)
	if !errors.Is(err, ErrTagsInactive) || !strings.Contains(err.Error(), "frontdoor:cluster is not a cost allocation tag yet") {
		t.Errorf("unknown cluster tag: %v", err)
	}
	if f.Calls("ListCostAllocationTags") != 2 {
		t.Errorf("ListCostAllocationTags calls %d, want 2", f.Calls("ListCostAllocationTags"))
	}
	f.SetTagStatus(costtest.TagCluster, "Active")
	f.SetCosts(cost(last.AddDate(0, 0, 1), "", "", "5"))
	b, err := newBills(t, fakeAWS(f, "off")).Bill(ctx, from, to, false)
	if err != nil || b.Requests != 2 || !strings.Contains(strings.Join(b.Notes, " "), "such cost is shared by usage") {
		t.Errorf("untagged resources: %v, %d requests, notes %v", err, b.Requests, b.Notes)
	}

	f.Deny("GetCostAndUsage", true)
	_, err = newBills(t, fakeAWS(f, "off")).Bill(ctx, from, to, false)
	if !errors.Is(err, ErrAccessDenied) || !strings.Contains(err.Error(), "ce:GetCostAndUsage") || !strings.Contains(err.Error(), "deploy/iam-cost-policy.json") {
		t.Errorf("denied: %v", err)
	}
}

// Amortized cost asks for AmortizedCost; the SDK's endpoint variable
// works without usage.aws.endpoint; another currency than usage.currency
// is refused.
func TestBillMetricEndpointCurrency(t *testing.T) {
	f := startFake(t)
	_, last, _ := months()
	f.SetCosts(costtest.Cost{Day: last, Cluster: "ml-cluster", Account: "nlp", Role: "compute", Unblended: "10", Amortized: "12.5"})
	cfg := fakeAWS(f, "off")
	cfg.Metric, cfg.Endpoint = MetricAmortized, ""
	t.Setenv("AWS_ENDPOINT_URL_COST_EXPLORER", f.URL)
	b, err := newBills(t, cfg).Bill(context.Background(), last, last.AddDate(0, 0, 1), false)
	if err != nil || b.Metric != "AmortizedCost" || len(b.Lines) != 1 || b.Lines[0].Amount != "12.5000000000" {
		t.Fatalf("amortized: %+v %v", b, err)
	}
	if r := f.CERequests(); r[0].Metrics[0] != "AmortizedCost" {
		t.Errorf("asked for %v", r[0].Metrics)
	}
	s, err := NewBillSource(context.Background(), cfg, "EUR")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Bill(context.Background(), last, last.AddDate(0, 0, 1), false); err == nil || !strings.Contains(err.Error(), "usage.currency is EUR") {
		t.Errorf("currency: %v", err)
	}
}

// The SDK's endpoint variables point both clients at an endpoint, as
// they do the AWS CLI: AWS_ENDPOINT_URL for every service, a service's
// own variable before it, and usage.aws's endpoints before both. Each
// step is checked on the endpoint that must not have been asked too.
func TestEndpointVariables(t *testing.T) {
	f := startFake(t)
	other := costtest.Start(t, "us-east-1")
	_, last, _ := months()
	f.SetCosts(cost(last, "nlp", "compute", "10"))
	cfg := fakeAWS(f, "off")
	cfg.Endpoint, cfg.BudgetsEndpoint = "", ""
	report := func(c AWSConfig) {
		t.Helper()
		s := newBills(t, c)
		if _, err := s.Bill(context.Background(), last, last.AddDate(0, 0, 1), false); err != nil {
			t.Fatalf("bill: %v", err)
		}
		api, tr, err := NewBudgetsClient(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.CloseIdleConnections()
		bc := testConfig()
		bc.AWS = &c
		if _, err := PlanBudgets(context.Background(), api, bc); err != nil {
			t.Fatalf("budgets plan: %v", err)
		}
	}
	asked := func(step string, want int) {
		t.Helper()
		if ce, b := f.Calls("GetCostAndUsage"), f.Calls("DescribeBudgets"); ce != want || b != want {
			t.Errorf("%s: the endpoint got %d Cost Explorer and %d Budgets requests, want %d each", step, ce, b, want)
		}
		if ce, b := other.Calls("GetCostAndUsage"), other.Calls("DescribeBudgets"); ce+b != 0 {
			t.Errorf("%s: the other endpoint got %d Cost Explorer and %d Budgets requests", step, ce, b)
		}
	}
	t.Setenv("AWS_ENDPOINT_URL", f.URL)
	report(cfg)
	asked("AWS_ENDPOINT_URL", 1)

	t.Setenv("AWS_ENDPOINT_URL", other.URL)
	t.Setenv("AWS_ENDPOINT_URL_COST_EXPLORER", f.URL)
	t.Setenv("AWS_ENDPOINT_URL_BUDGETS", f.URL)
	report(cfg)
	asked("the services' own variables", 2)

	t.Setenv("AWS_ENDPOINT_URL_COST_EXPLORER", other.URL)
	t.Setenv("AWS_ENDPOINT_URL_BUDGETS", other.URL)
	cfg.Endpoint, cfg.BudgetsEndpoint = f.URL, f.URL
	report(cfg)
	asked("usage.aws endpoints", 3)
}

// BillDays: whole UTC days, the end clipped to tomorrow.
func TestBillDays(t *testing.T) {
	now := time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ from, to, start, end time.Time }{
		{nov1, dec1, nov1, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)},
		{at(3, 6), at(5, 1), at(3, 0), at(6, 0)},
		{at(3, 0), at(5, 0), at(3, 0), at(5, 0)},
	} {
		s, e := BillDays(tc.from, tc.to, now)
		if !s.Equal(tc.start) || !e.Equal(tc.end) {
			t.Errorf("%s–%s: %s–%s, want %s–%s", tc.from, tc.to, s, e, tc.start, tc.end)
		}
	}
}

// FuzzBillCacheFile: a cache file is read from disk another process (or
// someone) wrote: whatever it holds, loading never panics, and a bill it
// accepts is for the query asked and sums exactly.
func FuzzBillCacheFile(f *testing.F) {
	f.Add([]byte(`{"key":"K","bill":{"metric":"UnblendedCost","currency":"USD","lines":[{"account":"a","role":"compute","amount":"1.5"}]}}`))
	f.Add([]byte(`{"key":"K","bill":{"metric":"UnblendedCost","currency":"USD","lines":[{"amount":"1/3"}]}}`))
	f.Add([]byte(`{"key":`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		s := &BillSource{cfg: DefaultAWSConfig(), currency: "USD", cacheDir: dir, now: time.Now}
		if err := os.WriteFile(filepath.Join(dir, "bill-K.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, ok := s.load("K")
		if !ok {
			return
		}
		if b.Metric != "UnblendedCost" || b.Currency != "USD" {
			t.Fatalf("accepted a bill of another query: %+v", b)
		}
		if _, err := b.Total(); err != nil {
			t.Fatalf("accepted a bill that does not sum: %v", err)
		}
	})
}

// FuzzTagValue: a group key from Cost Explorer is "KEY$VALUE"; anything
// else is refused, and an accepted value never holds a line break.
func FuzzTagValue(f *testing.F) {
	for _, s := range []string{"frontdoor:account$nlp", "frontdoor:account$", "frontdoor:role$compute", "other$x", "frontdoor:account$a\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		v, err := tagValue(key, "frontdoor:account")
		if err != nil {
			return
		}
		if key != "frontdoor:account$"+v || strings.ContainsAny(v, "\n\r\x00") || len(v) > 256 {
			t.Fatalf("%q accepted as %q", key, v)
		}
	})
}

// Package costtest is an in-process AWS endpoint for tests and the local
// stack that speaks the real Cost Explorer and AWS Budgets wire protocols
// (awsJson1.1: POST /, X-Amz-Target AWSInsightsIndexService.<Operation> or
// AWSBudgetServiceGateway.<Operation>, application/x-amz-json-1.1, errors
// as HTTP 400 with "__type"), checks every request's SigV4 signature (the
// service "ce" or "budgets", the region) and the request's shape against
// what the APIs accept, and records what it was asked: a test checks the
// filters, the grouping, the pages and the number of requests.
//
// Cost Explorer: a bill of daily costs by cluster, account and role tag
// values (SetCosts), summed per MONTHLY or DAILY period and tag pair like
// the real service, paginated (SetPageSize), with tags that may be
// inactive as cost allocation tags (SetTagStatus: an inactive cluster tag
// filters everything out, an inactive grouping tag groups everything as
// untagged). AWS Budgets: budgets, their notifications, subscribers and
// resource tags, kept in memory.
package costtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient/awsjsontest"
)

// Test credentials, the same as every AWS fake's (awsjsontest.Setenv
// puts them in the environment).
const (
	AccessKeyID     = awsjsontest.AccessKeyID
	SecretAccessKey = awsjsontest.SecretAccessKey
)

// AccountID is the fake's AWS account: budgets live in it.
const AccountID = "123456789012"

// Cost is one day's cost of one tag combination.
type Cost struct {
	Day                    time.Time
	Cluster, Account, Role string // tag values; "" = the resource lacks the tag
	Unblended              string // decimal
	// Amortized is the amortized cost; "" = the same as Unblended.
	Amortized string
}

// Tag keys the fake groups and filters by (deploy/tags.md).
const (
	TagCluster = "frontdoor:cluster"
	TagAccount = "frontdoor:account"
	TagRole    = "frontdoor:role"
)

// Server is the fake endpoint. Its methods are safe for concurrent use.
type Server struct {
	URL    string
	Region string

	// Record counts requests by operation (Calls) and keeps the protocol
	// problems seen (Problems).
	awsjsontest.Record

	srv *httptest.Server

	mu sync.Mutex // mu protects the following
	// Cost Explorer
	costs     []Cost
	pageSize  int
	tags      map[string]string // tag key → "Active" | "Inactive"; absent: never seen
	openFrom  time.Time         // periods from here on are Estimated
	ceCalls   []CERequest
	denied    map[string]bool // operation → AccessDeniedException
	budgets   map[string]*budget
	budgetsPg int
	writes    int // budget-changing requests answered
}

// CERequest is a GetCostAndUsage request as the fake decoded it.
type CERequest struct {
	Start, End, Granularity string
	Metrics                 []string
	FilterKey               string
	FilterValues            []string
	FilterMatch             []string
	GroupBy                 []string // "TAG:key"
	NextPageToken           string
}

type budget struct {
	raw    map[string]json.RawMessage // the Budget object as last sent
	name   string
	notifs []*notification
	tags   []Tag
}

type notification struct {
	n    Notification
	subs []Subscriber
}

// Notification is an AWS Budgets notification.
type Notification struct {
	NotificationType   string
	ComparisonOperator string
	Threshold          float64
	ThresholdType      string `json:",omitempty"`
	NotificationState  string `json:",omitempty"`
}

func (n Notification) same(o Notification) bool {
	tt := func(s string) string {
		if s == "" {
			return "PERCENTAGE"
		}
		return s
	}
	return n.NotificationType == o.NotificationType && n.ComparisonOperator == o.ComparisonOperator &&
		n.Threshold == o.Threshold && tt(n.ThresholdType) == tt(o.ThresholdType)
}

// Subscriber is an AWS Budgets subscriber.
type Subscriber struct {
	SubscriptionType string
	Address          string
}

// Tag is a resource tag.
type Tag struct{ Key, Value string }

// New serves a fake on 127.0.0.1 (the local stack; tests use Start).
// Close stops it.
func New(region string) *Server {
	s := &Server{Region: region, pageSize: 100, budgetsPg: 100,
		tags:   map[string]string{TagCluster: "Active", TagAccount: "Active", TagRole: "Active"},
		denied: map[string]bool{}, budgets: map[string]*budget{},
		openFrom: time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1-time.Now().UTC().Day())}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Start serves a fake that stops when the test ends, and fails the test
// if it saw a request the real service would refuse for its shape.
func Start(tb testing.TB, region string) *Server {
	s := New(region)
	tb.Cleanup(func() {
		s.Close()
		if p := s.Problems(); len(p) > 0 {
			tb.Errorf("fake Cost Explorer/Budgets saw protocol problems:\n%s", strings.Join(p, "\n"))
		}
	})
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetCosts replaces the bill.
func (s *Server) SetCosts(c ...Cost) { s.mu.Lock(); s.costs = slices.Clone(c); s.mu.Unlock() }

// AddCosts adds to the bill.
func (s *Server) AddCosts(c ...Cost) { s.mu.Lock(); s.costs = append(s.costs, c...); s.mu.Unlock() }

// SetPageSize sets how many groups one GetCostAndUsage page holds.
func (s *Server) SetPageSize(n int) { s.mu.Lock(); s.pageSize = n; s.mu.Unlock() }

// SetBudgetsPageSize sets how many budgets one DescribeBudgets page holds.
func (s *Server) SetBudgetsPageSize(n int) { s.mu.Lock(); s.budgetsPg = n; s.mu.Unlock() }

// SetTagStatus sets a tag key's cost allocation status ("Active",
// "Inactive", or "" for a key Cost Explorer never saw).
func (s *Server) SetTagStatus(key, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == "" {
		delete(s.tags, key)
		return
	}
	s.tags[key] = status
}

// SetOpenFrom marks periods starting at t or later Estimated (the month
// not closed); default: the current month.
func (s *Server) SetOpenFrom(t time.Time) { s.mu.Lock(); s.openFrom = t; s.mu.Unlock() }

// Deny makes op answer AccessDeniedException, as AWS does for a missing
// IAM permission.
func (s *Server) Deny(op string, on bool) { s.mu.Lock(); s.denied[op] = on; s.mu.Unlock() }

// CERequests returns the GetCostAndUsage requests received.
func (s *Server) CERequests() []CERequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ceCalls)
}

// Writes returns how many budget-changing requests succeeded.
func (s *Server) Writes() int { s.mu.Lock(); defer s.mu.Unlock(); return s.writes }

// The two services the fake speaks, by X-Amz-Target prefix.
const (
	targetCE      = "AWSInsightsIndexService"
	targetBudgets = "AWSBudgetServiceGateway"
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	svc := awsjsontest.Service{TargetPrefix: targetCE, SigningName: "ce", Region: s.Region}
	if strings.HasPrefix(r.Header.Get("X-Amz-Target"), targetBudgets+".") {
		svc = awsjsontest.Service{TargetPrefix: targetBudgets, SigningName: "budgets", Region: s.Region}
	}
	op, body, ok := svc.Read(w, r, &s.Record)
	if !ok {
		return
	}
	s.mu.Lock()
	denied := s.denied[op]
	s.mu.Unlock()
	if denied {
		awsjsontest.WriteError(w, 400, "AccessDeniedException", fmt.Sprintf("User: arn:aws:iam::%s:user/test is not authorized to perform: %s:%s", AccountID, svc.SigningName, op))
		return
	}
	if svc.SigningName == "ce" {
		s.serveCE(w, op, body)
		return
	}
	s.serveBudgets(w, op, body)
}

func (s *Server) serveCE(w http.ResponseWriter, op string, body []byte) {
	switch op {
	case "GetCostAndUsage":
		s.getCostAndUsage(w, body)
	case "ListCostAllocationTags":
		s.listCostAllocationTags(w, body)
	default:
		s.Problem("unexpected Cost Explorer operation %s", op)
		awsjsontest.WriteError(w, 400, "UnknownOperationException", op)
	}
}

type ceExpression struct {
	Tags *struct {
		Key          string
		Values       []string
		MatchOptions []string
	}
	And, Or    []json.RawMessage
	Not        json.RawMessage
	Dimensions json.RawMessage
}

func (s *Server) getCostAndUsage(w http.ResponseWriter, body []byte) {
	var in struct {
		TimePeriod    *struct{ Start, End string }
		Granularity   string
		Metrics       []string
		Filter        *ceExpression
		GroupBy       []struct{ Type, Key string }
		NextPageToken *string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.Problem("GetCostAndUsage body: %v", err)
		awsjsontest.WriteError(w, 400, "SerializationException", err.Error())
		return
	}
	req := CERequest{Granularity: in.Granularity, Metrics: in.Metrics}
	if in.NextPageToken != nil {
		req.NextPageToken = *in.NextPageToken
	}
	if in.TimePeriod == nil {
		s.Problem("GetCostAndUsage without TimePeriod")
		awsjsontest.WriteError(w, 400, "ValidationException", "TimePeriod is required")
		return
	}
	req.Start, req.End = in.TimePeriod.Start, in.TimePeriod.End
	if in.Filter != nil && in.Filter.Tags != nil {
		req.FilterKey, req.FilterValues, req.FilterMatch = in.Filter.Tags.Key, in.Filter.Tags.Values, in.Filter.Tags.MatchOptions
	}
	for _, g := range in.GroupBy {
		req.GroupBy = append(req.GroupBy, g.Type+":"+g.Key)
	}
	s.mu.Lock()
	s.ceCalls = append(s.ceCalls, req)
	s.mu.Unlock()

	start, err1 := time.Parse("2006-01-02", req.Start)
	end, err2 := time.Parse("2006-01-02", req.End)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	switch {
	case err1 != nil || err2 != nil || !start.Before(end):
		awsjsontest.WriteError(w, 400, "ValidationException", "Start and End must be dates, Start before End")
		return
	case start.After(today):
		awsjsontest.WriteError(w, 400, "ValidationException", "Start date must be equal to or no later than the current date")
		return
	case in.Granularity != "MONTHLY" && in.Granularity != "DAILY":
		s.Problem("GetCostAndUsage Granularity %q", in.Granularity)
		awsjsontest.WriteError(w, 400, "ValidationException", "Granularity")
		return
	case len(in.Metrics) != 1 || (in.Metrics[0] != "UnblendedCost" && in.Metrics[0] != "AmortizedCost"):
		s.Problem("GetCostAndUsage Metrics %v: the fake knows one of UnblendedCost, AmortizedCost", in.Metrics)
		awsjsontest.WriteError(w, 400, "ValidationException", "Metrics")
		return
	case len(in.GroupBy) > 2:
		awsjsontest.WriteError(w, 400, "ValidationException", "at most two GroupBy")
		return
	}
	for _, g := range in.GroupBy {
		if g.Type != "TAG" || g.Key == "" {
			s.Problem("GetCostAndUsage GroupBy %+v: the fake groups by TAG only", g)
			awsjsontest.WriteError(w, 400, "ValidationException", "GroupBy")
			return
		}
	}
	if in.Filter != nil && (in.Filter.Tags == nil || len(in.Filter.Tags.Values) == 0) {
		s.Problem("GetCostAndUsage Filter: the fake filters by one Tags expression")
		awsjsontest.WriteError(w, 400, "ValidationException", "Filter")
		return
	}
	metric := in.Metrics[0]

	s.mu.Lock()
	defer s.mu.Unlock()
	active := func(k string) bool { return s.tags[k] == "Active" }
	value := func(c Cost, key string) string {
		if !active(key) {
			return ""
		}
		switch key {
		case TagCluster:
			return c.Cluster
		case TagAccount:
			return c.Account
		case TagRole:
			return c.Role
		}
		return ""
	}
	type cell struct {
		period time.Time
		keys   string // "\x00"-joined group keys
	}
	sums := map[cell]*big.Rat{}
	periodOf := func(d time.Time) time.Time {
		if in.Granularity == "DAILY" {
			return d
		}
		return time.Date(d.Year(), d.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	for _, c := range s.costs {
		d := c.Day.UTC().Truncate(24 * time.Hour)
		if d.Before(start) || !d.Before(end) {
			continue
		}
		if f := in.Filter; f != nil && !slices.Contains(f.Tags.Values, value(c, f.Tags.Key)) {
			continue
		}
		var keys []string
		for _, g := range in.GroupBy {
			keys = append(keys, g.Key+"$"+value(c, g.Key))
		}
		amt := c.Unblended
		if metric == "AmortizedCost" && c.Amortized != "" {
			amt = c.Amortized
		}
		x, ok := new(big.Rat).SetString(amt)
		if !ok {
			s.Problem("test cost %q is not a number", amt)
			continue
		}
		k := cell{periodOf(d), strings.Join(keys, "\x00")}
		if sums[k] == nil {
			sums[k] = new(big.Rat)
		}
		sums[k].Add(sums[k], x)
	}
	cells := make([]cell, 0, len(sums))
	for k := range sums {
		cells = append(cells, k)
	}
	sort.Slice(cells, func(i, j int) bool {
		if !cells[i].period.Equal(cells[j].period) {
			return cells[i].period.Before(cells[j].period)
		}
		return cells[i].keys < cells[j].keys
	})
	from := 0
	if in.NextPageToken != nil {
		v, err := strconv.Atoi(strings.TrimPrefix(*in.NextPageToken, "page-"))
		if err != nil || v < 0 || v > len(cells) {
			awsjsontest.WriteError(w, 400, "InvalidNextTokenException", "invalid NextPageToken")
			return
		}
		from = v
	}
	to := min(from+s.pageSize, len(cells))
	// Every period of the request appears on the first page, with or
	// without groups, as Cost Explorer does; later pages carry the
	// periods of their groups.
	type result struct {
		TimePeriod map[string]string `json:"TimePeriod"`
		Total      map[string]any    `json:"Total"`
		Groups     []map[string]any  `json:"Groups"`
		Estimated  bool              `json:"Estimated"`
	}
	var results []*result
	byPeriod := map[time.Time]*result{}
	addPeriod := func(p time.Time) *result {
		if r := byPeriod[p]; r != nil {
			return r
		}
		pEnd := p.AddDate(0, 1, 0)
		if in.Granularity == "DAILY" {
			pEnd = p.AddDate(0, 0, 1)
		}
		ps, pe := p, pEnd
		if ps.Before(start) {
			ps = start
		}
		if pe.After(end) {
			pe = end
		}
		r := &result{TimePeriod: map[string]string{"Start": ps.Format("2006-01-02"), "End": pe.Format("2006-01-02")},
			Total: map[string]any{}, Groups: []map[string]any{}, Estimated: pEnd.After(s.openFrom)}
		byPeriod[p] = r
		results = append(results, r)
		return r
	}
	if from == 0 {
		for p := periodOf(start); p.Before(end); {
			addPeriod(p)
			if in.Granularity == "DAILY" {
				p = p.AddDate(0, 0, 1)
			} else {
				p = p.AddDate(0, 1, 0)
			}
		}
	}
	for _, c := range cells[from:to] {
		r := addPeriod(c.period)
		r.Groups = append(r.Groups, map[string]any{
			"Keys":    strings.Split(c.keys, "\x00"),
			"Metrics": map[string]any{metric: map[string]string{"Amount": sums[c].FloatString(10), "Unit": "USD"}},
		})
	}
	var defs []map[string]string
	for _, g := range in.GroupBy {
		defs = append(defs, map[string]string{"Type": g.Type, "Key": g.Key})
	}
	out := map[string]any{"GroupDefinitions": defs, "ResultsByTime": results, "DimensionValueAttributes": []any{}}
	if to < len(cells) {
		out["NextPageToken"] = "page-" + strconv.Itoa(to)
	}
	awsjsontest.WriteJSON(w, out)
}

func (s *Server) listCostAllocationTags(w http.ResponseWriter, body []byte) {
	var in struct {
		TagKeys    []string
		Status     string
		Type       string
		MaxResults *int
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.Problem("ListCostAllocationTags body: %v", err)
		awsjsontest.WriteError(w, 400, "SerializationException", err.Error())
		return
	}
	if in.MaxResults != nil && (*in.MaxResults < 1 || *in.MaxResults > 1000) {
		s.Problem("ListCostAllocationTags MaxResults %d out of 1..1000", *in.MaxResults)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var tags []map[string]string
	for _, k := range slices.Sorted(maps.Keys(s.tags)) {
		if len(in.TagKeys) > 0 && !slices.Contains(in.TagKeys, k) {
			continue
		}
		if in.Status != "" && in.Status != s.tags[k] {
			continue
		}
		tags = append(tags, map[string]string{"TagKey": k, "Type": "UserDefined", "Status": s.tags[k]})
	}
	awsjsontest.WriteJSON(w, map[string]any{"CostAllocationTags": tags})
}

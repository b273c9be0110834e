package usage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/costexplorer"
	cetypes "github.com/aws/aws-sdk-go-v2/service/costexplorer/types"
	"github.com/aws/smithy-go"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient"
)

// What one report asks Cost Explorer, and what it costs:
//
//  1. GetCostAndUsage over the window's whole UTC days (the end clipped
//     to tomorrow: Cost Explorer has nothing later), MONTHLY granularity
//     (the fewest results: one per month and tag pair), filtered on the
//     cluster tag, grouped by the account and role tags, with the
//     configured metric. Every page is one request; a cluster with fewer
//     than a few hundred account × role pairs fits in one.
//  2. Only when no line of the answer carries an account tag value, or
//     none a role tag value:
//     one ListCostAllocationTags request, to tell "not activated as cost
//     allocation tags" (an error, saying how to activate them) from "the
//     resources are not tagged" (a note).
//
// Every HTTP request, retries included, counts against max_requests
// (each one is charged): a report never sends more, and says how many it
// sent. An answer is cached on disk and in memory under the query (the
// days, the metric, the tags, the endpoint): a second report of the same
// window sends nothing, for cache_ttl while Cost Explorer marks the
// figures estimated, for good once they are final.

// CostExplorerAPI is the part of the Cost Explorer client the bill uses;
// *costexplorer.Client satisfies it.
type CostExplorerAPI interface {
	GetCostAndUsage(ctx context.Context, in *costexplorer.GetCostAndUsageInput, optFns ...func(*costexplorer.Options)) (*costexplorer.GetCostAndUsageOutput, error)
	ListCostAllocationTags(ctx context.Context, in *costexplorer.ListCostAllocationTagsInput, optFns ...func(*costexplorer.Options)) (*costexplorer.ListCostAllocationTagsOutput, error)
}

// Errors a caller may branch on.
var (
	// ErrAccessDenied: the credentials may not make the call (the IAM
	// policies deploy/iam-cost-policy.json and deploy/iam-budgets-policy.json
	// grant what frontdoor needs).
	ErrAccessDenied = errors.New("access denied")
	// ErrTagsInactive: a tag is not activated as a cost allocation tag,
	// so Cost Explorer cannot filter or group by it.
	ErrTagsInactive = errors.New("cost allocation tag not active")
	// ErrRequestBudget: the report would need more requests than
	// usage.aws.max_requests allows.
	ErrRequestBudget = errors.New("cost explorer request budget spent")
)

// maxBillLines bounds an answer (a hostile or broken endpoint).
const maxBillLines = 100_000

// BillSource reads the cluster's bill from Cost Explorer. It is safe for
// concurrent use; one fetch runs at a time.
type BillSource struct {
	cfg      AWSConfig
	currency string
	api      CostExplorerAPI
	counter  *requestCounter
	tr       *http.Transport
	cacheDir string // "" = no disk cache
	now      func() time.Time

	fetchMu sync.Mutex // one fetch at a time (the counter is per fetch)

	mu   sync.Mutex // mu protects memo
	memo map[string]Bill
}

// NewBillSource builds the Cost Explorer client for cfg (internal/awsclient:
// the default credential chain, cfg.Region, the SDK's retryer with
// cfg.MaxAttempts; cfg.Endpoint or the SDK's endpoint variables). It makes
// no request.
func NewBillSource(ctx context.Context, cfg AWSConfig, currency string) (*BillSource, error) {
	ac, tr, err := awsclient.Load(ctx, cfg.Region, cfg.MaxAttempts)
	if err != nil {
		return nil, fmt.Errorf("cost explorer: %w", err)
	}
	counter := &requestCounter{next: ac.HTTPClient, max: cfg.MaxRequests}
	ac.HTTPClient = counter
	api := costexplorer.NewFromConfig(ac, func(o *costexplorer.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	s := &BillSource{cfg: cfg, currency: currency, api: api, counter: counter, tr: tr, now: time.Now, memo: map[string]Bill{}}
	s.cacheDir, _ = cacheDir(cfg.CacheDir)
	return s, nil
}

// Close releases the client's idle connections.
func (s *BillSource) Close() { s.tr.CloseIdleConnections() }

// cacheDir resolves usage.aws.cache_dir ("" = none).
func cacheDir(conf string) (string, error) {
	switch {
	case conf == "off":
		return "", nil
	case conf != "":
		return conf, nil
	}
	if d, _, _ := strings.Cut(os.Getenv("CACHE_DIRECTORY"), ":"); d != "" {
		return filepath.Join(d, "cost"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "frontdoor", "cost"), nil
}

// BillDays are the UTC days Cost Explorer is asked for a window: from's
// day to the day after to's last instant, clipped to tomorrow.
func BillDays(from, to, now time.Time) (start, end time.Time) {
	day := 24 * time.Hour
	start = from.UTC().Truncate(day)
	end = to.UTC().Truncate(day)
	if end.Before(to.UTC()) {
		end = end.Add(day)
	}
	if tomorrow := now.UTC().Truncate(day).Add(day); end.After(tomorrow) {
		end = tomorrow
	}
	return start, end
}

// Bill returns the cluster's cost for the window [from, to) (in whole
// UTC days, see BillDays), from the cache when it holds a valid answer
// and refresh is false.
func (s *BillSource) Bill(ctx context.Context, from, to time.Time, refresh bool) (Bill, error) {
	start, end := BillDays(from, to, s.now())
	if !start.Before(end) {
		return Bill{}, fmt.Errorf("cost explorer: the window starts after today (%s)", start.Format("2006-01-02"))
	}
	key := s.cacheKey(start, end)
	if !refresh {
		if b, ok := s.cached(key); ok {
			return b, nil
		}
	}
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	if !refresh { // a concurrent fetch may have filled it
		if b, ok := s.cached(key); ok {
			return b, nil
		}
	}
	s.counter.reset()
	b, err := s.fetch(ctx, start, end)
	b.Requests = s.counter.sent()
	if err != nil {
		return Bill{}, fmt.Errorf("%w (%d Cost Explorer request(s) sent)", err, b.Requests)
	}
	s.mu.Lock()
	s.memo = map[string]Bill{key: b} // the latest query only: bounded
	s.mu.Unlock()
	if err := s.save(key, b); err != nil {
		b.Notes = append(slices.Clone(b.Notes), fmt.Sprintf("actual: not cached on disk (%v): the next report asks Cost Explorer again", err))
	}
	return b, nil
}

func (s *BillSource) cacheKey(start, end time.Time) string {
	t := s.cfg.Tags
	h := sha256.Sum256(fmt.Appendf(nil, "bill/v1\x00%s\x00%s\x00%s\x00%s=%s\x00%s\x00%s\x00%s\x00%s\x00%s",
		s.cfg.Endpoint, s.cfg.Region, s.cfg.CEMetric(), t.Cluster, s.cfg.Cluster, t.Account, t.Role,
		start.Format("2006-01-02"), end.Format("2006-01-02"), s.currency))
	return hex.EncodeToString(h[:16])
}

// valid: final figures stay; estimated ones for cache_ttl.
func (s *BillSource) valid(b Bill) bool {
	age := s.now().Sub(b.FetchedAt)
	return age >= -time.Hour && (!b.Estimated || age < s.cfg.CacheTTL)
}

func (s *BillSource) cached(key string) (Bill, bool) {
	s.mu.Lock()
	b, ok := s.memo[key]
	s.mu.Unlock()
	if !ok {
		b, ok = s.load(key)
		if ok {
			s.mu.Lock()
			s.memo = map[string]Bill{key: b}
			s.mu.Unlock()
		}
	}
	if !ok || !s.valid(b) {
		return Bill{}, false
	}
	b.Cached, b.Requests = true, 0
	return b, true
}

// cacheFile is a cached answer on disk.
type cacheFile struct {
	Key  string `json:"key"`
	Bill Bill   `json:"bill"`
}

// maxCacheFile bounds a cache file read.
const maxCacheFile = 16 << 20

// load reads a cached answer; anything unreadable or not for this query
// (a tampered or foreign file) is ignored, and a fresh answer replaces it.
func (s *BillSource) load(key string) (Bill, bool) {
	if s.cacheDir == "" {
		return Bill{}, false
	}
	f, err := os.Open(filepath.Join(s.cacheDir, "bill-"+key+".json"))
	if err != nil {
		return Bill{}, false
	}
	defer f.Close()
	var c cacheFile
	if err := json.NewDecoder(io.LimitReader(f, maxCacheFile)).Decode(&c); err != nil || c.Key != key ||
		c.Bill.Metric != s.cfg.CEMetric() || c.Bill.Currency != s.currency || len(c.Bill.Lines) > maxBillLines {
		return Bill{}, false
	}
	if _, err := c.Bill.Total(); err != nil {
		return Bill{}, false
	}
	return c.Bill, true
}

// save writes an answer atomically (private to its user).
func (s *BillSource) save(key string, b Bill) error {
	if s.cacheDir == "" {
		return nil
	}
	if err := os.MkdirAll(s.cacheDir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(cacheFile{Key: key, Bill: b})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.cacheDir, ".bill-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(s.cacheDir, "bill-"+key+".json"))
}

// fetch asks Cost Explorer (steps 1 and 2 of the comment at the top).
func (s *BillSource) fetch(ctx context.Context, start, end time.Time) (Bill, error) {
	b := Bill{From: start, To: end, Metric: s.cfg.CEMetric(), Currency: s.currency, Lines: []BillLine{}}
	t := s.cfg.Tags
	in := &costexplorer.GetCostAndUsageInput{
		TimePeriod:  &cetypes.DateInterval{Start: aws.String(start.Format("2006-01-02")), End: aws.String(end.Format("2006-01-02"))},
		Granularity: cetypes.GranularityMonthly,
		Metrics:     []string{b.Metric},
		Filter: &cetypes.Expression{Tags: &cetypes.TagValues{Key: aws.String(t.Cluster), Values: []string{s.cfg.Cluster},
			MatchOptions: []cetypes.MatchOption{cetypes.MatchOptionEquals}}},
		GroupBy: []cetypes.GroupDefinition{
			{Type: cetypes.GroupDefinitionTypeTag, Key: aws.String(t.Account)},
			{Type: cetypes.GroupDefinitionTypeTag, Key: aws.String(t.Role)},
		},
	}
	seen := map[string]bool{}
	for {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		out, err := s.api.GetCostAndUsage(cctx, in)
		cancel()
		if err != nil {
			return b, ceError("GetCostAndUsage", err)
		}
		if err := s.addPage(&b, out, start, end); err != nil {
			return b, fmt.Errorf("cost explorer: GetCostAndUsage answer: %w", err)
		}
		if out.NextPageToken == nil || *out.NextPageToken == "" {
			break
		}
		if seen[*out.NextPageToken] {
			return b, errors.New("cost explorer: GetCostAndUsage repeats a page token")
		}
		seen[*out.NextPageToken] = true
		in.NextPageToken = out.NextPageToken
	}
	b.FetchedAt = s.now().UTC()
	var anyAccount, anyRole bool
	for _, l := range b.Lines {
		anyAccount, anyRole = anyAccount || l.Account != "", anyRole || l.Role != ""
	}
	if !anyAccount || !anyRole {
		if err := s.checkTags(ctx, &b); err != nil {
			return b, err
		}
	}
	return b, nil
}

// addPage adds one GetCostAndUsage page's groups to b, checking what it
// says against what was asked.
func (s *BillSource) addPage(b *Bill, out *costexplorer.GetCostAndUsageOutput, start, end time.Time) error {
	for _, p := range out.ResultsByTime {
		if p.TimePeriod == nil || p.TimePeriod.Start == nil {
			return errors.New("a result without its period")
		}
		ps, err := time.Parse("2006-01-02", *p.TimePeriod.Start)
		if err != nil || ps.Before(start) || !ps.Before(end) {
			return fmt.Errorf("a period starting %q outside %s – %s", *p.TimePeriod.Start, start.Format("2006-01-02"), end.Format("2006-01-02"))
		}
		b.Estimated = b.Estimated || p.Estimated
		for _, g := range p.Groups {
			if len(g.Keys) != 2 {
				return fmt.Errorf("a group with %d keys, want 2 (account, role)", len(g.Keys))
			}
			account, err := tagValue(g.Keys[0], s.cfg.Tags.Account)
			if err != nil {
				return err
			}
			role, err := tagValue(g.Keys[1], s.cfg.Tags.Role)
			if err != nil {
				return err
			}
			m, ok := g.Metrics[b.Metric]
			if !ok || m.Amount == nil {
				return fmt.Errorf("group %v without %s", g.Keys, b.Metric)
			}
			if _, err := ParseAmount(*m.Amount); err != nil {
				return fmt.Errorf("group %v: %w", g.Keys, err)
			}
			if unit := aws.ToString(m.Unit); unit != s.currency {
				return fmt.Errorf("amounts in %q, but usage.currency is %s (the rates and budgets must be in the bill's currency)", unit, s.currency)
			}
			if len(b.Lines) >= maxBillLines {
				return fmt.Errorf("more than %d groups", maxBillLines)
			}
			b.Lines = append(b.Lines, BillLine{Start: ps, Account: account, Role: role, Amount: *m.Amount})
		}
	}
	return nil
}

// tagValue reads a group key: "KEY$VALUE", "KEY$" when untagged.
func tagValue(groupKey, tag string) (string, error) {
	v, ok := strings.CutPrefix(groupKey, tag+"$")
	if !ok {
		return "", fmt.Errorf("group key %q is not of tag %s", groupKey, tag)
	}
	if len(v) > 256 || strings.ContainsAny(v, "\x00\n\r") {
		return "", fmt.Errorf("group key %q: not a tag value", groupKey)
	}
	return v, nil
}

// checkTags tells why an answer carries no tag value: tags not active as
// cost allocation tags (an error), or resources without them (a note).
func (s *BillSource) checkTags(ctx context.Context, b *Bill) error {
	t := s.cfg.Tags
	keys := []string{t.Cluster, t.Account, t.Role}
	if s.counter.sent() >= s.cfg.MaxRequests {
		b.Notes = append(b.Notes, "actual: no cost carries the account or the role tag; not checked whether they are active cost allocation tags (usage.aws.max_requests spent)")
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	out, err := s.api.ListCostAllocationTags(cctx, &costexplorer.ListCostAllocationTagsInput{TagKeys: keys,
		Type: cetypes.CostAllocationTagTypeUserDefined, MaxResults: aws.Int32(100)})
	cancel()
	if err != nil {
		b.Notes = append(b.Notes, fmt.Sprintf("actual: no cost carries the account or the role tag, and whether they are active cost allocation tags could not be checked: %v", ceError("ListCostAllocationTags", err)))
		return nil
	}
	status := map[string]cetypes.CostAllocationTagStatus{}
	for _, c := range out.CostAllocationTags {
		status[aws.ToString(c.TagKey)] = c.Status
	}
	var bad []string
	for _, k := range keys {
		switch st := status[k]; st {
		case cetypes.CostAllocationTagStatusActive:
		case "":
			bad = append(bad, fmt.Sprintf("%s is not a cost allocation tag yet (it appears there about a day after a resource first carries it)", k))
		default:
			bad = append(bad, fmt.Sprintf("%s is %s", k, st))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("cost explorer: %w: %s; activate them in the Billing console (Cost allocation tags) or with `aws ce update-cost-allocation-tags-status`: they count from activation on, about a day later",
			ErrTagsInactive, strings.Join(bad, "; "))
	}
	if len(b.Lines) == 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("actual: Cost Explorer has no cost tagged %s=%s in these days; the tags are active: are the cluster's resources tagged (deploy/tags.md)?", t.Cluster, s.cfg.Cluster))
	} else {
		b.Notes = append(b.Notes, fmt.Sprintf("actual: none of the cluster's cost carries the %s tag, or none the %s tag (they are active): such cost is shared by usage", t.Account, t.Role))
	}
	return nil
}

// ceError says what a failed call means: missing permissions name the
// IAM action and the policy to attach.
func ceError(op string, err error) error {
	switch {
	case errors.Is(err, ErrRequestBudget):
		return fmt.Errorf("cost explorer: %w: the report needs more than usage.aws.max_requests requests (each is charged)", ErrRequestBudget)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AccessDeniedException", "AccessDenied", "UnauthorizedException":
			return fmt.Errorf("cost explorer: %w: ce:%s is not allowed for these credentials (attach deploy/iam-cost-policy.json): %s", ErrAccessDenied, op, ae.ErrorMessage())
		case "DataUnavailableException":
			return fmt.Errorf("cost explorer: no data for these days (Cost Explorer must be enabled for the account; it takes about a day): %w", err)
		case "LimitExceededException":
			return fmt.Errorf("cost explorer: rate limited; try again in a minute: %w", err)
		}
	}
	return fmt.Errorf("cost explorer %s: %w", op, err)
}

// requestCounter counts the HTTP requests sent (retries too) and refuses
// those past the budget, so that a report never costs more than it says.
type requestCounter struct {
	next aws.HTTPClient

	mu  sync.Mutex // mu protects n
	n   int
	max int
}

func (c *requestCounter) Do(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.n >= c.max {
		c.mu.Unlock()
		return nil, budgetError{}
	}
	c.n++
	c.mu.Unlock()
	return c.next.Do(r)
}

func (c *requestCounter) reset()    { c.mu.Lock(); c.n = 0; c.mu.Unlock() }
func (c *requestCounter) sent() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// budgetError is ErrRequestBudget, never retried by the SDK.
type budgetError struct{}

func (budgetError) Error() string        { return ErrRequestBudget.Error() }
func (budgetError) Unwrap() error        { return ErrRequestBudget }
func (budgetError) RetryableError() bool { return false }

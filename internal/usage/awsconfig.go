package usage

import (
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// AWSConfig is the `usage.aws` section: where the real bill comes from
// (Cost Explorer) and where the accounts' budgets are kept (AWS Budgets).
// Credentials come from the SDK's default chain, as for discovery.
type AWSConfig struct {
	// Cluster is the value of the cluster tag on the cluster's resources
	// (deploy/tags.md): every Cost Explorer query is filtered on it and
	// every AWS budget too; required.
	Cluster string `yaml:"cluster"`
	// Tags are the cost allocation tag keys, as in deploy/tags.md. Each
	// must be activated as a cost allocation tag in the Billing console.
	Tags CostTags `yaml:"tags"`
	// Metric is the cost Cost Explorer and the budgets count: "unblended"
	// (each hour as billed, upfront fees on the day they are paid) or
	// "amortized" (reservation and Savings Plans fees spread over their
	// term).
	Metric string `yaml:"metric"`
	// Region signs the requests. Cost Explorer and AWS Budgets answer in
	// us-east-1 for the commercial partition (cn-northwest-1 for China).
	Region string `yaml:"region"`
	// Endpoint overrides the Cost Explorer endpoint, like the AWS CLI's
	// --endpoint-url (a VPC interface endpoint; tests). Empty: the SDK's
	// (AWS_ENDPOINT_URL_COST_EXPLORER or AWS_ENDPOINT_URL when set).
	Endpoint string `yaml:"endpoint"`
	// BudgetsEndpoint overrides the AWS Budgets endpoint. Empty: the SDK's
	// (AWS_ENDPOINT_URL_BUDGETS or AWS_ENDPOINT_URL when set).
	BudgetsEndpoint string `yaml:"budgets_endpoint"`
	// AccountID is the 12-digit AWS account that holds the budgets (the
	// one the credentials are of); required by `frontdoor budgets`.
	AccountID string `yaml:"account_id"`
	// BudgetPrefix starts the name of every AWS budget frontdoor keeps
	// (PREFIX + Slurm account). Empty: "frontdoor-" + cluster + "-".
	BudgetPrefix string `yaml:"budget_prefix"`
	// MaxRequests bounds the Cost Explorer requests of one report, pages
	// and retries included (each request is charged, 0.01 USD at the time
	// of writing); 1 to 100.
	MaxRequests int `yaml:"max_requests"`
	// MaxAttempts is the SDK retryer's attempts per call, 1 to 10.
	MaxAttempts int `yaml:"max_attempts"`
	// Timeout bounds one API call, retries included.
	Timeout time.Duration `yaml:"timeout"`
	// CacheDir keeps Cost Explorer answers on disk, so a report of the
	// same window costs no request. Empty: cost/ in $CACHE_DIRECTORY
	// (systemd's CacheDirectory=), else frontdoor/cost/ in the user's
	// cache directory. "off": no disk cache.
	CacheDir string `yaml:"cache_dir"`
	// CacheTTL is how long an answer that Cost Explorer marks estimated
	// (the month is not closed) is reused; a final answer is reused for
	// good. Cost Explorer refreshes its figures a few times a day.
	CacheTTL time.Duration `yaml:"cache_ttl"`
}

// CostTags are the tag keys of deploy/tags.md.
type CostTags struct {
	// Cluster marks every resource of the cluster.
	Cluster string `yaml:"cluster"`
	// Account names the Slurm account a resource belongs to, or "shared".
	Account string `yaml:"account"`
	// Role says what a resource is: compute, login, gateway, audit,
	// storage.
	Role string `yaml:"role"`
}

// Metric names in the section and as Cost Explorer and AWS Budgets spell them.
const (
	MetricUnblended = "unblended"
	MetricAmortized = "amortized"
)

// DefaultAWSConfig returns the section's defaults: deploy/tags.md's tag
// keys, unblended cost, us-east-1, at most 5 Cost Explorer requests per
// report, 3 attempts and 30 s per call, estimated answers reused for 12 h.
func DefaultAWSConfig() AWSConfig {
	return AWSConfig{
		Tags:        CostTags{Cluster: "frontdoor:cluster", Account: "frontdoor:account", Role: "frontdoor:role"},
		Metric:      MetricUnblended,
		Region:      "us-east-1",
		MaxRequests: 5,
		MaxAttempts: 3,
		Timeout:     30 * time.Second,
		CacheTTL:    12 * time.Hour,
	}
}

// SetDefaults sets c to DefaultAWSConfig (yamlconf.Defaulter: an aws
// section the file has starts from it).
func (c *AWSConfig) SetDefaults() { *c = DefaultAWSConfig() }

// Derive fills BudgetPrefix from Cluster when the file leaves it empty
// (yamlconf.Deriver).
func (c *AWSConfig) Derive() {
	if c.BudgetPrefix == "" && c.Cluster != "" {
		c.BudgetPrefix = "frontdoor-" + c.Cluster + "-"
	}
}

// CEMetric is the metric as Cost Explorer and AWS Budgets name it.
func (c AWSConfig) CEMetric() string {
	if c.Metric == MetricAmortized {
		return "AmortizedCost"
	}
	return "UnblendedCost"
}

// maxSubscribers is AWS Budgets' limit of e-mail subscribers per
// notification.
const maxSubscribers = 10

var (
	// tagKeyRE: AWS tag keys (letters, digits, spaces, _ . : / = + - @),
	// at most 128; "aws:" is reserved.
	tagKeyRE = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]{1,128}$`)
	// tagValueRE: the same alphabet, at most 256 (never empty here).
	tagValueRE   = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]{1,256}$`)
	accountIDRE  = regexp.MustCompile(`^[0-9]{12}$`)
	budgetNameRE = regexp.MustCompile(`^[A-Za-z0-9_.+=@ -]{1,60}$`)
)

func validEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == "" && len(s) <= 254
}

func (c AWSConfig) validate(add func(key, format string, args ...any)) {
	if c.Cluster == "" {
		add("aws.cluster", "required: the value of the %s tag on the cluster's resources", c.Tags.Cluster)
	} else if !tagValueRE.MatchString(c.Cluster) {
		add("aws.cluster", "%q is not a tag value (letters, digits, spaces and _ . : / = + - @, at most 256)", c.Cluster)
	}
	seen := map[string]string{}
	for _, t := range []struct{ key, v string }{{"cluster", c.Tags.Cluster}, {"account", c.Tags.Account}, {"role", c.Tags.Role}} {
		switch {
		case !tagKeyRE.MatchString(t.v) || strings.HasPrefix(t.v, "aws:"):
			add("aws.tags."+t.key, "%q is not a user tag key (letters, digits, spaces and _ . : / = + - @, at most 128, not aws:)", t.v)
		case seen[t.v] != "":
			add("aws.tags."+t.key, "%q is also tags.%s", t.v, seen[t.v])
		}
		seen[t.v] = t.key
	}
	if c.Metric != MetricUnblended && c.Metric != MetricAmortized {
		add("aws.metric", "%q: want unblended or amortized", c.Metric)
	}
	if !names.AWSRegion.Valid(c.Region) {
		add("aws.region", "%q is not an AWS region name (like us-east-1)", c.Region)
	}
	for _, e := range []struct{ key, v string }{{"endpoint", c.Endpoint}, {"budgets_endpoint", c.BudgetsEndpoint}} {
		if e.v == "" {
			continue
		}
		scheme, rest, ok := strings.Cut(e.v, "://")
		if !ok || (scheme != "https" && scheme != "http") || rest == "" || strings.ContainsAny(rest, " \t\n") {
			add("aws."+e.key, "%q is not an http(s) URL", e.v)
		}
	}
	if c.AccountID != "" && !accountIDRE.MatchString(c.AccountID) {
		add("aws.account_id", "%q is not a 12-digit AWS account ID", c.AccountID)
	}
	// A budget name is PREFIX + account: AWS allows at most 100
	// characters, no ':' or '\'; Slurm accounts fit in 40.
	if c.BudgetPrefix != "" && !budgetNameRE.MatchString(c.BudgetPrefix) {
		add("aws.budget_prefix", "%q: letters, digits, spaces and _ . + = @ -, at most 60", c.BudgetPrefix)
	}
	if c.MaxRequests < 1 || c.MaxRequests > 100 {
		add("aws.max_requests", "must be between 1 and 100")
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 10 {
		add("aws.max_attempts", "must be between 1 and 10")
	}
	if c.Timeout < time.Second || c.Timeout > 10*time.Minute {
		add("aws.timeout", "must be between 1s and 10m")
	}
	if c.CacheTTL < time.Minute || c.CacheTTL > 31*24*time.Hour {
		add("aws.cache_ttl", "must be between 1m and 744h")
	}
}

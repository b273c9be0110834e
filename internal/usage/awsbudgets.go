package usage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/budgets"
	bt "github.com/aws/aws-sdk-go-v2/service/budgets/types"
	"github.com/aws/smithy-go"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/awsclient"
)

// How `frontdoor budgets` keeps AWS Budgets in step with usage.budgets,
// once, here:
//
//   - Desired: one COST budget per account in usage.budgets, named
//     usage.aws.budget_prefix + account, MONTHLY, limited to the account's
//     monthly amount in usage.currency, counting the configured metric of
//     the cost that carries both the cluster tag and the account's tag (a
//     FilterExpression: And of two Tags). Its notifications: ACTUAL and
//     FORECASTED, GREATER_THAN warn_at × 100 % and 100 %, each to the
//     account's notify addresses by e-mail; none when it names none.
//   - Ownership: a budget frontdoor creates carries the resource tags
//     frontdoor:managed-by=frontdoor and cluster tag=cluster, set in the
//     CreateBudget call itself. Only a budget with the prefix and both
//     tags is frontdoor's: it is compared, updated, and deleted once its
//     account leaves usage.budgets. A budget with a wanted name but not
//     the tags is someone else's: it is never changed, only reported.
//   - Plan reads (DescribeBudgets with ShowFilterExpression, every page;
//     ListTagsForResource for each budget with the prefix; the
//     notifications and subscribers of each of frontdoor's) and diffs.
//     It writes nothing. Apply makes the changes in order, audits each,
//     and stops at the first failure (saying what was not attempted). A
//     plan after an apply is empty.

// BudgetsAPI is the part of the AWS Budgets client frontdoor budgets uses;
// *budgets.Client satisfies it.
type BudgetsAPI interface {
	DescribeBudgets(context.Context, *budgets.DescribeBudgetsInput, ...func(*budgets.Options)) (*budgets.DescribeBudgetsOutput, error)
	ListTagsForResource(context.Context, *budgets.ListTagsForResourceInput, ...func(*budgets.Options)) (*budgets.ListTagsForResourceOutput, error)
	DescribeNotificationsForBudget(context.Context, *budgets.DescribeNotificationsForBudgetInput, ...func(*budgets.Options)) (*budgets.DescribeNotificationsForBudgetOutput, error)
	DescribeSubscribersForNotification(context.Context, *budgets.DescribeSubscribersForNotificationInput, ...func(*budgets.Options)) (*budgets.DescribeSubscribersForNotificationOutput, error)
	CreateBudget(context.Context, *budgets.CreateBudgetInput, ...func(*budgets.Options)) (*budgets.CreateBudgetOutput, error)
	UpdateBudget(context.Context, *budgets.UpdateBudgetInput, ...func(*budgets.Options)) (*budgets.UpdateBudgetOutput, error)
	DeleteBudget(context.Context, *budgets.DeleteBudgetInput, ...func(*budgets.Options)) (*budgets.DeleteBudgetOutput, error)
	CreateNotification(context.Context, *budgets.CreateNotificationInput, ...func(*budgets.Options)) (*budgets.CreateNotificationOutput, error)
	DeleteNotification(context.Context, *budgets.DeleteNotificationInput, ...func(*budgets.Options)) (*budgets.DeleteNotificationOutput, error)
	CreateSubscriber(context.Context, *budgets.CreateSubscriberInput, ...func(*budgets.Options)) (*budgets.CreateSubscriberOutput, error)
	DeleteSubscriber(context.Context, *budgets.DeleteSubscriberInput, ...func(*budgets.Options)) (*budgets.DeleteSubscriberOutput, error)
}

// NewBudgetsClient builds the AWS Budgets client for cfg (as
// NewBillSource: the default credential chain, cfg.Region,
// cfg.MaxAttempts; cfg.BudgetsEndpoint or the SDK's endpoint variables)
// and returns the transport under it.
func NewBudgetsClient(ctx context.Context, cfg AWSConfig) (*budgets.Client, *http.Transport, error) {
	ac, tr, err := awsclient.Load(ctx, cfg.Region, cfg.MaxAttempts)
	if err != nil {
		return nil, nil, fmt.Errorf("aws budgets: %w", err)
	}
	return budgets.NewFromConfig(ac, func(o *budgets.Options) {
		if cfg.BudgetsEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.BudgetsEndpoint)
		}
	}), tr, nil
}

// Budget change operations.
const (
	BudgetCreate       = "create"
	BudgetUpdate       = "update"
	BudgetDelete       = "delete"
	NotificationAdd    = "add-notification"
	NotificationRemove = "remove-notification"
	SubscriberAdd      = "add-subscriber"
	SubscriberRemove   = "remove-subscriber"
	// BudgetConflict is a budget frontdoor wants but did not create: it is
	// left alone.
	BudgetConflict = "conflict"
)

// TypeBudgets is the audit event of one change made in AWS Budgets.
const TypeBudgets = "budgets.change"

// Ownership tag: on every budget frontdoor creates (with the cluster tag).
const (
	ManagedByTag   = "frontdoor:managed-by"
	ManagedByValue = "frontdoor"
)

// BudgetChange is one step of a plan.
type BudgetChange struct {
	Op      string `json:"op"`
	Budget  string `json:"budget"`
	Account string `json:"account"`
	Detail  string `json:"detail"`

	def    *bt.Budget
	notifs []bt.NotificationWithSubscribers
	notif  *bt.Notification
	sub    *bt.Subscriber
}

func (c BudgetChange) String() string { return fmt.Sprintf("%s %s: %s", c.Op, c.Budget, c.Detail) }

// PendingBudgetChanges counts the changes Apply would make (conflicts are
// not changes).
func PendingBudgetChanges(cs []BudgetChange) int {
	n := 0
	for _, c := range cs {
		if c.Op != BudgetConflict {
			n++
		}
	}
	return n
}

// ErrNoAccountID: `frontdoor budgets` needs usage.aws.account_id.
var ErrNoAccountID = errors.New("usage.aws.account_id is required: the 12-digit AWS account that holds the budgets")

// budgetsCall bounds one AWS Budgets call.
func budgetsCall[T any](ctx context.Context, cfg AWSConfig, op string, f func(context.Context) (T, error)) (T, error) {
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	out, err := f(cctx)
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && (ae.ErrorCode() == "AccessDeniedException" || ae.ErrorCode() == "AccessDenied") {
			return out, fmt.Errorf("aws budgets: %w: %s is not allowed for these credentials (attach deploy/iam-budgets-policy.json): %s", ErrAccessDenied, budgetsAction(op), ae.ErrorMessage())
		}
		return out, fmt.Errorf("aws budgets %s: %w", op, err)
	}
	return out, nil
}

// budgetsAction is the IAM action of an AWS Budgets operation.
func budgetsAction(op string) string {
	switch op {
	case "ListTagsForResource", "TagResource":
		return "budgets:" + op
	case "DescribeBudgets", "DescribeNotificationsForBudget", "DescribeSubscribersForNotification":
		return "budgets:ViewBudget"
	}
	return "budgets:ModifyBudget"
}

// PlanBudgets compares AWS Budgets with cfg.Budgets; it writes nothing.
func PlanBudgets(ctx context.Context, api BudgetsAPI, cfg Config) ([]BudgetChange, error) {
	a := cfg.AWS
	if a == nil {
		return nil, errors.New("no usage.aws section: frontdoor keeps no AWS budgets without one")
	}
	if a.AccountID == "" {
		return nil, ErrNoAccountID
	}
	existing := map[string]bt.Budget{}
	var token *string
	for {
		out, err := budgetsCall(ctx, *a, "DescribeBudgets", func(ctx context.Context) (*budgets.DescribeBudgetsOutput, error) {
			return api.DescribeBudgets(ctx, &budgets.DescribeBudgetsInput{AccountId: aws.String(a.AccountID), MaxResults: aws.Int32(100),
				NextToken: token, ShowFilterExpression: aws.Bool(true)})
		})
		if err != nil {
			return nil, err
		}
		for _, b := range out.Budgets {
			if n := aws.ToString(b.BudgetName); strings.HasPrefix(n, a.BudgetPrefix) {
				existing[n] = b
			}
		}
		if out.NextToken == nil || *out.NextToken == "" || (token != nil && *out.NextToken == *token) {
			break
		}
		token = out.NextToken
	}
	ours := map[string]bool{}
	for _, n := range sortedKeys(existing) {
		out, err := budgetsCall(ctx, *a, "ListTagsForResource", func(ctx context.Context) (*budgets.ListTagsForResourceOutput, error) {
			return api.ListTagsForResource(ctx, &budgets.ListTagsForResourceInput{ResourceARN: aws.String(budgetARN(*a, n))})
		})
		if err != nil {
			return nil, err
		}
		var managed, cluster bool
		for _, t := range out.ResourceTags {
			managed = managed || (aws.ToString(t.Key) == ManagedByTag && aws.ToString(t.Value) == ManagedByValue)
			cluster = cluster || (aws.ToString(t.Key) == a.Tags.Cluster && aws.ToString(t.Value) == a.Cluster)
		}
		ours[n] = managed && cluster
	}

	var changes []BudgetChange
	wanted := map[string]bool{}
	for _, acct := range sortedKeys(cfg.Budgets) {
		want := desiredBudget(cfg, acct)
		name := aws.ToString(want.BudgetName)
		wanted[name] = true
		cur, exists := existing[name]
		notifs := desiredNotifications(cfg.Budgets[acct])
		switch {
		case !exists:
			changes = append(changes, BudgetChange{Op: BudgetCreate, Budget: name, Account: acct,
				Detail: describeBudget(want, notifs), def: &want, notifs: notifs})
		case !ours[name]:
			changes = append(changes, BudgetChange{Op: BudgetConflict, Budget: name, Account: acct,
				Detail: fmt.Sprintf("a budget of this name exists without the tags %s=%s and %s=%s: frontdoor did not create it and leaves it alone (rename it, or change usage.aws.budget_prefix)",
					ManagedByTag, ManagedByValue, a.Tags.Cluster, a.Cluster)})
		default:
			if why := budgetDiffers(cur, want); why != "" {
				changes = append(changes, BudgetChange{Op: BudgetUpdate, Budget: name, Account: acct,
					Detail: why + " → " + describeBudget(want, nil), def: &want})
			}
			nc, err := notificationChanges(ctx, api, *a, name, acct, notifs)
			if err != nil {
				return nil, err
			}
			changes = append(changes, nc...)
		}
	}
	for _, n := range sortedKeys(existing) {
		if ours[n] && !wanted[n] {
			changes = append(changes, BudgetChange{Op: BudgetDelete, Budget: n, Account: strings.TrimPrefix(n, a.BudgetPrefix),
				Detail: "its account is no longer in usage.budgets"})
		}
	}
	return changes, nil
}

// budgetARN is the ARN AWS Budgets tags a budget by.
func budgetARN(a AWSConfig, name string) string {
	partition := "aws"
	switch {
	case strings.HasPrefix(a.Region, "cn-"):
		partition = "aws-cn"
	case strings.HasPrefix(a.Region, "us-gov-"):
		partition = "aws-us-gov"
	}
	return "arn:" + partition + ":budgets::" + a.AccountID + ":budget/" + name
}

// monthlyAmount writes a budget amount with two decimals.
func monthlyAmount(x float64) string { return strconv.FormatFloat(math.Round(x*100)/100, 'f', 2, 64) }

func desiredBudget(cfg Config, account string) bt.Budget {
	a := cfg.AWS
	tag := func(k, v string) bt.Expression {
		return bt.Expression{Tags: &bt.TagValues{Key: aws.String(k), Values: []string{v}, MatchOptions: []bt.MatchOption{bt.MatchOptionEquals}}}
	}
	return bt.Budget{
		BudgetName:       aws.String(a.BudgetPrefix + account),
		BudgetType:       bt.BudgetTypeCost,
		TimeUnit:         bt.TimeUnitMonthly,
		BudgetLimit:      &bt.Spend{Amount: aws.String(monthlyAmount(cfg.Budgets[account].Monthly)), Unit: aws.String(cfg.Currency)},
		FilterExpression: &bt.Expression{And: []bt.Expression{tag(a.Tags.Cluster, a.Cluster), tag(a.Tags.Account, account)}},
		Metrics:          []bt.Metric{bt.Metric(a.CEMetric())},
	}
}

// desiredNotifications: actual and forecasted, at warn_at and at 100 %.
func desiredNotifications(b Budget) []bt.NotificationWithSubscribers {
	if len(b.Notify) == 0 {
		return nil
	}
	thresholds := []float64{math.Round(b.WarnAt*10000) / 100, 100}
	if thresholds[0] >= 100 {
		thresholds = thresholds[1:]
	}
	var subs []bt.Subscriber
	for _, addr := range b.Notify {
		subs = append(subs, bt.Subscriber{SubscriptionType: bt.SubscriptionTypeEmail, Address: aws.String(addr)})
	}
	var out []bt.NotificationWithSubscribers
	for _, typ := range []bt.NotificationType{bt.NotificationTypeActual, bt.NotificationTypeForecasted} {
		for _, th := range thresholds {
			out = append(out, bt.NotificationWithSubscribers{Notification: &bt.Notification{NotificationType: typ,
				ComparisonOperator: bt.ComparisonOperatorGreaterThan, Threshold: th, ThresholdType: bt.ThresholdTypePercentage},
				Subscribers: slices.Clone(subs)})
		}
	}
	return out
}

func describeBudget(b bt.Budget, notifs []bt.NotificationWithSubscribers) string {
	s := fmt.Sprintf("%s %s a month of %s, cost tagged %s", aws.ToString(b.BudgetLimit.Amount), aws.ToString(b.BudgetLimit.Unit),
		b.Metrics[0], strings.Join(tagFilterList(b.FilterExpression), " and "))
	if notifs != nil {
		var ns []string
		for _, n := range notifs {
			ns = append(ns, describeNotification(*n.Notification))
		}
		s += fmt.Sprintf("; alerts %s to %s", strings.Join(ns, ", "), strings.Join(addresses(notifs[0].Subscribers), ", "))
	}
	return s
}

func describeNotification(n bt.Notification) string {
	return fmt.Sprintf("%s>%g%%", strings.ToLower(string(n.NotificationType)), n.Threshold)
}

func addresses(subs []bt.Subscriber) []string {
	var out []string
	for _, s := range subs {
		out = append(out, aws.ToString(s.Address))
	}
	return out
}

// tagFilterList is a filter's tag conditions ("k=v"), or nil when it is
// anything but tags joined by And.
func tagFilterList(e *bt.Expression) []string {
	if e == nil {
		return nil
	}
	exprs := e.And
	if e.Tags != nil && len(e.And) == 0 {
		exprs = []bt.Expression{*e}
	}
	if e.Or != nil || e.Not != nil || e.Dimensions != nil || e.CostCategories != nil || (e.Tags != nil && len(e.And) > 0) {
		return nil
	}
	var out []string
	for _, x := range exprs {
		if x.Tags == nil || x.And != nil || x.Or != nil || x.Not != nil || x.Dimensions != nil || x.CostCategories != nil {
			return nil
		}
		for _, m := range x.Tags.MatchOptions {
			if m != bt.MatchOptionEquals {
				return nil
			}
		}
		vals := slices.Clone(x.Tags.Values)
		slices.Sort(vals)
		out = append(out, aws.ToString(x.Tags.Key)+"="+strings.Join(vals, "|"))
	}
	slices.Sort(out)
	return out
}

// budgetDiffers says how an existing budget differs from the wanted one
// ("" when it does not). A metric the answer does not show is taken as
// unchanged.
func budgetDiffers(cur, want bt.Budget) string {
	var why []string
	if cur.BudgetType != want.BudgetType || cur.TimeUnit != want.TimeUnit {
		why = append(why, fmt.Sprintf("%s %s", cur.TimeUnit, cur.BudgetType))
	}
	if cur.BudgetLimit == nil || !sameAmount(aws.ToString(cur.BudgetLimit.Amount), aws.ToString(want.BudgetLimit.Amount)) ||
		aws.ToString(cur.BudgetLimit.Unit) != aws.ToString(want.BudgetLimit.Unit) {
		amt := "no limit"
		if cur.BudgetLimit != nil {
			amt = aws.ToString(cur.BudgetLimit.Amount) + " " + aws.ToString(cur.BudgetLimit.Unit)
		}
		why = append(why, "amount "+amt)
	}
	if !slices.Equal(tagFilterList(cur.FilterExpression), tagFilterList(want.FilterExpression)) || cur.FilterExpression == nil {
		why = append(why, "filter "+strings.Join(tagFilterList(cur.FilterExpression), " and "))
	}
	if len(cur.Metrics) > 0 && !slices.Equal(cur.Metrics, want.Metrics) {
		why = append(why, fmt.Sprintf("metric %v", cur.Metrics))
	}
	return strings.Join(why, ", ")
}

func sameAmount(a, b string) bool {
	x, err1 := ParseAmount(a)
	y, err2 := ParseAmount(b)
	return err1 == nil && err2 == nil && x.Cmp(y) == 0
}

func sameNotification(a, b bt.Notification) bool {
	tt := func(t bt.ThresholdType) bt.ThresholdType {
		if t == "" {
			return bt.ThresholdTypePercentage
		}
		return t
	}
	return a.NotificationType == b.NotificationType && a.ComparisonOperator == b.ComparisonOperator &&
		math.Abs(a.Threshold-b.Threshold) < 1e-9 && tt(a.ThresholdType) == tt(b.ThresholdType)
}

// notificationChanges diffs one of frontdoor's budgets' notifications and
// their subscribers against the wanted ones.
func notificationChanges(ctx context.Context, api BudgetsAPI, a AWSConfig, name, acct string, want []bt.NotificationWithSubscribers) ([]BudgetChange, error) {
	var cur []bt.Notification
	var token *string
	for {
		out, err := budgetsCall(ctx, a, "DescribeNotificationsForBudget", func(ctx context.Context) (*budgets.DescribeNotificationsForBudgetOutput, error) {
			return api.DescribeNotificationsForBudget(ctx, &budgets.DescribeNotificationsForBudgetInput{AccountId: aws.String(a.AccountID),
				BudgetName: aws.String(name), MaxResults: aws.Int32(100), NextToken: token})
		})
		if err != nil {
			return nil, err
		}
		cur = append(cur, out.Notifications...)
		if out.NextToken == nil || *out.NextToken == "" || len(cur) > 100 {
			break
		}
		token = out.NextToken
	}
	var changes []BudgetChange
	for _, w := range want {
		i := slices.IndexFunc(cur, func(n bt.Notification) bool { return sameNotification(n, *w.Notification) })
		if i < 0 {
			changes = append(changes, BudgetChange{Op: NotificationAdd, Budget: name, Account: acct,
				Detail: describeNotification(*w.Notification) + " to " + strings.Join(addresses(w.Subscribers), ", "),
				notif:  w.Notification, notifs: []bt.NotificationWithSubscribers{w}})
			continue
		}
		n := cur[i]
		subs, err := subscribersOf(ctx, api, a, name, n)
		if err != nil {
			return nil, err
		}
		var add, remove []BudgetChange
		for _, s := range w.Subscribers {
			if !slices.ContainsFunc(subs, func(x bt.Subscriber) bool { return sameSubscriber(x, s) }) {
				add = append(add, BudgetChange{Op: SubscriberAdd, Budget: name, Account: acct,
					Detail: aws.ToString(s.Address) + " to " + describeNotification(n), notif: &n, sub: &s})
			}
		}
		for _, s := range subs {
			if !slices.ContainsFunc(w.Subscribers, func(x bt.Subscriber) bool { return sameSubscriber(x, s) }) {
				remove = append(remove, BudgetChange{Op: SubscriberRemove, Budget: name, Account: acct,
					Detail: aws.ToString(s.Address) + " from " + describeNotification(n), notif: &n, sub: &s})
			}
		}
		changes = append(append(changes, add...), remove...) // a notification keeps a subscriber throughout
	}
	for _, n := range cur {
		if !slices.ContainsFunc(want, func(w bt.NotificationWithSubscribers) bool { return sameNotification(n, *w.Notification) }) {
			changes = append(changes, BudgetChange{Op: NotificationRemove, Budget: name, Account: acct,
				Detail: describeNotification(n) + " is not wanted", notif: &n})
		}
	}
	return changes, nil
}

func sameSubscriber(a, b bt.Subscriber) bool {
	return a.SubscriptionType == b.SubscriptionType && strings.EqualFold(aws.ToString(a.Address), aws.ToString(b.Address))
}

func subscribersOf(ctx context.Context, api BudgetsAPI, a AWSConfig, name string, n bt.Notification) ([]bt.Subscriber, error) {
	var subs []bt.Subscriber
	var token *string
	for {
		out, err := budgetsCall(ctx, a, "DescribeSubscribersForNotification", func(ctx context.Context) (*budgets.DescribeSubscribersForNotificationOutput, error) {
			return api.DescribeSubscribersForNotification(ctx, &budgets.DescribeSubscribersForNotificationInput{AccountId: aws.String(a.AccountID),
				BudgetName: aws.String(name), Notification: &n, MaxResults: aws.Int32(100), NextToken: token})
		})
		if err != nil {
			return nil, err
		}
		subs = append(subs, out.Subscribers...)
		if out.NextToken == nil || *out.NextToken == "" || len(subs) > 100 {
			return subs, nil
		}
		token = out.NextToken
	}
}

// ApplyBudgets makes the changes in order (conflicts are skipped), records
// each applied one, the one that failed and those not attempted after it
// in the audit trail (as by), and returns how many were applied.
func ApplyBudgets(ctx context.Context, api BudgetsAPI, cfg Config, changes []BudgetChange, au *audit.Logger, by string) (int, error) {
	a := *cfg.AWS
	record := func(c BudgetChange, result, reason string) {
		au.Record(audit.Event{Type: TypeBudgets, User: by, Result: result, Reason: reason})
	}
	applied := 0
	for i, c := range changes {
		if c.Op == BudgetConflict {
			continue
		}
		if err := applyBudgetChange(ctx, api, a, c); err != nil {
			record(c, "fail", fmt.Sprintf("%s: %v", c, err))
			for _, rest := range changes[i+1:] {
				if rest.Op != BudgetConflict {
					record(rest, "fail", "not attempted after a failure: "+rest.String())
				}
			}
			return applied, err
		}
		record(c, "ok", c.String())
		applied++
	}
	return applied, nil
}

func applyBudgetChange(ctx context.Context, api BudgetsAPI, a AWSConfig, c BudgetChange) error {
	acct, name := aws.String(a.AccountID), aws.String(c.Budget)
	var err error
	switch c.Op {
	case BudgetCreate:
		_, err = budgetsCall(ctx, a, "CreateBudget", func(ctx context.Context) (*budgets.CreateBudgetOutput, error) {
			return api.CreateBudget(ctx, &budgets.CreateBudgetInput{AccountId: acct, Budget: c.def, NotificationsWithSubscribers: c.notifs,
				ResourceTags: []bt.ResourceTag{
					{Key: aws.String(ManagedByTag), Value: aws.String(ManagedByValue)},
					{Key: aws.String(a.Tags.Cluster), Value: aws.String(a.Cluster)},
					{Key: aws.String(a.Tags.Account), Value: aws.String(c.Account)},
				}})
		})
	case BudgetUpdate:
		_, err = budgetsCall(ctx, a, "UpdateBudget", func(ctx context.Context) (*budgets.UpdateBudgetOutput, error) {
			return api.UpdateBudget(ctx, &budgets.UpdateBudgetInput{AccountId: acct, NewBudget: c.def})
		})
	case BudgetDelete:
		_, err = budgetsCall(ctx, a, "DeleteBudget", func(ctx context.Context) (*budgets.DeleteBudgetOutput, error) {
			return api.DeleteBudget(ctx, &budgets.DeleteBudgetInput{AccountId: acct, BudgetName: name})
		})
	case NotificationAdd:
		_, err = budgetsCall(ctx, a, "CreateNotification", func(ctx context.Context) (*budgets.CreateNotificationOutput, error) {
			return api.CreateNotification(ctx, &budgets.CreateNotificationInput{AccountId: acct, BudgetName: name,
				Notification: c.notif, Subscribers: c.notifs[0].Subscribers})
		})
	case NotificationRemove:
		_, err = budgetsCall(ctx, a, "DeleteNotification", func(ctx context.Context) (*budgets.DeleteNotificationOutput, error) {
			return api.DeleteNotification(ctx, &budgets.DeleteNotificationInput{AccountId: acct, BudgetName: name, Notification: c.notif})
		})
	case SubscriberAdd:
		_, err = budgetsCall(ctx, a, "CreateSubscriber", func(ctx context.Context) (*budgets.CreateSubscriberOutput, error) {
			return api.CreateSubscriber(ctx, &budgets.CreateSubscriberInput{AccountId: acct, BudgetName: name, Notification: c.notif, Subscriber: c.sub})
		})
	case SubscriberRemove:
		_, err = budgetsCall(ctx, a, "DeleteSubscriber", func(ctx context.Context) (*budgets.DeleteSubscriberOutput, error) {
			return api.DeleteSubscriber(ctx, &budgets.DeleteSubscriberInput{AccountId: acct, BudgetName: name, Notification: c.notif, Subscriber: c.sub})
		})
	default:
		err = fmt.Errorf("unknown budget change %q", c.Op)
	}
	return err
}

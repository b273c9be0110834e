package costtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient/awsjsontest"
)

// BudgetInfo is what the fake holds of a budget, for tests to check.
type BudgetInfo struct {
	Name   string
	Amount string // BudgetLimit.Amount as sent
	// Filter is the FilterExpression as sent (JSON), "" without one.
	Filter        string
	Metrics       []string
	Tags          []Tag
	Notifications []NotificationInfo
}

// NotificationInfo is a notification and its subscribers' addresses.
type NotificationInfo struct {
	Notification
	Addresses []string
}

// Budget returns the budget named name, if any.
func (s *Server) Budget(name string) (BudgetInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.budgets[name]
	if b == nil {
		return BudgetInfo{}, false
	}
	info := BudgetInfo{Name: name, Tags: slices.Clone(b.tags)}
	var lim struct{ Amount, Unit string }
	json.Unmarshal(b.raw["BudgetLimit"], &lim)
	info.Amount = lim.Amount
	if f := b.raw["FilterExpression"]; len(f) > 0 {
		info.Filter = string(f)
	}
	json.Unmarshal(b.raw["Metrics"], &info.Metrics)
	for _, n := range b.notifs {
		ni := NotificationInfo{Notification: n.n}
		for _, sub := range n.subs {
			ni.Addresses = append(ni.Addresses, sub.Address)
		}
		info.Notifications = append(info.Notifications, ni)
	}
	return info, true
}

// Budgets returns the names of every budget.
func (s *Server) Budgets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.budgets))
}

// PutBudget adds a budget as someone else made it (the console, another
// tool): a raw Budget object, its tags, no notifications.
func (s *Server) PutBudget(name, amount string, tags ...Tag) {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw := map[string]json.RawMessage{}
	for k, v := range map[string]any{"BudgetName": name, "BudgetType": "COST", "TimeUnit": "MONTHLY",
		"BudgetLimit": map[string]string{"Amount": amount, "Unit": "USD"}} {
		raw[k], _ = json.Marshal(v)
	}
	s.budgets[name] = &budget{raw: raw, name: name, tags: tags}
}

func (s *Server) serveBudgets(w http.ResponseWriter, op string, body []byte) {
	var in struct {
		AccountId                    string
		BudgetName                   string
		Budget, NewBudget            map[string]json.RawMessage
		MaxResults                   *int
		NextToken                    *string
		ShowFilterExpression         *bool
		Notification                 *Notification
		Subscriber                   *Subscriber
		Subscribers                  []Subscriber
		NotificationsWithSubscribers []struct {
			Notification Notification
			Subscribers  []Subscriber
		}
		ResourceTags []Tag
		ResourceARN  string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.Problem("%s body: %v", op, err)
		awsjsontest.WriteError(w, 400, "SerializationException", err.Error())
		return
	}
	if op != "ListTagsForResource" && in.AccountId != AccountID {
		awsjsontest.WriteError(w, 400, "InvalidParameterException", fmt.Sprintf("AccountId %q is not this account", in.AccountId))
		return
	}
	if in.MaxResults != nil && (*in.MaxResults < 1 || *in.MaxResults > 100) {
		s.Problem("%s MaxResults %d out of 1..100", op, *in.MaxResults)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.budgets[in.BudgetName]
	notFound := func() {
		awsjsontest.WriteError(w, 400, "NotFoundException", "Unable to get budget: "+in.BudgetName+" - the budget doesn't exist.")
	}
	findNotif := func() *notification {
		if b == nil || in.Notification == nil {
			return nil
		}
		for _, n := range b.notifs {
			if n.n.same(*in.Notification) {
				return n
			}
		}
		return nil
	}
	switch op {
	case "DescribeBudgets":
		names := slices.Sorted(maps.Keys(s.budgets))
		from, ok := s.page(w, in.NextToken, len(names))
		if !ok {
			return
		}
		size := s.budgetsPg
		if in.MaxResults != nil {
			size = min(size, *in.MaxResults)
		}
		to := min(from+size, len(names))
		var out []map[string]json.RawMessage
		for _, n := range names[from:to] {
			o := map[string]json.RawMessage{}
			for k, v := range s.budgets[n].raw {
				if k == "FilterExpression" && (in.ShowFilterExpression == nil || !*in.ShowFilterExpression) {
					continue // shown only when asked for
				}
				o[k] = v
			}
			out = append(out, o)
		}
		res := map[string]any{"Budgets": out}
		if to < len(names) {
			res["NextToken"] = "page-" + strconv.Itoa(to)
		}
		awsjsontest.WriteJSON(w, res)
	case "CreateBudget":
		name, ok := s.checkBudget(w, in.Budget)
		if !ok {
			return
		}
		if s.budgets[name] != nil {
			awsjsontest.WriteError(w, 400, "DuplicateRecordException", "Error creating budget: "+name+" - the budget already exists.")
			return
		}
		nb := &budget{raw: in.Budget, name: name, tags: in.ResourceTags}
		for _, nw := range in.NotificationsWithSubscribers {
			if !s.checkNotification(w, nw.Notification, nw.Subscribers) {
				return
			}
			nb.notifs = append(nb.notifs, &notification{n: nw.Notification, subs: nw.Subscribers})
		}
		if len(nb.notifs) > 5 {
			awsjsontest.WriteError(w, 400, "InvalidParameterException", "at most 5 notifications per budget")
			return
		}
		s.budgets[name] = nb
		s.writes++
		awsjsontest.WriteJSON(w, map[string]any{})
	case "UpdateBudget":
		name, ok := s.checkBudget(w, in.NewBudget)
		if !ok {
			return
		}
		if s.budgets[name] == nil {
			in.BudgetName = name
			notFound()
			return
		}
		s.budgets[name].raw = in.NewBudget
		s.writes++
		awsjsontest.WriteJSON(w, map[string]any{})
	case "DeleteBudget":
		if b == nil {
			notFound()
			return
		}
		delete(s.budgets, in.BudgetName)
		s.writes++
		awsjsontest.WriteJSON(w, map[string]any{})
	case "DescribeNotificationsForBudget":
		if b == nil {
			notFound()
			return
		}
		from, ok := s.page(w, in.NextToken, len(b.notifs))
		if !ok {
			return
		}
		to := min(from+2, len(b.notifs)) // small pages: the client must follow them
		ns := []Notification{}
		for _, n := range b.notifs[from:to] {
			ns = append(ns, n.n)
		}
		res := map[string]any{"Notifications": ns}
		if to < len(b.notifs) {
			res["NextToken"] = "page-" + strconv.Itoa(to)
		}
		awsjsontest.WriteJSON(w, res)
	case "DescribeSubscribersForNotification":
		n := findNotif()
		if n == nil {
			notFound()
			return
		}
		from, ok := s.page(w, in.NextToken, len(n.subs))
		if !ok {
			return
		}
		to := min(from+3, len(n.subs))
		res := map[string]any{"Subscribers": n.subs[from:to]}
		if to < len(n.subs) {
			res["NextToken"] = "page-" + strconv.Itoa(to)
		}
		awsjsontest.WriteJSON(w, res)
	case "CreateNotification":
		if b == nil {
			notFound()
			return
		}
		if in.Notification == nil || !s.checkNotification(w, *in.Notification, in.Subscribers) {
			return
		}
		if findNotif() != nil {
			awsjsontest.WriteError(w, 400, "DuplicateRecordException", "the notification already exists")
			return
		}
		if len(b.notifs) >= 5 {
			awsjsontest.WriteError(w, 400, "InvalidParameterException", "at most 5 notifications per budget")
			return
		}
		b.notifs = append(b.notifs, &notification{n: *in.Notification, subs: in.Subscribers})
		s.writes++
		awsjsontest.WriteJSON(w, map[string]any{})
	case "DeleteNotification":
		n := findNotif()
		if n == nil {
			notFound()
			return
		}
		b.notifs = slices.DeleteFunc(b.notifs, func(x *notification) bool { return x == n })
		s.writes++
		awsjsontest.WriteJSON(w, map[string]any{})
	case "CreateSubscriber", "DeleteSubscriber":
		n := findNotif()
		if n == nil || in.Subscriber == nil {
			notFound()
			return
		}
		i := slices.IndexFunc(n.subs, func(x Subscriber) bool { return x == *in.Subscriber })
		switch {
		case op == "CreateSubscriber" && i >= 0:
			awsjsontest.WriteError(w, 400, "DuplicateRecordException", "the subscriber already exists")
			return
		case op == "CreateSubscriber":
			if len(n.subs) >= 11 {
				awsjsontest.WriteError(w, 400, "InvalidParameterException", "at most 11 subscribers per notification")
				return
			}
			n.subs = append(n.subs, *in.Subscriber)
		case i < 0:
			notFound()
			return
		default:
			if len(n.subs) == 1 {
				awsjsontest.WriteError(w, 400, "InvalidParameterException", "a notification needs at least one subscriber")
				return
			}
			n.subs = slices.Delete(n.subs, i, i+1)
		}
		s.writes++
		awsjsontest.WriteJSON(w, map[string]any{})
	case "ListTagsForResource":
		prefix := "arn:aws:budgets::" + AccountID + ":budget/"
		name, ok := strings.CutPrefix(in.ResourceARN, prefix)
		if !ok {
			s.Problem("ListTagsForResource ARN %q: want %sNAME", in.ResourceARN, prefix)
			awsjsontest.WriteError(w, 400, "InvalidParameterException", "bad ARN")
			return
		}
		if s.budgets[name] == nil {
			in.BudgetName = name
			notFound()
			return
		}
		tags := s.budgets[name].tags
		if tags == nil {
			tags = []Tag{}
		}
		awsjsontest.WriteJSON(w, map[string]any{"ResourceTags": tags})
	default:
		s.Problem("unexpected Budgets operation %s", op)
		awsjsontest.WriteError(w, 400, "UnknownOperationException", op)
	}
}

// page reads a NextToken ("page-N").
func (s *Server) page(w http.ResponseWriter, token *string, n int) (int, bool) {
	if token == nil {
		return 0, true
	}
	v, err := strconv.Atoi(strings.TrimPrefix(*token, "page-"))
	if err != nil || v < 0 || v > n {
		awsjsontest.WriteError(w, 400, "InvalidNextTokenException", "invalid NextToken")
		return 0, false
	}
	return v, true
}

// checkBudget checks a Budget object as CreateBudget and UpdateBudget
// take it; mu is held.
func (s *Server) checkBudget(w http.ResponseWriter, raw map[string]json.RawMessage) (string, bool) {
	var b struct {
		BudgetName, BudgetType, TimeUnit string
		BudgetLimit                      *struct{ Amount, Unit string }
		CostFilters                      map[string][]string
		FilterExpression                 json.RawMessage
	}
	body, _ := json.Marshal(raw)
	if err := json.Unmarshal(body, &b); err != nil || b.BudgetName == "" || b.BudgetType == "" || b.TimeUnit == "" {
		s.Problem("Budget without name, type or time unit: %s", body)
		awsjsontest.WriteError(w, 400, "InvalidParameterException", "BudgetName, BudgetType and TimeUnit are required")
		return "", false
	}
	if strings.ContainsAny(b.BudgetName, ":\\") || len(b.BudgetName) > 100 {
		awsjsontest.WriteError(w, 400, "InvalidParameterException", "invalid BudgetName")
		return "", false
	}
	if b.BudgetType == "COST" && (b.BudgetLimit == nil || b.BudgetLimit.Amount == "") {
		awsjsontest.WriteError(w, 400, "InvalidParameterException", "a COST budget needs a BudgetLimit")
		return "", false
	}
	if len(b.CostFilters) > 0 && len(b.FilterExpression) > 0 {
		awsjsontest.WriteError(w, 400, "InvalidParameterException", "CostFilters and FilterExpression cannot be used together")
		return "", false
	}
	return b.BudgetName, true
}

// checkNotification checks a notification and its subscribers; mu is held.
func (s *Server) checkNotification(w http.ResponseWriter, n Notification, subs []Subscriber) bool {
	if (n.NotificationType != "ACTUAL" && n.NotificationType != "FORECASTED") || n.ComparisonOperator == "" || n.Threshold <= 0 {
		s.Problem("bad notification %+v", n)
		awsjsontest.WriteError(w, 400, "InvalidParameterException", "invalid notification")
		return false
	}
	if len(subs) < 1 || len(subs) > 11 {
		awsjsontest.WriteError(w, 400, "InvalidParameterException", "1 to 11 subscribers per notification")
		return false
	}
	for _, sub := range subs {
		if sub.SubscriptionType != "EMAIL" && sub.SubscriptionType != "SNS" {
			s.Problem("bad subscriber %+v", sub)
			awsjsontest.WriteError(w, 400, "InvalidParameterException", "invalid subscriber")
			return false
		}
	}
	return true
}

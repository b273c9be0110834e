package usage

import (
	"cmp"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
)

// How a bill is shared out (AddActual), once, here:
//
//   - The bill is Cost Explorer's cost of the cluster (every line carries
//     the cluster tag), by the values of the account and role tags, summed
//     over the window's periods exactly.
//   - Role: "compute", and anything not listed below ("storage", no role
//     tag, a value frontdoor does not know), is shared by GPU-hours;
//     "login" by login-node hours (the same hours the estimate prices);
//     "gateway" and "audit" are shared infrastructure that frontdoor
//     charges to no one (deploy/tags.md): left unallocated.
//   - Account: a line tagged with an account goes to that account: by
//     account, to its row; by group or user, to the rows that used the
//     account in the window, by their share of its hours. A line tagged
//     "shared", or without the account tag, is split among all rows by
//     their share of the hours of its role.
//   - What has nobody to go to (no hours of its kind in the window; an
//     account nobody in the rows used) is left unallocated, with why.
//   - Shares are exact (big.Rat); the rows' and the unallocated amounts are
//     rounded to cents together (roundCents), so they add up to the bill
//     rounded to the cent.

// SharedAccount is the account tag's value on resources every account
// shares.
const SharedAccount = "shared"

// Bill is the cluster's cost from Cost Explorer over whole UTC days, by
// account and role tag.
type Bill struct {
	// From, To are the UTC days asked for (To exclusive).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Metric is Cost Explorer's ("UnblendedCost", "AmortizedCost").
	Metric   string     `json:"metric"`
	Currency string     `json:"currency"`
	Lines    []BillLine `json:"lines"`
	// Estimated: Cost Explorer marks a period as not final yet.
	Estimated bool      `json:"estimated"`
	FetchedAt time.Time `json:"fetched_at"`
	// Notes say what the fetch found (tags not active, days clipped).
	Notes []string `json:"notes,omitempty"`

	// Requests is how many Cost Explorer requests this report made for
	// the bill (0 when it came from the cache).
	Requests int `json:"-"`
	// Cached: the bill came from the cache.
	Cached bool `json:"-"`
}

// BillLine is the cost of one account and role tag value in one period.
type BillLine struct {
	// Start is the start of the period (a day or a month, UTC).
	Start time.Time `json:"start"`
	// Account and Role are the tags' values; "" when untagged.
	Account string `json:"account"`
	Role    string `json:"role"`
	// Amount is exact, as Cost Explorer wrote it.
	Amount string `json:"amount"`
}

// Total is the bill's sum, exactly.
func (b Bill) Total() (*big.Rat, error) {
	sum := new(big.Rat)
	for _, l := range b.Lines {
		a, err := ParseAmount(l.Amount)
		if err != nil {
			return nil, err
		}
		sum.Add(sum, a)
	}
	return sum, nil
}

// Actual is the real bill of a report and how it was shared out.
type Actual struct {
	// Metric is Cost Explorer's ("UnblendedCost", "AmortizedCost").
	Metric string `json:"metric"`
	// From, To are the UTC days the bill covers (To exclusive).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Total is the bill; Allocated + the Unallocated amounts = Total.
	Total       Cents         `json:"total"`
	Allocated   Cents         `json:"allocated"`
	Unallocated []Unallocated `json:"unallocated"`
	// Estimated: Cost Explorer says its figures may still change.
	Estimated bool      `json:"estimated"`
	FetchedAt time.Time `json:"fetched_at"`
	// Requests is the Cost Explorer requests this report made (0: the
	// bill came from the cache).
	Requests int  `json:"requests"`
	Cached   bool `json:"cached"`
}

// Unallocated is a part of the bill no row was charged, and why.
type Unallocated struct {
	Account string `json:"account"`
	Role    string `json:"role"`
	Amount  Cents  `json:"amount"`
	Reason  string `json:"reason"`
}

// Unallocated reasons.
const (
	ReasonInfrastructure = "shared infrastructure (gateways, audit): charged to no one"
	ReasonNoGPUHours     = "no GPU-hours in the window to share it by"
	ReasonNoLoginHours   = "no login-node hours in the window to share it by (no audit records read?)"
	reasonUnusedAccount  = "tagged to account %s, which no %s in the report used in the window"
)

// weightKind is what a role's cost is shared by.
type weightKind int

const (
	byGPU weightKind = iota
	byLogin
	notShared
)

func kindOf(role string) weightKind {
	switch role {
	case "login":
		return byLogin
	case "gateway", "audit":
		return notShared
	}
	return byGPU
}

// share is one bill split: exact amounts per key, and what was left.
type share struct {
	keys    map[string]*big.Rat
	left    []Unallocated // Amount set by rounded, from leftAmt
	leftAmt []*big.Rat
}

// split shares the bill's lines among keys. hoursIn(kind, account) gives
// the keys' hours in that account ("" = all accounts); direct sends a line
// tagged with an account straight to that key (by account).
func split(lines []BillLine, hoursIn func(k weightKind, account string) map[string]float64, direct bool, by string) (share, error) {
	type ar struct{ account, role string }
	sums := map[ar]*big.Rat{}
	for _, l := range lines {
		a, err := ParseAmount(l.Amount)
		if err != nil {
			return share{}, fmt.Errorf("bill line %s/%s: %w", l.Account, l.Role, err)
		}
		k := ar{l.Account, l.Role}
		if sums[k] == nil {
			sums[k] = new(big.Rat)
		}
		sums[k].Add(sums[k], a)
	}
	order := make([]ar, 0, len(sums))
	for k := range sums {
		order = append(order, k)
	}
	slices.SortFunc(order, func(a, b ar) int { return cmp.Or(cmp.Compare(a.account, b.account), cmp.Compare(a.role, b.role)) })
	s := share{keys: map[string]*big.Rat{}}
	give := func(key string, x *big.Rat) {
		if s.keys[key] == nil {
			s.keys[key] = new(big.Rat)
		}
		s.keys[key].Add(s.keys[key], x)
	}
	leave := func(k ar, amt *big.Rat, reason string) {
		s.left = append(s.left, Unallocated{Account: k.account, Role: k.role, Reason: reason})
		s.leftAmt = append(s.leftAmt, amt)
	}
	// Lines shared by the same hours are pooled first and split once (a
	// large bill has hundreds of lines and a report a thousand rows).
	type pool struct {
		account string // "" = shared by all
		kind    weightKind
	}
	pools := map[pool]*big.Rat{}
	members := map[pool][]ar{}
	var poolOrder []pool
	for _, k := range order {
		amt := sums[k]
		kind := kindOf(k.role)
		if kind == notShared {
			leave(k, amt, ReasonInfrastructure)
			continue
		}
		shared := k.account == "" || k.account == SharedAccount
		if !shared && direct {
			give(k.account, amt)
			continue
		}
		p := pool{kind: kind}
		if !shared {
			p.account = k.account
		}
		if pools[p] == nil {
			pools[p] = new(big.Rat)
			poolOrder = append(poolOrder, p)
		}
		pools[p].Add(pools[p], amt)
		members[p] = append(members[p], k)
	}
	for _, p := range poolOrder {
		w := hoursIn(p.kind, p.account)
		keys := make([]string, 0, len(w))
		weights := map[string]*big.Rat{}
		total := new(big.Rat)
		for key, h := range w {
			if r := ratOf(h); r.Sign() > 0 {
				keys = append(keys, key)
				weights[key] = r
				total.Add(total, r)
			}
		}
		if total.Sign() == 0 {
			for _, k := range members[p] {
				switch {
				case p.account != "":
					leave(k, sums[k], fmt.Sprintf(reasonUnusedAccount, k.account, by))
				case p.kind == byLogin:
					leave(k, sums[k], ReasonNoLoginHours)
				default:
					leave(k, sums[k], ReasonNoGPUHours)
				}
			}
			continue
		}
		slices.Sort(keys)
		per := new(big.Rat).Quo(pools[p], total) // the amount per hour
		for _, key := range keys {
			give(key, new(big.Rat).Mul(per, weights[key]))
		}
	}
	return s, nil
}

// rounded rounds a share of bill (its exact total) to cents, the keys' and
// the unallocated parts together, so that they add up to the bill.
func (s share) rounded(bill *big.Rat) (map[string]Cents, []Unallocated) {
	keys := make([]string, 0, len(s.keys))
	for k := range s.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]*big.Rat, 0, len(keys)+len(s.left))
	for _, k := range keys {
		parts = append(parts, s.keys[k])
	}
	parts = append(parts, s.leftAmt...)
	cents := roundCents(parts, bill)
	out := map[string]Cents{}
	for i, k := range keys {
		out[k] = cents[i]
	}
	left := slices.Clone(s.left)
	for i := range left {
		left[i].Amount = cents[len(keys)+i]
	}
	return out, left
}

// AddActual shares bill out among the report's rows and budget accounts
// (the rules at the top of this file) and adds the actual cost, the
// difference from the estimate, and notes on freshness and on what was
// left unallocated. It does no I/O.
func AddActual(r *Report, bill Bill) error {
	total, err := bill.Total()
	if err != nil {
		return err
	}
	rowHours := func(k weightKind, account string) map[string]float64 {
		m := r.use.rowGPU
		if k == byLogin {
			m = r.use.rowLogin
		}
		if account != "" {
			return m[account]
		}
		all := map[string]float64{}
		for _, byKey := range m {
			for key, h := range byKey {
				all[key] += h
			}
		}
		return all
	}
	s, err := split(bill.Lines, rowHours, r.By == ByAccount, pluralBy(r.By))
	if err != nil {
		return err
	}
	rows, left := s.rounded(total)
	act := &Actual{Metric: bill.Metric, From: bill.From, To: bill.To, Total: Cents(roundHalfAway(new(big.Rat).Mul(total, big.NewRat(100, 1)))),
		Unallocated: left, Estimated: bill.Estimated, FetchedAt: bill.FetchedAt, Requests: bill.Requests, Cached: bill.Cached}
	act.Unallocated = slices.DeleteFunc(act.Unallocated, func(u Unallocated) bool { return u.Amount == 0 })
	if act.Unallocated == nil {
		act.Unallocated = []Unallocated{}
	}
	seen := map[string]bool{}
	for i := range r.Rows {
		rw := &r.Rows[i]
		c := rows[rw.Key]
		setActual(rw, c)
		act.Allocated += c
		seen[rw.Key] = true
	}
	for _, k := range sortedKeys(rows) {
		if !seen[k] { // tagged to an account without usage in the window
			rw := Row{Key: k, JobStates: map[string]int{}}
			setActual(&rw, rows[k])
			act.Allocated += rows[k]
			r.Rows = append(r.Rows, rw)
		}
	}
	setActual(&r.Total, act.Allocated)
	r.Actual = act

	// Budgets: the same bill by account, whatever the rows are.
	if len(r.Budgets) > 0 {
		acctHours := func(k weightKind, account string) map[string]float64 {
			tot := r.use.acctGPU
			if k == byLogin {
				tot = r.use.acctLogin
			}
			if account != "" {
				return map[string]float64{account: tot[account]}
			}
			return tot
		}
		s, err := split(bill.Lines, acctHours, true, "account")
		if err != nil {
			return err
		}
		byAcct, _ := s.rounded(total)
		for i := range r.Budgets {
			b := &r.Budgets[i]
			c := byAcct[b.Account]
			b.Actual = &c
			f := 0.0
			if b.Budget > 0 {
				f = c.Float() / b.Budget
			}
			b.ActualStatus = budgetStatus(f, b.WarnAt)
		}
	}
	r.Notes = append(r.Notes, actualNotes(r, bill)...)
	return nil
}

func setActual(rw *Row, c Cents) {
	a, d := c, c-centsOf(rw.Cost)
	rw.Actual, rw.Difference = &a, &d
}

func pluralBy(by string) string {
	switch by {
	case ByGroup:
		return "group"
	case ByUser:
		return "user"
	}
	return "account"
}

// actualNotes say how fresh the bill is and what was left unallocated.
func actualNotes(r *Report, bill Bill) []string {
	var notes []string
	days := fmt.Sprintf("%s – %s", bill.From.Format("2006-01-02"), bill.To.Format("2006-01-02"))
	n := fmt.Sprintf("actual: Cost Explorer's %s of %s (UTC days, the end excluded), as of %s UTC; Cost Explorer lags about a day, so the last day or so is missing or partial while the estimate counts up to now",
		bill.Metric, days, bill.FetchedAt.UTC().Format("2006-01-02 15:04"))
	if bill.Estimated {
		n += "; Cost Explorer marks these figures estimated (the month is not closed): they may still change"
	}
	notes = append(notes, n)
	if !bill.From.Equal(r.From) || !bill.To.Equal(r.To) {
		notes = append(notes, fmt.Sprintf("actual: Cost Explorer counts whole UTC days: the bill covers %s, the estimate %s – %s",
			days, r.From.Format("2006-01-02 15:04"), r.To.Format("2006-01-02 15:04")))
	}
	if bill.Cached {
		notes = append(notes, "actual: from the cache, no Cost Explorer request (--refresh asks again)")
	} else {
		notes = append(notes, fmt.Sprintf("actual: %d Cost Explorer request(s) (each is charged)", bill.Requests))
	}
	var un Cents
	var why []string
	for _, u := range r.Actual.Unallocated {
		un += u.Amount
		why = append(why, fmt.Sprintf("%s %s (account %q, role %q): %s", u.Amount, bill.Currency, u.Account, u.Role, u.Reason))
	}
	if len(why) > 0 {
		notes = append(notes, fmt.Sprintf("actual: %s %s of the bill is not allocated to any %s: %s", un, bill.Currency, pluralBy(r.By), strings.Join(why, "; ")))
	}
	return append(notes, bill.Notes...)
}

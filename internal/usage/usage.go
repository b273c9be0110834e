// Package usage turns audit records (sessions) and Slurm's accounting (jobs)
// into usage and cost per group, account or user over a time window. The
// aggregation is a pure function (Aggregate); reading the records (local
// files, S3, sacct) happens at the edges (source.go, cmd/frontdoor).
//
// How things are counted, once, here:
//
//   - Window: [From, To), clipped to Now. Everything that overlaps the
//     window counts for the overlapping part only.
//   - GPU-hours: a job allocation's gres/gpu count × its run time in the
//     window, for every job state (a failed, cancelled, timed-out or
//     preempted job held its GPUs as much as a completed one; a running
//     job counts until Now). Jobs that never started hold nothing.
//   - GPU cost: GPU-hours × the hourly price of the partition's instance
//     type ÷ its GPUs (Config.GPUHourly); unpriced GPU-hours are reported.
//   - Sessions: a session.start/session.end pair from the audit records
//     (by gateway and session id). A session.end alone (its start before
//     the records read) starts at end − duration. A session.start without
//     an end is open — still running, or its gateway crashed: it counts
//     until the window's end or Now, at most Config.OpenSessionMax after
//     its start, and is reported in OpenSessions.
//   - Session hours: the sum of session durations (overlapping sessions
//     of one user count each).
//   - Login-node hours: each login node's busy time, shared equally at
//     every moment among the distinct users with a session on it. The
//     rows add up to the nodes' busy hours; a user with five sessions on a
//     node pays for it once.
//   - Idle GPU-hours: capacity (GPUs × window hours) − allocated
//     GPU-hours, never below zero.
//   - Keys (By): "user"; "account": the Slurm account of each job, and for
//     sessions the user's account (Input.UserAccount, else the account
//     the user's jobs in the window used most); "group": Input.UserGroup
//     (the caller fills it with the policy rule the user matches now),
//     else the rule of the user's latest session.start record, else
//     NoGroup.
package usage

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
)

// Grouping keys.
const (
	ByGroup   = "group"
	ByAccount = "account"
	ByUser    = "user"
)

// NoGroup is the key of usage whose group or account is unknown.
const NoGroup = "-"

// Input is everything Aggregate needs.
type Input struct {
	// From, To is the window; Now clips it (running jobs, open sessions).
	From, To, Now time.Time
	// By is ByGroup, ByAccount or ByUser.
	By string
	// Jobs from Slurm's accounting (slurm.Client.Jobs).
	Jobs []slurm.Job
	// Events are audit records; only session.start and session.end are
	// used, duplicates (the same record read twice) are dropped.
	Events []audit.Event
	// UserGroup and UserAccount classify users (see the package comment);
	// either may be nil.
	UserGroup, UserAccount map[string]string
	// CapacityGPUs is the cluster's GPU count (0: idle not computed).
	CapacityGPUs int
	// Config holds rates, budgets and limits (Defaults applied).
	Config Config
}

// Row is the usage of one key (group, account or user).
type Row struct {
	Key string `json:"key"`
	// Users who had a session or a job.
	Users          int     `json:"users"`
	Sessions       int     `json:"sessions"`
	OpenSessions   int     `json:"open_sessions"`
	SessionHours   float64 `json:"session_hours"`
	LoginNodeHours float64 `json:"login_node_hours"`
	Jobs           int     `json:"jobs"`
	// JobStates counts jobs by base state.
	JobStates map[string]int `json:"job_states"`
	GPUHours  float64        `json:"gpu_hours"`
	// UnpricedGPUHours are GPU-hours in partitions without a rate.
	UnpricedGPUHours float64 `json:"unpriced_gpu_hours,omitempty"`
	GPUCost          float64 `json:"gpu_cost"`
	LoginCost        float64 `json:"login_cost"`
	Cost             float64 `json:"cost"`
	// Actual is this row's share of the real bill, Difference Actual −
	// Cost (to the cent); both only with --actual (AddActual).
	Actual     *Cents `json:"actual,omitempty"`
	Difference *Cents `json:"difference,omitempty"`

	users map[string]bool
}

// BudgetRow is one account's spend against its budget.
type BudgetRow struct {
	Account string  `json:"account"`
	Spent   float64 `json:"spent"`
	// Budget is the budget for the window (Monthly prorated by calendar
	// month).
	Budget   float64 `json:"budget"`
	Fraction float64 `json:"fraction"`
	// WarnAt is the budget's warn_at.
	WarnAt float64 `json:"warn_at"`
	// Status is "ok", "warn" (past WarnAt) or "over".
	Status string `json:"status"`
	// Actual is the account's share of the real bill, ActualStatus the
	// status by it (AddActual).
	Actual       *Cents `json:"actual,omitempty"`
	ActualStatus string `json:"actual_status,omitempty"`
}

// Day is the GPU-hours of one UTC day, per key.
type Day struct {
	Day      time.Time          `json:"day"`
	GPUHours map[string]float64 `json:"gpu_hours"`
}

// Report is Aggregate's answer.
type Report struct {
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	By       string    `json:"by"`
	Currency string    `json:"currency"`
	// Rows sorted by cost, then GPU-hours, then key.
	Rows  []Row `json:"rows"`
	Total Row   `json:"total"`
	// CapacityGPUs × the window's hours (up to Now) is CapacityGPUHours;
	// IdleGPUHours is what no job held, IdleCost its price when
	// Config.CapacityInstanceType is set.
	CapacityGPUs      int     `json:"capacity_gpus"`
	CapacityGPUHours  float64 `json:"capacity_gpu_hours"`
	AllocatedGPUHours float64 `json:"allocated_gpu_hours"`
	IdleGPUHours      float64 `json:"idle_gpu_hours"`
	IdleCost          float64 `json:"idle_cost,omitempty"`
	// Budgets of every account with a budget, by account.
	Budgets []BudgetRow `json:"budgets"`
	// Days with GPU-hours per key, in order, every day of the window.
	Days []Day `json:"days"`
	// Actual is the real bill and how it was shared out (AddActual);
	// nil without --actual.
	Actual *Actual `json:"actual,omitempty"`
	// Notes say what the figures could not account for.
	Notes []string `json:"notes,omitempty"`

	// use is who used what, by account: what AddActual shares a bill by.
	use usageWeights
}

// usageWeights are the GPU-hours and login-node hours of the window by
// Slurm account, per row key (rows) and in all (accounts).
type usageWeights struct {
	rowGPU, rowLogin   map[string]map[string]float64 // account → row key → hours
	acctGPU, acctLogin map[string]float64            // account → hours
}

func (w *usageWeights) add(m *map[string]map[string]float64, tot *map[string]float64, account, key string, h float64) {
	if *m == nil {
		*m, *tot = map[string]map[string]float64{}, map[string]float64{}
	}
	if (*m)[account] == nil {
		(*m)[account] = map[string]float64{}
	}
	(*m)[account][key] += h
	(*tot)[account] += h
}

// session is one login session as the audit records tell it.
type session struct {
	user, node, rule string
	start, end       time.Time
	open             bool
}

// Aggregate computes the report. It does no I/O.
func Aggregate(in Input) Report {
	cfg := in.Config
	from, to := in.From.UTC(), in.To.UTC()
	end := to
	if !in.Now.IsZero() && in.Now.Before(end) {
		end = in.Now.UTC()
	}
	if end.Before(from) {
		end = from
	}
	r := Report{From: from, To: to, By: in.By, Currency: cfg.Currency, CapacityGPUs: in.CapacityGPUs}
	rows := map[string]*Row{}
	row := func(k string) *Row {
		if k == "" {
			k = NoGroup
		}
		if rows[k] == nil {
			rows[k] = &Row{Key: k, JobStates: map[string]int{}, users: map[string]bool{}}
		}
		return rows[k]
	}
	sessions, skipped := sessionsOf(in.Events, end, cfg.OpenSessionMax)
	if skipped > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d session.end record(s) without a start time or duration were ignored", skipped))
	}

	// Who is in which group or account.
	latestRule := map[string]session{}
	for _, s := range sessions {
		if s.rule != "" && (latestRule[s.user].start.IsZero() || s.start.After(latestRule[s.user].start)) {
			latestRule[s.user] = s
		}
	}
	jobAccount := userAccounts(in.Jobs, from, end)
	userKey := func(user string) string {
		switch in.By {
		case ByUser:
			return user
		case ByAccount:
			if a := in.UserAccount[user]; a != "" {
				return a
			}
			return jobAccount[user]
		default:
			if g := in.UserGroup[user]; g != "" {
				return g
			}
			return latestRule[user].rule
		}
	}

	// Jobs.
	var unpriced float64
	dayIndex := map[time.Time]int{}
	for d := from.Truncate(24 * time.Hour); d.Before(end); d = d.Add(24 * time.Hour) {
		dayIndex[d] = len(r.Days)
		r.Days = append(r.Days, Day{Day: d, GPUHours: map[string]float64{}})
	}
	for _, j := range in.Jobs {
		if j.Start.IsZero() {
			continue // never ran
		}
		jEnd := j.End
		if jEnd.IsZero() {
			jEnd = end // still running
		}
		if !j.Start.Before(end) || (j.Start.Before(from) && !jEnd.After(from)) {
			continue // outside the window
		}
		h := overlap(j.Start, jEnd, from, end)
		k := j.Account
		if in.By != ByAccount {
			k = userKey(j.User)
		}
		rw := row(k)
		rw.users[j.User] = true
		rw.Jobs++
		rw.JobStates[j.State]++
		gh := float64(j.GPUs) * h
		rw.GPUHours += gh
		r.use.add(&r.use.rowGPU, &r.use.acctGPU, j.Account, rw.Key, gh)
		r.AllocatedGPUHours += gh
		if price, ok := cfg.GPUHourly(j.Partition); ok {
			rw.GPUCost += gh * price
		} else {
			rw.UnpricedGPUHours += gh
			unpriced += gh
		}
		if j.GPUs > 0 {
			for d := j.Start.Truncate(24 * time.Hour); d.Before(jEnd) && d.Before(end); d = d.Add(24 * time.Hour) {
				if i, ok := dayIndex[d]; ok {
					r.Days[i].GPUHours[rw.Key] += float64(j.GPUs) * overlap(j.Start, jEnd, maxTime(d, from), minTime(d.Add(24*time.Hour), end))
				}
			}
		}
	}
	if unpriced > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%.2f GPU-hours are in partitions without a rate (usage.rates.partitions, default_gpu_hourly)", unpriced))
	}

	// Sessions and login-node time.
	for _, s := range sessions {
		if !s.start.Before(end) || (s.start.Before(from) && !s.end.After(from)) {
			continue
		}
		h := overlap(s.start, s.end, from, end)
		rw := row(userKey(s.user))
		rw.users[s.user] = true
		rw.Sessions++
		if s.open {
			rw.OpenSessions++
		}
		rw.SessionHours += h
	}
	for user, h := range loginNodeHours(sessions, from, end) {
		rw := row(userKey(user))
		rw.LoginNodeHours += h
		rw.LoginCost += h * cfg.Rates.LoginNodeHourly
		a := in.UserAccount[user]
		if a == "" {
			a = jobAccount[user]
		}
		r.use.add(&r.use.rowLogin, &r.use.acctLogin, a, rw.Key, h)
	}

	// Rows, totals.
	total := Row{Key: "total", JobStates: map[string]int{}, users: map[string]bool{}}
	for _, rw := range rows {
		rw.Users = len(rw.users)
		rw.Cost = rw.GPUCost + rw.LoginCost
		for u := range rw.users {
			total.users[u] = true
		}
		total.Sessions += rw.Sessions
		total.OpenSessions += rw.OpenSessions
		total.SessionHours += rw.SessionHours
		total.LoginNodeHours += rw.LoginNodeHours
		total.Jobs += rw.Jobs
		for s, n := range rw.JobStates {
			total.JobStates[s] += n
		}
		total.GPUHours += rw.GPUHours
		total.UnpricedGPUHours += rw.UnpricedGPUHours
		total.GPUCost += rw.GPUCost
		total.LoginCost += rw.LoginCost
		total.Cost += rw.Cost
		r.Rows = append(r.Rows, *rw)
	}
	total.Users = len(total.users)
	r.Total = total
	slices.SortFunc(r.Rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(b.Cost, a.Cost), cmp.Compare(b.GPUHours, a.GPUHours), cmp.Compare(a.Key, b.Key))
	})

	// Capacity.
	if in.CapacityGPUs > 0 {
		r.CapacityGPUHours = float64(in.CapacityGPUs) * end.Sub(from).Hours()
		r.IdleGPUHours = r.CapacityGPUHours - r.AllocatedGPUHours
		if r.IdleGPUHours < 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("jobs held %.2f GPU-hours more than the capacity of %d GPUs allows (usage.capacity_gpus too low?)",
				-r.IdleGPUHours, in.CapacityGPUs))
			r.IdleGPUHours = 0
		}
		if it, ok := cfg.Rates.InstanceTypes[cfg.CapacityInstanceType]; ok && it.GPUs > 0 {
			r.IdleCost = r.IdleGPUHours * it.Hourly / float64(it.GPUs)
		}
	}

	// Budgets: spend per account, whatever the rows are keyed by.
	if len(cfg.Budgets) > 0 {
		spent := map[string]float64{}
		for _, j := range in.Jobs {
			if j.Start.IsZero() {
				continue
			}
			jEnd := j.End
			if jEnd.IsZero() {
				jEnd = end
			}
			if price, ok := cfg.GPUHourly(j.Partition); ok {
				spent[j.Account] += float64(j.GPUs) * overlap(j.Start, jEnd, from, end) * price
			}
		}
		for user, h := range loginNodeHours(sessions, from, end) {
			a := in.UserAccount[user]
			if a == "" {
				a = jobAccount[user]
			}
			spent[a] += h * cfg.Rates.LoginNodeHourly
		}
		for _, a := range sortedKeys(cfg.Budgets) {
			b := cfg.Budgets[a]
			br := BudgetRow{Account: a, Spent: spent[a], Budget: b.Monthly * monthsCovered(from, to), WarnAt: b.WarnAt}
			if br.Budget > 0 {
				br.Fraction = br.Spent / br.Budget
			}
			br.Status = budgetStatus(br.Fraction, b.WarnAt)
			r.Budgets = append(r.Budgets, br)
		}
	}
	return r
}

// maxSessionSeconds bounds a session.end's duration (a year): anything
// longer is a corrupt record, and would overflow time.Duration.
const maxSessionSeconds = 366 * 24 * 3600

// sessionsOf pairs session.start and session.end records.
func sessionsOf(events []audit.Event, end time.Time, openMax time.Duration) (out []session, skipped int) {
	type key struct{ gateway, id string }
	type pair struct {
		start, end *audit.Event
	}
	pairs := map[key]*pair{}
	var order []key
	for i := range events {
		e := &events[i]
		if e.Session == "" || (e.Type != audit.TypeSessionStart && e.Type != audit.TypeSessionEnd) {
			continue
		}
		k := key{e.Gateway, e.Session}
		p := pairs[k]
		if p == nil {
			p = &pair{}
			pairs[k] = p
			order = append(order, k)
		}
		if e.Type == audit.TypeSessionStart && p.start == nil {
			p.start = e
		}
		if e.Type == audit.TypeSessionEnd && p.end == nil {
			p.end = e
		}
	}
	for _, k := range order {
		p := pairs[k]
		var s session
		switch {
		case p.start != nil:
			s = session{user: p.start.User, node: p.start.Node, rule: p.start.Rule, start: p.start.Time.UTC()}
			if p.end != nil {
				s.end = p.end.Time.UTC()
			} else {
				s.open = true
				s.end = end
				if lim := s.start.Add(openMax); lim.Before(s.end) {
					s.end = lim
				}
			}
		case p.end.Duration > 0 && p.end.Duration < maxSessionSeconds && !p.end.Time.IsZero():
			s = session{user: p.end.User, node: p.end.Node, end: p.end.Time.UTC()}
			s.start = s.end.Add(-time.Duration(p.end.Duration * float64(time.Second)))
		default:
			skipped++
			continue
		}
		if s.user == "" {
			skipped++
			continue
		}
		if s.end.Before(s.start) {
			s.end = s.start
		}
		out = append(out, s)
	}
	return out, skipped
}

// loginNodeHours shares each node's busy time among the distinct users
// on it at every moment (a sweep over the session boundaries).
func loginNodeHours(sessions []session, from, end time.Time) map[string]float64 {
	type edge struct {
		t     time.Time
		user  string
		delta int
	}
	byNode := map[string][]edge{}
	for _, s := range sessions {
		a, b := maxTime(s.start, from), minTime(s.end, end)
		if !a.Before(b) {
			continue
		}
		byNode[s.node] = append(byNode[s.node], edge{a, s.user, +1}, edge{b, s.user, -1})
	}
	out := map[string]float64{}
	for _, edges := range byNode {
		sort.Slice(edges, func(i, j int) bool {
			if !edges[i].t.Equal(edges[j].t) {
				return edges[i].t.Before(edges[j].t)
			}
			return edges[i].delta < edges[j].delta // ends before starts at one instant
		})
		live := map[string]int{}
		for i, e := range edges {
			live[e.user] += e.delta
			if live[e.user] == 0 {
				delete(live, e.user)
			}
			if i+1 < len(edges) && len(live) > 0 {
				share := edges[i+1].t.Sub(e.t).Hours() / float64(len(live))
				for u := range live {
					out[u] += share
				}
			}
		}
	}
	return out
}

// userAccounts is, per user, the account of most of their GPU-hours in the
// window (then most jobs, then name): the account their sessions go to
// when nothing else says.
func userAccounts(jobs []slurm.Job, from, end time.Time) map[string]string {
	type score struct {
		gh   float64
		jobs int
	}
	s := map[string]map[string]score{}
	for _, j := range jobs {
		if j.User == "" || j.Account == "" {
			continue
		}
		if s[j.User] == nil {
			s[j.User] = map[string]score{}
		}
		jEnd := j.End
		if jEnd.IsZero() {
			jEnd = end
		}
		sc := s[j.User][j.Account]
		if !j.Start.IsZero() {
			sc.gh += float64(j.GPUs) * overlap(j.Start, jEnd, from, end)
		}
		sc.jobs++
		s[j.User][j.Account] = sc
	}
	out := map[string]string{}
	for u, accts := range s {
		best, bs := "", score{-1, -1}
		for _, a := range sortedKeys(accts) {
			if sc := accts[a]; sc.gh > bs.gh || (sc.gh == bs.gh && sc.jobs > bs.jobs) {
				best, bs = a, sc
			}
		}
		out[u] = best
	}
	return out
}

// overlap is the hours [a, b) and [from, to) share.
func overlap(a, b, from, to time.Time) float64 {
	s, e := maxTime(a, from), minTime(b, to)
	if !s.Before(e) {
		return 0
	}
	return e.Sub(s).Hours()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// monthsCovered is how many calendar months (UTC) [from, to) covers, as a
// fraction of each month touched: Nov 1 – Dec 1 is 1, Nov 1 – Nov 16 is 0.5.
func monthsCovered(from, to time.Time) float64 {
	from, to = from.UTC(), to.UTC()
	var n float64
	for m := time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC); m.Before(to); m = m.AddDate(0, 1, 0) {
		next := m.AddDate(0, 1, 0)
		n += overlap(from, to, m, next) / next.Sub(m).Hours()
	}
	return n
}

package usage

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the whole report as one JSON document.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if r.Rows == nil {
		r.Rows = []Row{}
	}
	if r.Budgets == nil {
		r.Budgets = []BudgetRow{}
	}
	if r.Days == nil {
		r.Days = []Day{}
	}
	return enc.Encode(r)
}

var csvHeader = []string{"key", "users", "sessions", "open_sessions", "session_hours", "login_node_hours",
	"jobs", "gpu_hours", "unpriced_gpu_hours", "gpu_cost", "login_cost", "cost", "currency"}

// WriteCSV writes one line per row and a last "total" line, plain numbers
// (no thousands separators), for spreadsheets. With the actual bill, two
// more columns (actual, difference: exact cents) and a last
// "(unallocated)" line: the rows' actual and it add up to the bill.
func WriteCSV(w io.Writer, r Report) error {
	cw := csv.NewWriter(w)
	head := append([]string{r.By}, csvHeader[1:]...)
	if r.Actual != nil {
		head = append(head, "actual", "difference")
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, row := range append(append([]Row{}, r.Rows...), r.Total) {
		f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
		rec := []string{row.Key, strconv.Itoa(row.Users), strconv.Itoa(row.Sessions), strconv.Itoa(row.OpenSessions),
			f(row.SessionHours), f(row.LoginNodeHours), strconv.Itoa(row.Jobs), f(row.GPUHours), f(row.UnpricedGPUHours),
			f(row.GPUCost), f(row.LoginCost), f(row.Cost), r.Currency}
		if r.Actual != nil {
			rec = append(rec, centsCell(row.Actual), centsCell(row.Difference))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	if r.Actual != nil {
		rec := make([]string, len(head))
		rec[0], rec[len(csvHeader)-1], rec[len(head)-2] = "(unallocated)", r.Currency, r.Actual.unallocated().String()
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func centsCell(c *Cents) string {
	if c == nil {
		return ""
	}
	return c.String()
}

// unallocated is the sum of what no row was charged.
func (a *Actual) unallocated() Cents {
	var c Cents
	for _, u := range a.Unallocated {
		c += u.Amount
	}
	return c
}

// WriteTable writes the report for a terminal: the rows, the cluster's
// GPU capacity and idle hours, budgets and notes.
func WriteTable(w io.Writer, r Report) error {
	fmt.Fprintf(w, "usage %s – %s by %s (%s)\n\n", r.From.Format("2006-01-02 15:04"), r.To.Format("2006-01-02 15:04"), r.By, r.Currency)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	actualHead := ""
	if r.Actual != nil {
		actualHead = "ACTUAL\tDIFFERENCE\t"
	}
	fmt.Fprintf(tw, "%s\tUSERS\tSESSIONS\tSESSION-H\tLOGIN-NODE-H\tJOBS\tGPU-H\tGPU-COST\tLOGIN-COST\tCOST\t%s\n", strings.ToUpper(r.By), actualHead)
	for _, row := range append(append([]Row{}, r.Rows...), r.Total) {
		sessions := strconv.Itoa(row.Sessions)
		if row.OpenSessions > 0 {
			sessions += fmt.Sprintf(" (%d open)", row.OpenSessions)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.1f\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t", row.Key, row.Users, sessions,
			row.SessionHours, row.LoginNodeHours, jobsCell(row), row.GPUHours, row.GPUCost, row.LoginCost, row.Cost)
		if r.Actual != nil {
			fmt.Fprintf(tw, "%s\t%s\t", centsCell(row.Actual), signed(row.Difference))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if a := r.Actual; a != nil {
		fmt.Fprintf(w, "\nactual (Cost Explorer %s, %s – %s): bill %s %s = allocated %s + unallocated %s\n",
			a.Metric, a.From.Format("2006-01-02"), a.To.Format("2006-01-02"), a.Total, r.Currency, a.Allocated, a.unallocated())
		for _, u := range a.Unallocated {
			fmt.Fprintf(w, "  unallocated %s %s: account %q, role %q: %s\n", u.Amount, r.Currency, u.Account, u.Role, u.Reason)
		}
	}
	if r.CapacityGPUs > 0 {
		pct := 0.0
		if r.CapacityGPUHours > 0 {
			pct = 100 * r.AllocatedGPUHours / r.CapacityGPUHours
		}
		fmt.Fprintf(w, "\ncapacity: %d GPUs, %.2f GPU-hours; allocated %.2f (%.1f%%); idle %.2f GPU-hours",
			r.CapacityGPUs, r.CapacityGPUHours, r.AllocatedGPUHours, pct, r.IdleGPUHours)
		if r.IdleCost > 0 {
			fmt.Fprintf(w, " (%.2f %s unused)", r.IdleCost, r.Currency)
		}
		fmt.Fprintln(w)
	}
	if len(r.Budgets) > 0 {
		fmt.Fprintln(w, "\nbudgets:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		if r.Actual != nil {
			fmt.Fprintln(tw, "ACCOUNT\tSPENT\tBUDGET\tUSED\tSTATUS\tACTUAL\tACTUAL-STATUS\t")
		} else {
			fmt.Fprintln(tw, "ACCOUNT\tSPENT\tBUDGET\tUSED\tSTATUS\t")
		}
		for _, b := range r.Budgets {
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.0f%%\t%s\t", b.Account, b.Spent, b.Budget, 100*b.Fraction, b.Status)
			if r.Actual != nil {
				fmt.Fprintf(tw, "%s\t%s\t", centsCell(b.Actual), b.ActualStatus)
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

// signed is "+1.25", "-0.50", "0.00".
func signed(c *Cents) string {
	if c == nil {
		return ""
	}
	if *c > 0 {
		return "+" + c.String()
	}
	return c.String()
}

// jobsCell is "5 (C3 F1 CA1)": the job count and its states.
func jobsCell(row Row) string {
	if row.Jobs == 0 {
		return "0"
	}
	states := make([]string, 0, len(row.JobStates))
	for s := range row.JobStates {
		states = append(states, s)
	}
	sort.Strings(states)
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = fmt.Sprintf("%s %d", strings.ToLower(s), row.JobStates[s])
	}
	return fmt.Sprintf("%d (%s)", row.Jobs, strings.Join(parts, ", "))
}

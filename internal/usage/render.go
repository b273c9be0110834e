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
// (no thousands separators), for spreadsheets.
func WriteCSV(w io.Writer, r Report) error {
	cw := csv.NewWriter(w)
	head := append([]string{r.By}, csvHeader[1:]...)
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, row := range append(append([]Row{}, r.Rows...), r.Total) {
		f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
		rec := []string{row.Key, strconv.Itoa(row.Users), strconv.Itoa(row.Sessions), strconv.Itoa(row.OpenSessions),
			f(row.SessionHours), f(row.LoginNodeHours), strconv.Itoa(row.Jobs), f(row.GPUHours), f(row.UnpricedGPUHours),
			f(row.GPUCost), f(row.LoginCost), f(row.Cost), r.Currency}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteTable writes the report for a terminal: the rows, the cluster's
// GPU capacity and idle hours, budgets and notes.
func WriteTable(w io.Writer, r Report) error {
	fmt.Fprintf(w, "usage %s – %s by %s (%s)\n\n", r.From.Format("2006-01-02 15:04"), r.To.Format("2006-01-02 15:04"), r.By, r.Currency)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tUSERS\tSESSIONS\tSESSION-H\tLOGIN-NODE-H\tJOBS\tGPU-H\tGPU-COST\tLOGIN-COST\tCOST\t\n", strings.ToUpper(r.By))
	for _, row := range append(append([]Row{}, r.Rows...), r.Total) {
		sessions := strconv.Itoa(row.Sessions)
		if row.OpenSessions > 0 {
			sessions += fmt.Sprintf(" (%d open)", row.OpenSessions)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.1f\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t\n", row.Key, row.Users, sessions,
			row.SessionHours, row.LoginNodeHours, jobsCell(row), row.GPUHours, row.GPUCost, row.LoginCost, row.Cost)
	}
	if err := tw.Flush(); err != nil {
		return err
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
		fmt.Fprintln(tw, "ACCOUNT\tSPENT\tBUDGET\tUSED\tSTATUS\t")
		for _, b := range r.Budgets {
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.0f%%\t%s\t\n", b.Account, b.Spent, b.Budget, 100*b.Fraction, b.Status)
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

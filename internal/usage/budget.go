package usage

import (
	"fmt"
	"math"
	"time"
)

// Budget statuses.
const (
	BudgetOK   = "ok"
	BudgetWarn = "warn"
	BudgetOver = "over"
)

func budgetStatus(fraction, warnAt float64) string {
	switch {
	case fraction >= 1:
		return BudgetOver
	case warnAt > 0 && fraction >= warnAt:
		return BudgetWarn
	}
	return BudgetOK
}

// BudgetWarning is the login-banner line for an account that has spent
// spent (this calendar month, in the rates' currency) of budget b: empty
// below b.WarnAt, a warning past it, a stronger one past the budget. It
// is pure so the gateway can call it on every login with a cached spend.
func BudgetWarning(account string, spent float64, b Budget) string {
	if b.Monthly <= 0 || math.IsNaN(spent) {
		return ""
	}
	f := spent / b.Monthly
	switch budgetStatus(f, b.WarnAt) {
	case BudgetOver:
		return fmt.Sprintf("frontdoor: account %s is over its monthly budget: %.0f of %.0f spent (%.0f%%); ask your PI before starting large jobs",
			account, spent, b.Monthly, 100*f)
	case BudgetWarn:
		return fmt.Sprintf("frontdoor: account %s has spent %.0f%% of its monthly budget (%.0f of %.0f)",
			account, 100*f, spent, b.Monthly)
	}
	return ""
}

// MonthWindow is the calendar month (UTC) holding t: the window a banner's
// spend is counted over.
func MonthWindow(t time.Time) (from, to time.Time) {
	t = t.UTC()
	from = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return from, from.AddDate(0, 1, 0)
}

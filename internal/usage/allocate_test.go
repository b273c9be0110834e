package usage

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
)

// allocReport is November with two accounts: nlp 30 GPU-hours (ann 20,
// cat 10, both in rule "nlp-lab"), vision 10 (bob, "vision-lab"); ann
// and bob each one login-node hour alone on a node, then one together.
func allocReport(by string) Report {
	jobs := []slurm.Job{
		{ID: "1", User: "ann", Account: "nlp", Partition: "h100", State: "COMPLETED", Start: at(2, 0), End: at(2, 10), GPUs: 2},
		{ID: "2", User: "cat", Account: "nlp", Partition: "h100", State: "COMPLETED", Start: at(3, 0), End: at(3, 10), GPUs: 1},
		{ID: "3", User: "bob", Account: "vision", Partition: "h100", State: "FAILED", Start: at(4, 0), End: at(4, 5), GPUs: 2},
	}
	events := []audit.Event{
		ev(audit.TypeSessionStart, "gw1", "s1", "ann", "login1", at(5, 0)), ev(audit.TypeSessionEnd, "gw1", "s1", "ann", "login1", at(5, 2)),
		ev(audit.TypeSessionStart, "gw1", "s2", "bob", "login1", at(5, 1)), ev(audit.TypeSessionEnd, "gw1", "s2", "bob", "login1", at(5, 3)),
	}
	groups := map[string]string{"ann": "nlp-lab", "cat": "nlp-lab", "bob": "vision-lab"}
	cfg := testConfig()
	cfg.Budgets = map[string]Budget{"nlp": {Monthly: 1000, WarnAt: 0.5}, "vision": {Monthly: 100, WarnAt: 0.8}}
	return Aggregate(Input{From: nov1, To: dec1, Now: dec1.AddDate(0, 0, 2), By: by, Jobs: jobs, Events: events,
		UserGroup: groups, Config: cfg})
}

func novBill(lines ...BillLine) Bill {
	return Bill{From: nov1, To: dec1, Metric: "UnblendedCost", Currency: "USD", Lines: lines, FetchedAt: dec1.Add(30 * time.Hour)}
}

func line(account, role, amount string) BillLine {
	return BillLine{Start: nov1, Account: account, Role: role, Amount: amount}
}

func actualOf(t *testing.T, r Report, key string) Cents {
	t.Helper()
	rw := rowOf(t, r, key)
	if rw.Actual == nil || rw.Difference == nil {
		t.Fatalf("row %s has no actual", key)
	}
	if *rw.Difference != *rw.Actual-centsOf(rw.Cost) {
		t.Errorf("row %s: difference %s, actual %s, estimate %.2f", key, *rw.Difference, *rw.Actual, rw.Cost)
	}
	return *rw.Actual
}

// checkAddsUp: the rows and the unallocated parts add up to the bill to
// the cent, and the bill is the exact sum of its lines rounded.
func checkAddsUp(t *testing.T, r Report, b Bill) {
	t.Helper()
	exact, err := b.Total()
	if err != nil {
		t.Fatal(err)
	}
	want := Cents(roundHalfAway(exact.Mul(exact, big.NewRat(100, 1))))
	var rows, left Cents
	for _, rw := range r.Rows {
		if rw.Actual != nil {
			rows += *rw.Actual
		}
	}
	for _, u := range r.Actual.Unallocated {
		left += u.Amount
	}
	if r.Actual.Total != want || rows != r.Actual.Allocated || rows+left != want || *r.Total.Actual != rows {
		t.Fatalf("bill %s (exact %s): rows %s + unallocated %s; allocated %s, total row %s",
			r.Actual.Total, want, rows, left, r.Actual.Allocated, *r.Total.Actual)
	}
}

func TestAllocateByAccount(t *testing.T) {
	r := allocReport(ByAccount)
	b := novBill(
		line("nlp", "compute", "100.004"),    // tagged: all to nlp
		line("shared", "compute", "400.00"),  // by GPU-hours: nlp 30, vision 10
		line("", "compute", "0.0000000001"),  // untagged = shared
		line("", "login", "3.00"),            // by login-node hours: ann 1.5 (nlp), bob 1.5 (vision)
		line("shared", "gateway", "50.01"),   // infrastructure: unallocated
		line("vision", "storage", "-2.5"),    // a credit, tagged: all to vision
		line("ghost", "compute", "7.00"),     // an account without usage: its own row
		line("shared", "compute", "0.00001"), // sub-cent: still adds up
	)
	if err := AddActual(&r, b); err != nil {
		t.Fatal(err)
	}
	checkAddsUp(t, r, b)
	// nlp: 100.004 + 300.0000075 + 1.50 = 401.5040075; vision: 100.0000025 + 1.50 - 2.5 = 99.0000025
	if n, v, g := actualOf(t, r, "nlp"), actualOf(t, r, "vision"), actualOf(t, r, "ghost"); n != 40150 || v != 9900 || g != 700 {
		t.Errorf("nlp %s vision %s ghost %s", n, v, g)
	}
	if len(r.Actual.Unallocated) != 1 || r.Actual.Unallocated[0].Amount != 5001 || r.Actual.Unallocated[0].Reason != ReasonInfrastructure {
		t.Errorf("unallocated: %+v", r.Actual.Unallocated)
	}
	// Budgets by the actual: nlp 401.50 of 1000 (warn at 0.5: ok),
	// vision 99.00 of 100 (past 0.8: warn).
	for _, bu := range r.Budgets {
		if bu.Actual == nil {
			t.Fatalf("budget %s without actual", bu.Account)
		}
		if want := map[string]string{"nlp": "401.50 ok", "vision": "99.00 warn"}[bu.Account]; fmt.Sprintf("%s %s", bu.Actual, bu.ActualStatus) != want {
			t.Errorf("budget %s: %s %s, want %s", bu.Account, bu.Actual, bu.ActualStatus, want)
		}
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"lags about a day", "50.01 USD of the bill is not allocated", "gateway", "Cost Explorer request"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

// By group, cost tagged to an account goes to the groups that used it by
// their hours in it; an account nobody in the report used is left
// unallocated, with its name.
func TestAllocateByGroupAndUser(t *testing.T) {
	b := novBill(line("nlp", "compute", "90"), line("nlp", "login", "10"), line("shared", "compute", "40"),
		line("ghost", "compute", "1.23"), line("vision", "login", "5"))
	r := allocReport(ByGroup)
	if err := AddActual(&r, b); err != nil {
		t.Fatal(err)
	}
	checkAddsUp(t, r, b)
	// nlp-lab: 90 + 10 (ann's login hours in nlp) + 30/40 × 40; vision-lab: 10/40 × 40 + 5.
	if n, v := actualOf(t, r, "nlp-lab"), actualOf(t, r, "vision-lab"); n != 13000 || v != 1500 {
		t.Errorf("nlp-lab %s vision-lab %s", n, v)
	}
	if len(r.Actual.Unallocated) != 1 || !strings.Contains(r.Actual.Unallocated[0].Reason, "account ghost, which no group") {
		t.Errorf("unallocated: %+v", r.Actual.Unallocated)
	}

	r = allocReport(ByUser)
	if err := AddActual(&r, b); err != nil {
		t.Fatal(err)
	}
	checkAddsUp(t, r, b)
	// ann: 90 × 20/30 + 10 + 40 × 20/40 = 90; cat: 30 + 10 = 40; bob: 10 + 5.
	if a, c, bo := actualOf(t, r, "ann"), actualOf(t, r, "cat"), actualOf(t, r, "bob"); a != 9000 || c != 4000 || bo != 1500 {
		t.Errorf("ann %s cat %s bob %s", a, c, bo)
	}
}

// Nothing to share by: a shared login line without any session read, a
// shared compute line in a window without jobs.
func TestAllocateWithoutHours(t *testing.T) {
	r := Aggregate(Input{From: nov1, To: dec1, Now: dec1, By: ByAccount, Config: testConfig()})
	b := novBill(line("", "login", "1"), line("shared", "compute", "2"))
	if err := AddActual(&r, b); err != nil {
		t.Fatal(err)
	}
	checkAddsUp(t, r, b)
	if r.Actual.Allocated != 0 || len(r.Actual.Unallocated) != 2 ||
		r.Actual.Unallocated[0].Reason != ReasonNoLoginHours || r.Actual.Unallocated[1].Reason != ReasonNoGPUHours {
		t.Errorf("%+v", r.Actual)
	}
	bad := novBill(line("", "compute", "1/3"))
	if err := AddActual(&r, bad); err == nil {
		t.Error("a bill line that is no amount was accepted")
	}
}

// The split adds up to the bill to the cent whatever the bill and the
// usage: random lines (credits, sub-cent amounts, ten decimals, every
// kind of tag) over random jobs and sessions, by every key.
func FuzzAllocateAddsUp(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		accounts := []string{"", SharedAccount, "nlp", "vision", "ghost", "students"}
		roles := []string{"", "compute", "login", "gateway", "audit", "storage", "other"}
		users := []string{"ann", "bob", "cat", "dan"}
		var jobs []slurm.Job
		for i := range rng.IntN(8) {
			s := at(1+rng.IntN(28), rng.IntN(24))
			jobs = append(jobs, slurm.Job{ID: fmt.Sprint(i), User: users[rng.IntN(4)], Account: accounts[2+rng.IntN(4)],
				Partition: "h100", State: "COMPLETED", Start: s, End: s.Add(time.Duration(1+rng.IntN(600)) * time.Minute), GPUs: rng.IntN(5)})
		}
		var events []audit.Event
		for i := range rng.IntN(6) {
			s, id, u := at(1+rng.IntN(28), rng.IntN(24)), fmt.Sprint("s", i), users[rng.IntN(4)]
			node := fmt.Sprint("login", rng.IntN(2))
			events = append(events, ev(audit.TypeSessionStart, "gw", id, u, node, s),
				ev(audit.TypeSessionEnd, "gw", id, u, node, s.Add(time.Duration(1+rng.IntN(300))*time.Minute)))
		}
		var lines []BillLine
		for range 1 + rng.IntN(12) {
			amt := fmt.Sprintf("%d.%010d", rng.Int64N(100000), rng.Int64N(10_000_000_000))
			if rng.IntN(5) == 0 {
				amt = "-" + amt
			}
			lines = append(lines, BillLine{Start: nov1, Account: accounts[rng.IntN(len(accounts))], Role: roles[rng.IntN(len(roles))], Amount: amt})
		}
		cfg := testConfig()
		cfg.Budgets = map[string]Budget{"nlp": {Monthly: 10, WarnAt: 0.8}, "ghost": {Monthly: 10, WarnAt: 0.8}}
		for _, by := range []string{ByAccount, ByGroup, ByUser} {
			r := Aggregate(Input{From: nov1, To: dec1, Now: dec1, By: by, Jobs: jobs, Events: events,
				UserGroup: map[string]string{"ann": "g1", "bob": "g2"}, Config: cfg})
			b := novBill(lines...)
			if err := AddActual(&r, b); err != nil {
				t.Fatal(err)
			}
			checkAddsUp(t, r, b)
		}
	})
}

// BenchmarkAddActual: a large university month — 600 bill lines (50
// accounts × 6 roles × 2 periods) shared among 1000 users' jobs.
func BenchmarkAddActual(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 7))
	var jobs []slurm.Job
	for i := range 5000 {
		s := at(1+rng.IntN(28), rng.IntN(24))
		jobs = append(jobs, slurm.Job{ID: fmt.Sprint(i), User: fmt.Sprint("u", rng.IntN(1000)), Account: fmt.Sprint("a", rng.IntN(50)),
			Partition: "h100", State: "COMPLETED", Start: s, End: s.Add(time.Duration(1+rng.IntN(600)) * time.Minute), GPUs: 1 + rng.IntN(8)})
	}
	var lines []BillLine
	for _, start := range []time.Time{nov1, dec1.AddDate(0, 0, -15)} {
		for a := range 50 {
			for _, role := range []string{"compute", "login", "storage", "gateway", "audit", ""} {
				lines = append(lines, BillLine{Start: start, Account: fmt.Sprint("a", a), Role: role, Amount: fmt.Sprintf("%d.%010d", rng.IntN(10000), rng.Int64N(1e10))})
			}
		}
	}
	base := Aggregate(Input{From: nov1, To: dec1, Now: dec1, By: ByUser, Jobs: jobs, Config: testConfig()})
	b.ResetTimer()
	for b.Loop() {
		r := base
		r.Rows = slices.Clone(base.Rows)
		if err := AddActual(&r, novBill(lines...)); err != nil {
			b.Fatal(err)
		}
	}
}

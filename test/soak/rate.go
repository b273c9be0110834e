package soak

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// The highest login rate the machine sustains, found by trying: new
// logins arrive at RateStart per second, then ×1.5 every RateStep, with
// every held session open. A step holds when none of its logins failed,
// none was shed, its p99 stayed within rateP99, and the logins in flight
// at its end were no more than two seconds' worth (the backlog did not
// grow). The search stops at the first step that does not hold; the rate
// of the last one that did is the soak's, after one more try halfway
// between it and the first that did not.

// rateP99 is the slowest p99 login latency a sustained rate may have.
const rateP99 = 2 * time.Second

// rateMax ends the search even if every step holds (not reached on two
// cores).
const rateMax = 400.0

func (r *run) searchRate(ctx context.Context) float64 {
	best := 0.0
	refined := false
	offered := r.cfg.RateStart
	r.log.Info("searching for the sustained login rate", "from", offered, "step", r.cfg.RateStep)
	searchStart := time.Now()
	for offered <= rateMax && ctx.Err() == nil {
		r.rate.Store(offered)
		from := time.Now()
		shed0 := r.shed.Load()
		if sleepCtx(ctx, r.cfg.RateStep) != nil {
			break
		}
		to := time.Now()
		inFlight := r.inFlight()
		// Logins that began in the last 2 s of the step may still run;
		// judge the ones that had the time to finish (a slower one is over
		// rateP99 anyway and shows in the backlog).
		ls := r.rec.Logins(from, to.Add(-rateP99), isChurn)
		lat := latencies(ls)
		st := RateStep{Offered: offered, Done: len(ls), Failed: failed(ls), Shed: r.shed.Load() - shed0, InFlight: inFlight,
			P50: percentile(lat, 50), P99: percentile(lat, 99), Load1: harness.Load1()}
		backlog := int(math.Ceil(2*offered)) + 2
		switch {
		case st.Failed > 0:
			st.Why = fmt.Sprintf("%d failed: %v", st.Failed, failReasons(ls))
		case st.Shed > 0:
			st.Why = fmt.Sprintf("%d shed", st.Shed)
		case st.P99 > rateP99.Seconds():
			st.Why = fmt.Sprintf("p99 %.2fs > %s", st.P99, rateP99)
		case inFlight > backlog:
			st.Why = fmt.Sprintf("%d logins in flight at the end (backlog > %d)", inFlight, backlog)
		default:
			st.Passed = true
		}
		r.res.RateSearch = append(r.res.RateSearch, st)
		r.log.Info("rate step", "offered", offered, "done", st.Done, "p50", st.P50, "p99", st.P99, "in_flight", inFlight,
			"passed", st.Passed, "why", st.Why)
		if !st.Passed {
			// One more try halfway between the last rate that held and
			// this one, unless they are close already.
			if mid := math.Round((best+offered)/2*2) / 2; best > 0 && mid > best && mid < offered && !refined {
				refined, offered = true, mid
				continue
			}
			break
		}
		best = offered
		if refined {
			break
		}
		offered = math.Round(offered*1.5*2) / 2
	}
	if best == 0 {
		// Not even the first step held: run at half of it, and say so.
		best = r.cfg.RateStart / 2
	}
	r.rate.Store(best)
	r.mark("rate search", searchStart, time.Now())
	// Let the backlog of the failed step drain before the steady phase.
	sleepCtx(ctx, 10*time.Second)
	r.res.check("rate search", fmt.Sprintf("a rate with no failure, nothing shed, p99 ≤ %s", rateP99),
		len(r.res.RateSearch) > 0 && r.res.RateSearch[0].Passed, "%.1f logins/s sustained", best)
	return best
}

package soak

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Result is a soak run: bench/results/soak.json. Every figure RELIABILITY.md
// quotes is here, with the conditions it was taken under.
type Result struct {
	Date       string     `json:"date"`
	Commit     string     `json:"commit,omitempty"`
	Machine    Machine    `json:"machine"`
	Conditions Conditions `json:"conditions"`
	// SetupSeconds is the time from start to every held session open.
	SetupSeconds float64 `json:"setup_s"`
	// RateSearch are the steps of the search for the login rate the
	// machine sustains; Rate is the one the load ran at.
	RateSearch []RateStep `json:"rate_search,omitempty"`
	Rate       float64    `json:"rate_per_s"`
	// Steady is the load without faults.
	Steady Phase `json:"steady"`
	// Faults, in the order they were injected, under the same load.
	Faults []FaultResult `json:"faults,omitempty"`
	// After is the gateways once the load ended, against before it began.
	After []Growth `json:"after"`
	// Audit compares every gateway's audit file with what reached the
	// bucket, after the gateways stopped (and flushed).
	Audit []AuditCheck `json:"audit,omitempty"`
	// Series: login latency per interval over the whole run, and the
	// samples of gateways and machine.
	Latency []Bucket        `json:"latency_series"`
	Samples []Sample        `json:"gateway_samples"`
	Host    []MachineSample `json:"machine_samples"`
	// Marks are the phases and faults on the time axis (for the plots).
	Marks []Mark `json:"marks"`
	// Checks are the goals and whether they were met.
	Checks []Check   `json:"checks"`
	Start  time.Time `json:"start"`
}

// Machine is where it ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	MemMiB    int64  `json:"mem_mib"`
	Kernel    string `json:"kernel"`
	OpenSSH   string `json:"openssh"`
	GoVersion string `json:"go"`
	// LoadBefore is the 1-minute load average before the soak started
	// anything (others' work on a shared machine shows here).
	LoadBefore float64 `json:"load1_before"`
}

// Conditions are the load's shape.
type Conditions struct {
	Sessions       int     `json:"sessions"`
	Streaming      int     `json:"streaming_sessions"`
	Forwarding     int     `json:"forwarding_sessions"`
	Users          int     `json:"users"`
	Gateways       int     `json:"gateways"`
	Nodes          int     `json:"nodes"`
	PasswordShare  float64 `json:"password_share"`
	SteadySeconds  float64 `json:"steady_s"`
	StreamBytes    int     `json:"stream_bytes_per_round"`
	StreamEveryS   float64 `json:"stream_every_s"`
	ForwardBytes   int     `json:"forward_bytes_per_round"`
	ForwardEveryS  float64 `json:"forward_every_s"`
	PingEveryS     float64 `json:"idle_ping_every_s"`
	Slurm          bool    `json:"slurm"`
	ClockGateway   string  `json:"clock_offset_gateway,omitempty"`
	DiskGateway    string  `json:"tmpfs_audit_gateway,omitempty"`
	Command        string  `json:"command"`
	Directory      string  `json:"directory"`
	AuditS3        bool    `json:"audit_s3"`
	SourceAddrs    int     `json:"client_source_addresses"`
	LoginTimeoutS  float64 `json:"login_timeout_s"`
	RateSearchStep float64 `json:"rate_search_step_s,omitempty"`
}

// RateStep is one step of the rate search.
type RateStep struct {
	Offered  float64 `json:"offered_per_s"`
	Done     int     `json:"done"`
	Failed   int     `json:"failed"`
	Shed     int64   `json:"shed"`
	InFlight int     `json:"in_flight_at_end"`
	P50      float64 `json:"p50_s"`
	P99      float64 `json:"p99_s"`
	Load1    float64 `json:"load1"`
	Passed   bool    `json:"passed"`
	Why      string  `json:"why,omitempty"`
}

// Phase summarises a window of the load.
type Phase struct {
	From, To      time.Time         `json:"-"`
	Seconds       float64           `json:"seconds"`
	Logins        LoginStats        `json:"logins"`
	HoldLogins    LoginStats        `json:"held_session_logins"`
	SessionsEnded int               `json:"sessions_ended"`
	EndReasons    map[string]int    `json:"end_reasons,omitempty"`
	Transfers     TransferStats     `json:"transfers"`
	Gateways      []GatewayStats    `json:"gateways"`
	Load1         Spread            `json:"load1"`
	HeldUp        Spread            `json:"held_sessions_open"`
	Shed          int64             `json:"shed,omitempty"`
	Extra         map[string]any    `json:"extra,omitempty"`
	FailReasons   map[string]int    `json:"fail_reasons,omitempty"`
	Nodes         map[string]int    `json:"logins_by_node,omitempty"`
	HealthAge     map[string]Spread `json:"health_age_ms,omitempty"`
}

// LoginStats are logins of a window.
type LoginStats struct {
	Count      int     `json:"count"`
	Failed     int     `json:"failed"`
	PerSecond  float64 `json:"per_s"`
	P50        float64 `json:"p50_s"`
	P90        float64 `json:"p90_s"`
	P99        float64 `json:"p99_s"`
	Max        float64 `json:"max_s"`
	FailedOver int     `json:"failed_over,omitempty"`
}

// TransferStats are the checksummed round trips of a window.
type TransferStats struct {
	Count   int   `json:"count"`
	Bytes   int64 `json:"bytes"`
	Corrupt int   `json:"corrupt"`
	Lost    int   `json:"lost"`
}

// GatewayStats are one gateway's samples in a window.
type GatewayStats struct {
	Gateway    string `json:"gateway"`
	RSSMiB     Spread `json:"rss_mib"`
	Goroutines Spread `json:"goroutines"`
	FDs        Spread `json:"fds"`
	Threads    Spread `json:"threads"`
}

// Spread is first, min, median, max, last of a series.
type Spread struct {
	First  float64 `json:"first"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
	Last   float64 `json:"last"`
	N      int     `json:"n"`
}

func spread(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	return Spread{First: v[0], Last: v[len(v)-1], Min: slices.Min(v), Max: slices.Max(v), Median: percentile(v, 50),
		P99: percentile(v, 99), N: len(v)}
}

// Growth is one gateway after the load against before it.
type Growth struct {
	Gateway          string  `json:"gateway"`
	GoroutinesBefore int     `json:"goroutines_before"`
	GoroutinesPeak   int     `json:"goroutines_peak"`
	GoroutinesAfter  int     `json:"goroutines_after"`
	FDsBefore        int     `json:"fds_before"`
	FDsPeak          int     `json:"fds_peak"`
	FDsAfter         int     `json:"fds_after"`
	RSSBeforeMiB     float64 `json:"rss_before_mib"`
	RSSPeakMiB       float64 `json:"rss_peak_mib"`
	RSSAfterMiB      float64 `json:"rss_after_mib"`
	SessionsAfter    int     `json:"sessions_after"`
	// Restarted: the process after is not the one before (a fault
	// killed it); before is then the first process's.
	Restarted bool `json:"restarted,omitempty"`
	// Settled is how long after the last session closed the figures were
	// taken.
	SettledS float64 `json:"settled_s"`
}

// AuditCheck compares one gateway's audit file with the bucket.
type AuditCheck struct {
	Gateway   string `json:"gateway"`
	File      int    `json:"in_file"`
	Bucket    int    `json:"in_bucket"`
	NotInS3   int    `json:"in_file_not_in_bucket"`
	NotInFile int    `json:"in_bucket_not_in_file"`
	Dupes     int    `json:"duplicates_in_bucket"`
	// OtherWriters are events in the file written by other programs (the
	// Slurm sync): not the gateway's, not shipped.
	OtherWriters int `json:"in_file_by_other_writers"`
	// Missing are the first events of the file not in the bucket.
	Missing []string `json:"missing_sample,omitempty"`
	// Dropped are the events the gateway counted as dropped (metrics), by
	// metric.
	Dropped map[string]float64 `json:"dropped_counted,omitempty"`
}

// Bucket is login latency in one interval.
type Bucket struct {
	At     time.Time `json:"t"`
	Count  int       `json:"count"`
	Failed int       `json:"failed"`
	P50    float64   `json:"p50_s"`
	P99    float64   `json:"p99_s"`
}

// Mark is a named span of the run.
type Mark struct {
	Name string    `json:"name"`
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Check is a goal and what was measured.
type Check struct {
	Name     string `json:"name"`
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// FaultResult is one fault injected under the load.
type FaultResult struct {
	Name string `json:"name"`
	Goal string `json:"goal"`
	// Start is when it was injected, End when it was taken away (the
	// same for a crash that is not undone).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// During is the load from Start until the system was back; its
	// failed logins and lost sessions are what the fault cost.
	During Phase `json:"during"`
	// RecoverS is how long after End the system was back (every node
	// healthy at every gateway, held sessions open again, logins
	// succeeding); see Measured for each fault's own timings.
	RecoverS float64 `json:"recover_s"`
	// Measured are the fault's own figures.
	Measured map[string]any `json:"measured"`
	// Counters are the gateways' failure counters that grew meanwhile
	// (refused connections, failed auths and backend logins, refused
	// gossip, dropped audit events), and Warnings the warnings and errors
	// they logged, by message: where the cost came from.
	Counters map[string]float64 `json:"gateway_counters,omitempty"`
	Warnings map[string]int     `json:"gateway_warnings,omitempty"`
	Met      bool               `json:"met"`
	Verdict  string             `json:"verdict"`
	Notes    []string           `json:"notes,omitempty"`
}

// summarize computes the phase figures for [from, to).
func summarize(rec *Recorder, smp *Sampler, from, to time.Time) Phase {
	p := Phase{From: from, To: to, Seconds: to.Sub(from).Seconds()}
	churn := rec.Logins(from, to, isChurn)
	p.Logins = loginStats(churn, p.Seconds)
	p.FailReasons = failReasons(churn)
	p.Nodes = map[string]int{}
	for _, l := range churn {
		if l.OK {
			p.Nodes[l.Node]++
		}
	}
	holds := rec.Logins(from, to, func(l Login) bool { return l.Kind == KindHold })
	p.HoldLogins = loginStats(holds, p.Seconds)
	for k, v := range failReasons(holds) {
		if p.FailReasons == nil {
			p.FailReasons = map[string]int{}
		}
		p.FailReasons["held: "+k] += v
	}
	ends := rec.Ends(from, to)
	p.SessionsEnded = len(ends)
	if len(ends) > 0 {
		p.EndReasons = map[string]int{}
		for _, e := range ends {
			p.EndReasons[e.Kind+" on "+e.Node+" via "+e.Gateway+": "+shortReason(e.Err)]++
		}
	}
	for _, t := range rec.Transfers(from, to) {
		p.Transfers.Count++
		switch {
		case t.Corrupt:
			p.Transfers.Corrupt++
		case t.Err != "":
			p.Transfers.Lost++
		default:
			p.Transfers.Bytes += 2 * int64(t.Bytes) // there and back
		}
	}
	byGW := map[string][]Sample{}
	p.HealthAge = map[string]Spread{}
	ages := map[string][]float64{}
	for _, s := range smp.Samples(from, to) {
		byGW[s.Gateway] = append(byGW[s.Gateway], s)
		worst := int64(0)
		for _, a := range s.HealthAgeMS {
			worst = max(worst, a)
		}
		ages[s.Gateway] = append(ages[s.Gateway], float64(worst))
	}
	for gw, a := range ages {
		p.HealthAge[gw] = spread(a)
	}
	for _, gw := range slices.Sorted(maps.Keys(byGW)) {
		var rss, gor, fds, th []float64
		for _, s := range byGW[gw] {
			rss = append(rss, float64(s.RSSKiB)/1024)
			gor = append(gor, float64(s.Goroutines))
			fds = append(fds, float64(s.FDs))
			th = append(th, float64(s.Threads))
		}
		p.Gateways = append(p.Gateways, GatewayStats{Gateway: gw, RSSMiB: spread(rss), Goroutines: spread(gor), FDs: spread(fds), Threads: spread(th)})
	}
	var l1, up []float64
	for _, m := range smp.Machine(from, to) {
		l1 = append(l1, m.Load1)
		up = append(up, float64(m.Held))
	}
	p.Load1, p.HeldUp = spread(l1), spread(up)
	return p
}

func loginStats(ls []Login, seconds float64) LoginStats {
	lat := latencies(ls)
	s := LoginStats{Count: len(ls), Failed: failed(ls), P50: percentile(lat, 50), P90: percentile(lat, 90), P99: percentile(lat, 99)}
	if len(lat) > 0 {
		s.Max = slices.Max(lat)
	}
	if seconds > 0 {
		s.PerSecond = float64(len(ls)) / seconds
	}
	for _, l := range ls {
		if l.FailedOver {
			s.FailedOver++
		}
	}
	return s
}

func failReasons(ls []Login) map[string]int {
	var out map[string]int
	for _, l := range ls {
		if l.OK {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		out[l.Method+" "+l.Stage+": "+shortReason(l.Err)]++
	}
	return out
}

// shortReason keeps an error's gist: no addresses, ports or session IDs,
// so that equal failures count together.
func shortReason(s string) string {
	f := strings.Fields(s)
	for i, w := range f {
		switch {
		case strings.Count(w, ".") == 3 && strings.ContainsAny(w, ":0123456789"):
			f[i] = "ADDR"
		case strings.HasPrefix(w, "(session"):
			f[i] = ""
		}
	}
	out := strings.Join(strings.Fields(strings.Join(f, " ")), " ")
	if len(out) > 160 {
		out = out[:160] + "…"
	}
	return out
}

// series is login latency per interval over [from, to).
func series(rec *Recorder, from, to time.Time, every time.Duration) []Bucket {
	var out []Bucket
	for t := from; t.Before(to); t = t.Add(every) {
		ls := rec.Logins(t, t.Add(every), isChurn)
		lat := latencies(ls)
		out = append(out, Bucket{At: t, Count: len(ls), Failed: failed(ls), P50: percentile(lat, 50), P99: percentile(lat, 99)})
	}
	return out
}

func (r *Result) check(name, goal string, met bool, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Goal: goal, Measured: fmt.Sprintf(format, args...), Met: met})
}

// Failed lists the checks that were not met.
func (r *Result) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Met {
			out = append(out, c)
		}
	}
	return out
}

func sortedKeys[M ~map[K]V, K cmp.Ordered, V any](m M) []K { return slices.Sorted(maps.Keys(m)) }

package soak

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WriteFiles writes the result as DIR/NAME.json, a summary NAME.md, and
// the plots NAME-latency.svg (login latency over the run) and
// NAME-memory.svg (each gateway's resident memory and goroutines).
func WriteFiles(res *Result, dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{
		name + ".json":        append(b, '\n'),
		name + ".md":          []byte(Markdown(res)),
		name + "-latency.svg": []byte(latencyPlot(res)),
		name + "-memory.svg":  []byte(memoryPlot(res)),
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Markdown is the run's summary: the conditions, the checks, the steady
// load and each fault.
func Markdown(r *Result) string {
	var b strings.Builder
	c := r.Conditions
	fmt.Fprintf(&b, "# Soak %s (commit %s)\n\n", r.Date, r.Commit)
	fmt.Fprintf(&b, "Machine: %d CPUs, %d MiB, kernel %s, %s, %s; 1-minute load average %.1f before the run. ", r.Machine.CPUs, r.Machine.MemMiB,
		r.Machine.Kernel, r.Machine.OpenSSH, r.Machine.GoVersion, r.Machine.LoadBefore)
	fmt.Fprintf(&b, "Load: %d held sessions (%d streaming, %d forwarding, the rest idle terminals) of %d users through %d gateways to %d nodes; new logins at %.1f/s (%.0f%% by password); steady %.0f s. Setup took %.0f s.\n\n",
		c.Sessions, c.Streaming, c.Forwarding, c.Users, c.Gateways, c.Nodes, r.Rate, 100*c.PasswordShare, c.SteadySeconds, r.SetupSeconds)
	if len(r.RateSearch) > 0 {
		b.WriteString("## Rate search\n\n| offered/s | done | failed | shed | in flight | p50 s | p99 s | load1 | held |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range r.RateSearch {
			held := "yes"
			if !s.Passed {
				held = "no: " + s.Why
			}
			fmt.Fprintf(&b, "| %.1f | %d | %d | %d | %d | %.3f | %.3f | %.1f | %s |\n", s.Offered, s.Done, s.Failed, s.Shed, s.InFlight, s.P50, s.P99, s.Load1, held)
		}
		b.WriteString("\n")
	}
	b.WriteString("## Checks\n\n| check | goal | measured | met |\n|---|---|---|---|\n")
	for _, ch := range r.Checks {
		met := "yes"
		if !ch.Met {
			met = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", ch.Name, ch.Goal, strings.ReplaceAll(ch.Measured, "|", "/"), met)
	}
	s := r.Steady
	fmt.Fprintf(&b, "\n## Steady load (%.0f s)\n\n", s.Seconds)
	fmt.Fprintf(&b, "New logins: %d (%.1f/s), %d failed; p50 %.3f s, p90 %.3f s, p99 %.3f s, max %.3f s. Held-session logins: %d, %d failed. Sessions ended: %d. Round trips: %d (%d MiB), %d corrupt, %d lost. Load average %.1f (median), %.1f (max).\n\n",
		s.Logins.Count, s.Logins.PerSecond, s.Logins.Failed, s.Logins.P50, s.Logins.P90, s.Logins.P99, s.Logins.Max, s.HoldLogins.Count,
		s.HoldLogins.Failed, s.SessionsEnded, s.Transfers.Count, s.Transfers.Bytes>>20, s.Transfers.Corrupt, s.Transfers.Lost, s.Load1.Median, s.Load1.Max)
	b.WriteString("| gateway | RSS MiB first/max/last | goroutines first/max/last | fds first/max/last | health age ms median/p99/max |\n|---|---|---|---|---|\n")
	for _, g := range s.Gateways {
		h := s.HealthAge[g.Gateway]
		fmt.Fprintf(&b, "| %s | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f |\n", g.Gateway,
			g.RSSMiB.First, g.RSSMiB.Max, g.RSSMiB.Last, g.Goroutines.First, g.Goroutines.Max, g.Goroutines.Last,
			g.FDs.First, g.FDs.Max, g.FDs.Last, h.Median, h.P99, h.Max)
	}
	if len(r.Faults) > 0 {
		b.WriteString("\n## Faults\n\n| fault | goal | failed logins | sessions lost | back after | verdict |\n|---|---|---|---|---|---|\n")
		for _, f := range r.Faults {
			d := f.During
			fmt.Fprintf(&b, "| %s | %s | %d of %d (+%d of %d held) | %d | %.1f s | %s |\n", f.Name, f.Goal, d.Logins.Failed, d.Logins.Count,
				d.HoldLogins.Failed, d.HoldLogins.Count, d.SessionsEnded, f.RecoverS, strings.ReplaceAll(f.Verdict, "|", "/"))
		}
	}
	b.WriteString("\n## After the load\n\n| gateway | goroutines before/peak/after | fds before/peak/after | RSS MiB before/peak/after | restarted |\n|---|---|---|---|---|\n")
	for _, g := range r.After {
		fmt.Fprintf(&b, "| %s | %d / %d / %d | %d / %d / %d | %.0f / %.0f / %.0f | %v |\n", g.Gateway, g.GoroutinesBefore, g.GoroutinesPeak,
			g.GoroutinesAfter, g.FDsBefore, g.FDsPeak, g.FDsAfter, g.RSSBeforeMiB, g.RSSPeakMiB, g.RSSAfterMiB, g.Restarted)
	}
	if len(r.Audit) > 0 {
		b.WriteString("\n## Audit trail\n\n| gateway | in file | in bucket | file not in bucket | bucket not in file | duplicates | counted dropped |\n|---|---|---|---|---|---|---|\n")
		for _, a := range r.Audit {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %v |\n", a.Gateway, a.File, a.Bucket, a.NotInS3, a.NotInFile, a.Dupes, a.Dropped)
		}
	}
	return b.String()
}

// A plotted line: (seconds since start, value) points.
type plotLine struct {
	name, color string
	pts         [][2]float64
	dash        string // SVG stroke-dasharray; "" solid
}

var palette = []string{"#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"}

func latencyPlot(r *Result) string {
	p50 := plotLine{name: "p50", color: palette[0]}
	p99 := plotLine{name: "p99", color: palette[1]}
	fails := plotLine{name: "failed logins (scaled: max at the top)", color: palette[3], dash: "4 3"}
	maxFail := 1.0
	for _, b := range r.Latency {
		maxFail = max(maxFail, float64(b.Failed))
	}
	for _, b := range r.Latency {
		x := b.At.Sub(r.Start).Seconds()
		if b.Count > 0 {
			p50.pts = append(p50.pts, [2]float64{x, b.P50})
			p99.pts = append(p99.pts, [2]float64{x, b.P99})
		}
	}
	yMax := 0.5
	for _, l := range []plotLine{p50, p99} {
		for _, pt := range l.pts {
			yMax = max(yMax, pt[1])
		}
	}
	yMax = niceCeil(yMax)
	for _, b := range r.Latency {
		fails.pts = append(fails.pts, [2]float64{b.At.Sub(r.Start).Seconds(), float64(b.Failed) / maxFail * yMax})
	}
	sub := fmt.Sprintf("%s — %d held sessions, new logins at %.1f/s; shaded: phases and faults; failed logins scaled to the axis (max %.0f per 15 s)",
		r.Date, r.Conditions.Sessions, r.Rate, maxFail)
	return chart("Login latency over the soak (s, per 15 s: p50 and p99 of new logins)", sub, "s", []plotLine{p50, p99, fails}, r, yMax)
}

func memoryPlot(r *Result) string {
	var lines []plotLine
	byGW := map[string][]Sample{}
	for _, s := range r.Samples {
		byGW[s.Gateway] = append(byGW[s.Gateway], s)
	}
	yMax := 10.0
	names := sortedKeys(byGW)
	for i, gw := range names {
		l := plotLine{name: gw + " RSS MiB", color: palette[i%len(palette)]}
		hp := plotLine{name: gw + " heap in use MiB", color: palette[i%len(palette)], dash: "1 3"}
		g := plotLine{name: gw + " goroutines / 100", color: palette[i%len(palette)], dash: "6 3"}
		for _, s := range byGW[gw] {
			x := s.At.Sub(r.Start).Seconds()
			l.pts = append(l.pts, [2]float64{x, float64(s.RSSKiB) / 1024})
			hp.pts = append(hp.pts, [2]float64{x, float64(s.HeapInuseKiB) / 1024})
			g.pts = append(g.pts, [2]float64{x, float64(s.Goroutines) / 100})
			yMax = max(yMax, float64(s.RSSKiB)/1024, float64(s.Goroutines)/100)
		}
		lines = append(lines, l, hp, g)
	}
	sub := fmt.Sprintf("%s — resident memory (solid), Go heap in use (dotted) and goroutines/100 (dashed) of each gateway process", r.Date)
	return chart("Gateway memory and goroutines over the soak", sub, "MiB", lines, r, niceCeil(yMax))
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*e {
			return m * e
		}
	}
	return 10 * e
}

// chart draws lines over the run's time axis with its marks shaded.
func chart(title, sub, unit string, lines []plotLine, r *Result, yMax float64) string {
	const (
		w, h                     = 1000, 420
		left, right, top, bottom = 60, 20, 60, 90
		plotW, plotH             = w - left - right, h - top - bottom
	)
	end := r.Start
	for _, l := range lines {
		for _, p := range l.pts {
			end = maxTime(end, r.Start.Add(time.Duration(p[0]*float64(time.Second))))
		}
	}
	for _, m := range r.Marks {
		end = maxTime(end, m.To)
	}
	xMax := math.Max(end.Sub(r.Start).Seconds(), 1)
	x := func(s float64) float64 { return left + s/xMax*plotW }
	y := func(v float64) float64 { return top + plotH - math.Min(v, yMax)/yMax*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="38" fill="#555" font-size="11">%s</text>`+"\n", left, html.EscapeString(sub))
	for i, m := range r.Marks {
		x0, x1 := x(m.From.Sub(r.Start).Seconds()), x(m.To.Sub(r.Start).Seconds())
		fill := "#f0f0f0"
		if i%2 == 1 {
			fill = "#e4e9f2"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, top, math.Max(x1-x0, 1), plotH, fill)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" fill="#444" transform="rotate(-90 %.1f %d)" text-anchor="end">%s</text>`+"\n",
			x0+10, top+4, x0+10, top+4, html.EscapeString(m.Name))
	}
	for i := 0; i <= 5; i++ {
		v := yMax * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, w-right, y(v), y(v), left-6, y(v)+4, trimFloat(v))
	}
	fmt.Fprintf(&b, `<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>`+"\n", top+plotH/2, top+plotH/2, unit)
	step := niceCeil(xMax / 10)
	for s := 0.0; s <= xMax; s += step {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#999"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			x(s), x(s), top+plotH, top+plotH+4, x(s), top+plotH+18, fmtMinutes(s))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">time since start (min:s)</text>`+"\n", left+plotW/2, top+plotH+34)
	for _, l := range lines {
		if len(l.pts) == 0 {
			continue
		}
		var pts []string
		for _, p := range l.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p[0]), y(p[1])))
		}
		dash := ""
		if l.dash != "" {
			dash = ` stroke-dasharray="` + l.dash + `"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`+"\n", l.color, dash, strings.Join(pts, " "))
	}
	lx, ly := left, h-34
	for _, l := range lines {
		dash := ""
		if l.dash != "" {
			dash = ` stroke-dasharray="` + l.dash + `"`
		}
		width := 40 + 7*len(l.name)
		if lx+width > w-right {
			lx, ly = left, ly+18
		}
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`+"\n",
			lx, lx+20, ly-4, ly-4, l.color, dash, lx+26, ly, html.EscapeString(l.name))
		lx += width
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func fmtMinutes(s float64) string {
	return fmt.Sprintf("%d:%02d", int(s)/60, int(s)%60)
}

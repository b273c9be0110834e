package usage

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
)

// Chart limits: bars beyond them are summed into "other".
const (
	chartMaxBars   = 15
	chartMaxSeries = 7
)

// palette is colour-blind safe (Okabe–Ito), grey last for "other".
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"}

// WriteSVG draws the report as a standalone SVG (no script, no external
// resources), readable in any browser: cost per key as horizontal bars
// (with the actual bill: the estimate and, under it, the actual, and the
// unallocated part of the bill in grey), then GPU-hours per day stacked
// by key.
func WriteSVG(w io.Writer, r Report) error {
	const width, left, right = 960, 200, 120
	var b bytes.Buffer
	rows := slices.Clone(r.Rows)
	if len(rows) > chartMaxBars {
		other := Row{Key: "other"}
		for _, x := range rows[chartMaxBars-1:] {
			other.Cost += x.Cost
			other.GPUHours += x.GPUHours
			if x.Actual != nil {
				a := *x.Actual
				if other.Actual != nil {
					a += *other.Actual
				}
				other.Actual = &a
			}
		}
		rows = append(rows[:chartMaxBars-1], other)
	}
	// Unused capacity is a cost too: show it beside the groups, in grey;
	// so is the part of the bill nobody was charged.
	idle, unalloc := -1, -1
	if r.IdleCost > 0 {
		idle = len(rows)
		rows = append(rows, Row{Key: "(idle capacity)", Cost: r.IdleCost, GPUHours: r.IdleGPUHours})
	}
	if a := r.Actual; a != nil && a.unallocated() != 0 {
		unalloc = len(rows)
		u := a.unallocated()
		rows = append(rows, Row{Key: "(unallocated bill)", Actual: &u})
	}
	barH, gap := 22, 8
	costTop := 70
	costH := max(1, len(rows))*(barH+gap) + 20
	dayTop := costTop + costH + 70
	dayH := 260
	height := dayTop + dayH + 90

	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Arial, sans-serif" font-size="13">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="20" y="30" font-size="18" font-weight="bold">%s</text>`+"\n",
		esc(fmt.Sprintf("Cost per %s, %s – %s (%s)", r.By, r.From.Format("2006-01-02"), r.To.Format("2006-01-02"), r.Currency)))
	sub := fmt.Sprintf("total %.2f %s; %.1f GPU-hours allocated, %.1f GPU-hours idle of %d GPUs' capacity", r.Total.Cost, r.Currency, r.AllocatedGPUHours, r.IdleGPUHours, r.CapacityGPUs)
	if a := r.Actual; a != nil {
		sub = fmt.Sprintf("estimate %.2f %s; actual bill %s %s (Cost Explorer, %s – %s, lags about a day)", r.Total.Cost, r.Currency, a.Total, r.Currency,
			a.From.Format("2006-01-02"), a.To.Format("2006-01-02"))
		fmt.Fprintf(&b, `<rect x="%d" y="16" width="14" height="10" fill="%s"/><text x="%d" y="26" font-size="12">estimate</text>`+"\n", width-220, palette[0], width-202)
		fmt.Fprintf(&b, `<rect x="%d" y="16" width="14" height="10" fill="%s"/><text x="%d" y="26" font-size="12">actual</text>`+"\n", width-130, palette[1], width-112)
	}
	fmt.Fprintf(&b, `<text x="20" y="52" fill="#555555">%s</text>`+"\n", esc(sub))

	// Cost per key: the estimate, and under it the actual when there is one.
	maxCost := 0.0
	for _, x := range rows {
		maxCost = math.Max(maxCost, x.Cost)
		if x.Actual != nil {
			maxCost = math.Max(maxCost, x.Actual.Float())
		}
	}
	plotW := float64(width - left - right)
	if len(rows) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555555">no usage in this window</text>`+"\n", left, costTop+16)
	}
	bar := func(y, h int, v float64, colour, title string) {
		bw := 0.0
		if maxCost > 0 && v > 0 {
			bw = plotW * v / maxCost
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
			left, y, math.Max(bw, 1), h, colour, esc(title))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="%d">%s</text>`+"\n", float64(left)+math.Max(bw, 1)+6, y+h-2, min(13, h), esc(fmt.Sprintf("%.2f", v)))
	}
	for i, x := range rows {
		y := costTop + i*(barH+gap)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-10, y+barH-6, esc(clip(x.Key, 26)))
		switch {
		case r.Actual == nil:
			bar(y, barH, x.Cost, barColour(i == idle), fmt.Sprintf("%s: %.2f %s, %.2f GPU-hours", x.Key, x.Cost, r.Currency, x.GPUHours))
		case i == unalloc:
			bar(y+barH/2, barH/2, x.Actual.Float(), barColour(true), fmt.Sprintf("%s: %s %s of the bill charged to no one (see the notes)", x.Key, x.Actual, r.Currency))
		default:
			bar(y, barH/2, x.Cost, barColour(i == idle), fmt.Sprintf("%s: estimate %.2f %s, %.2f GPU-hours", x.Key, x.Cost, r.Currency, x.GPUHours))
			if x.Actual != nil {
				bar(y+barH/2, barH/2, x.Actual.Float(), palette[1], fmt.Sprintf("%s: actual %s %s", x.Key, x.Actual, r.Currency))
			}
		}
	}

	// GPU-hours per day, stacked by the keys with most GPU-hours.
	series := seriesOf(r)
	fmt.Fprintf(&b, `<text x="20" y="%d" font-size="18" font-weight="bold">%s</text>`+"\n", dayTop-30,
		esc(fmt.Sprintf("GPU-hours per day by %s", r.By)))
	maxDay := 0.0
	for _, d := range r.Days {
		sum := 0.0
		for _, v := range d.GPUHours {
			sum += v
		}
		maxDay = math.Max(maxDay, sum)
	}
	top := niceCeil(maxDay)
	plotL, plotR := 70, width-right-60
	base := dayTop + dayH
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333"/>`+"\n", plotL, base, plotR, base)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333"/>`+"\n", plotL, dayTop, plotL, base)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := float64(base) - float64(dayH)*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/>`+"\n", plotL+1, y, plotR, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" font-size="11">%s</text>`+"\n", plotL-6, y+4, esc(short(v)))
	}
	n := max(1, len(r.Days))
	slot := float64(plotR-plotL) / float64(n)
	labelEvery := max(1, n/15)
	for i, d := range r.Days {
		x := float64(plotL) + slot*float64(i)
		y := float64(base)
		for si, s := range series {
			v := 0.0
			if s.other {
				for k, h := range d.GPUHours {
					if !s.covers[k] {
						v += h
					}
				}
			} else {
				v = d.GPUHours[s.key]
			}
			if v <= 0 || top <= 0 {
				continue
			}
			h := float64(dayH) * v / top
			y -= h
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
				x+slot*0.1, y, math.Max(slot*0.8, 1), h, palette[si%len(palette)],
				esc(fmt.Sprintf("%s %s: %.2f GPU-hours", d.Day.Format("2006-01-02"), s.key, v)))
		}
		if i%labelEvery == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="11">%s</text>`+"\n",
				x+slot/2, base+16, d.Day.Format("01-02"))
		}
	}
	for si, s := range series {
		y := dayTop + si*20
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="14" fill="%s"/>`+"\n", plotR+20, y, palette[si%len(palette)])
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12">%s</text>`+"\n", plotR+40, y+12, esc(clip(s.key, 14)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#555555">days in UTC; a job's GPU-hours go to the days it ran</text>`+"\n", plotL, base+40)
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func barColour(idle bool) string {
	if idle {
		return palette[len(palette)-1]
	}
	return palette[0]
}

type serie struct {
	key    string
	other  bool
	covers map[string]bool // for "other": the keys drawn on their own
}

// seriesOf picks the keys with most GPU-hours, and "other" for the rest.
func seriesOf(r Report) []serie {
	tot := map[string]float64{}
	for _, d := range r.Days {
		for k, v := range d.GPUHours {
			tot[k] += v
		}
	}
	keys := sortedKeys(tot)
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(tot[b], tot[a]) })
	var out []serie
	covers := map[string]bool{}
	for i, k := range keys {
		if i == chartMaxSeries && len(keys) > chartMaxSeries {
			out = append(out, serie{key: "other", other: true, covers: covers})
			break
		}
		out = append(out, serie{key: k})
		covers[k] = true
	}
	return out
}

// niceCeil rounds v up to 1, 2 or 5 × a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

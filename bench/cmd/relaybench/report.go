package main

import (
	"fmt"
	"html"
	"slices"
	"strconv"
	"strings"
)

type loadAvg struct {
	At  string  `json:"at"`
	L1  float64 `json:"load1"`
	L5  float64 `json:"load5"`
	L15 float64 `json:"load15"`
}

type phaseLoad struct {
	Name      string  `json:"name"`
	Seconds   float64 `json:"seconds"`
	LoadStart loadAvg `json:"load_start"`
	LoadEnd   loadAvg `json:"load_end"`
}

// loadWait is the wait for an idle machine before the measurements
// (--wait-load).
type loadWait struct {
	Limit      float64 `json:"load1_below"`
	MaxSeconds float64 `json:"max_seconds"`
	Reached    bool    `json:"reached"`
	Seconds    float64 `json:"seconds"`
	Start      loadAvg `json:"load_start"`
	End        loadAvg `json:"load_end"`
}

// transferRow is one cipher, direction and path.
type transferRow struct {
	Cipher    string    `json:"cipher"`
	Direction string    `json:"direction"`
	Path      string    `json:"path"`
	MiBs      []float64 `json:"mib_s"`
	Median    float64   `json:"median_mib_s"`
	// The 1-minute load average as each run started.
	Load1 []float64 `json:"load1_at_runs"`
	// Same-run ratios of the medians: to direct OpenSSH, to socat (the
	// floor a proxy has), to the peer (sshpiper).
	Ratio      float64 `json:"ratio_vs_direct"`
	RatioSocat float64 `json:"ratio_vs_socat"`
	RatioPeer  float64 `json:"ratio_vs_sshpiper,omitempty"`
	// CPU seconds per GiB moved, averaged over the runs: the proxy in the
	// middle (gateway, sshpiper, socat with its per-connection children),
	// the node's sshd with the command it ran, and the ssh client.
	ProxyCPU float64 `json:"proxy_cpu_s_per_gib,omitempty"`
	// Per run, and their median (one slow run, e.g. the machine's load
	// spiking, weighs on the mean).
	ProxyCPURuns   []float64 `json:"proxy_cpu_s_per_gib_runs,omitempty"`
	ProxyCPUMedian float64   `json:"proxy_cpu_s_per_gib_median,omitempty"`
	// The proxy's CPU per GiB over sshpiper's, same cipher and direction.
	CPURatioPeer float64 `json:"proxy_cpu_vs_sshpiper,omitempty"`
	SSHDCPU      float64 `json:"sshd_cpu_s_per_gib"`
	ClientCPU    float64 `json:"client_cpu_s_per_gib"`
	// A Go proxy's read and write syscalls per MiB moved (all its
	// sockets; both legs).
	ProxyReads  float64 `json:"proxy_read_syscalls_per_mib,omitempty"`
	ProxyWrites float64 `json:"proxy_write_syscalls_per_mib,omitempty"`
}

type latencyRow struct {
	Path     string  `json:"path"`
	Runs     int     `json:"runs"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	RatioP50 float64 `json:"ratio_p50_vs_direct"`
	RatioP99 float64 `json:"ratio_p99_vs_direct"`
}

type rateRow struct {
	Path       string  `json:"path"`
	Workers    int     `json:"workers"`
	Seconds    float64 `json:"seconds"`
	Sessions   int64   `json:"sessions"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	PerSecond  float64 `json:"sessions_per_s"`
	Ratio      float64 `json:"ratio_vs_direct"`
	// CPU milliseconds per new session: the proxy (gateway, sshpiper,
	// socat) and the node's sshd.
	ProxyCPUms float64 `json:"proxy_cpu_ms_per_session,omitempty"`
	SSHDCPUms  float64 `json:"sshd_cpu_ms_per_session"`
}

type idleRow struct {
	Sessions int    `json:"sessions"`
	Skipped  string `json:"skipped,omitempty"`
	// Gateway resident memory growth per session (includes garbage not
	// yet collected), live Go heap plus goroutine stacks after forced GCs
	// per session, goroutines per session; and the machine's
	// MemAvailable drop per session (gateway, sshd, the bench's clients).
	RSSKiB      float64 `json:"gateway_rss_kib_per_session"`
	LiveKiB     float64 `json:"gateway_live_kib_per_session"`
	Goroutines  float64 `json:"gateway_goroutines_per_session"`
	MachineKiB  float64 `json:"machine_kib_per_session"`
	OpenSeconds float64 `json:"open_seconds"`
	LoadStart   loadAvg `json:"load_start"`
	LoadEnd     loadAvg `json:"load_end"`
}

type goal struct {
	Goal  string  `json:"goal"`
	Value float64 `json:"value"`
	Aim   string  `json:"aim"`
	Met   bool    `json:"met"`
}

type result struct {
	Date      string `json:"date"`
	Host      string `json:"host"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	OpenSSH   string `json:"openssh"`
	Kex       string `json:"kex"`
	Quick     bool   `json:"quick"`
	// Pinned: the client and sshd on one CPU, each proxy on the other
	// (pin.go); Pinning says which.
	Pinned    bool          `json:"pinned"`
	Pinning   string        `json:"pinning,omitempty"`
	Peer      string        `json:"peer,omitempty"`
	Paths     []string      `json:"paths"`
	SizeMiB   int           `json:"size_mib"`
	Reps      int           `json:"reps"`
	LatencyN  int           `json:"latency_runs"`
	Wait      *loadWait     `json:"wait_for_load,omitempty"`
	LoadStart loadAvg       `json:"load_start"`
	LoadEnd   loadAvg       `json:"load_end"`
	Phases    []phaseLoad   `json:"phases"`
	Transfers []transferRow `json:"transfers"`
	Latency   []latencyRow  `json:"latency"`
	Rate      []rateRow     `json:"new_sessions"`
	Idle      []idleRow     `json:"idle"`
	Profiles  []string      `json:"profiles,omitempty"`
	Goals     []goal        `json:"goals"`
}

func (r *result) row(cipher, dir, path string) *transferRow {
	for i := range r.Transfers {
		t := &r.Transfers[i]
		if t.Cipher == cipher && t.Direction == dir && t.Path == path {
			return t
		}
	}
	return nil
}

// goals are issue 17's aims (and the ones of issue 11 that were met),
// evaluated on this run: same-run ratios for throughput and CPU.
func goals(r *result) []goal {
	var g []goal
	add := func(name, aim string, v float64, met bool) { g = append(g, goal{name, v, aim, met}) }
	for _, c := range ciphers {
		for _, d := range []string{"up", "down"} {
			t := r.row(c.name, d, pathFrontdoor)
			if t == nil {
				continue
			}
			add(fmt.Sprintf("throughput ×socat, %s, %s", c.name, d), "≥ 0.95", t.RatioSocat, t.RatioSocat >= 0.95)
			if t.RatioPeer > 0 {
				add(fmt.Sprintf("throughput ×sshpiper, %s, %s", c.name, d), "≥ 1.15", t.RatioPeer, t.RatioPeer >= 1.15)
				add(fmt.Sprintf("proxy CPU per GiB ×sshpiper, %s, %s", c.name, d), "≤ 0.75", t.CPURatioPeer, t.CPURatioPeer <= 0.75)
			}
		}
	}
	for _, i := range r.Idle {
		if i.Skipped != "" {
			continue
		}
		add(fmt.Sprintf("KiB per idle session (live), %d sessions", i.Sessions), "≤ 64", i.LiveKiB, i.LiveKiB <= 64)
		add(fmt.Sprintf("goroutines per idle session, %d sessions", i.Sessions), "≤ 6", i.Goroutines, i.Goroutines <= 6.05)
	}
	for _, l := range r.Latency {
		if l.Path == pathFrontdoor {
			add("`ssh HOST true` p50 ×direct", "≤ 1.1", l.RatioP50, l.RatioP50 <= 1.1)
		}
	}
	// New sessions per second are bound by the node's sshd while the
	// gateway spends a small part of what sshd spends on each.
	for _, s := range r.Rate {
		if s.Path == pathFrontdoor && s.SSHDCPUms > 0 {
			v := s.ProxyCPUms / s.SSHDCPUms
			add("new sessions: gateway CPU ×node sshd CPU per session", "≤ 0.25", v, v <= 0.25)
		}
	}
	return g
}

func markdown(r *result) string {
	var b strings.Builder
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	pin := "unpinned: every process on both CPUs"
	if r.Pinned {
		pin = "pinned: " + r.Pinning
	}
	fmt.Fprintf(&b, "### Relay: %s (%s, %s run, %d CPUs, kex %s, %s)\n\n", strings.Join(r.Paths, " vs "), r.Date, mode, r.CPUs, r.Kex, pin)
	fmt.Fprintf(&b, "Load average at start %.2f / %.2f / %.2f, at end %.2f / %.2f / %.2f (1/5/15 min). %s; %s.",
		r.LoadStart.L1, r.LoadStart.L5, r.LoadStart.L15, r.LoadEnd.L1, r.LoadEnd.L5, r.LoadEnd.L15, r.OpenSSH, r.GoVersion)
	if r.Peer != "" {
		fmt.Fprintf(&b, " Peer: %s.", r.Peer)
	}
	if w := r.Wait; w != nil {
		if w.Reached {
			fmt.Fprintf(&b, " Waited %.0f s for the 1-minute load to fall below %.2f (%.2f → %.2f).", w.Seconds, w.Limit, w.Start.L1, w.End.L1)
		} else {
			fmt.Fprintf(&b, " The 1-minute load stayed at %.2f or more for the %.0f s waited (%.2f → %.2f).", w.Limit, w.Seconds, w.Start.L1, w.End.L1)
		}
	}
	b.WriteString("\n\n")
	if len(r.Transfers) > 0 {
		fmt.Fprintf(&b, "Throughput, %d MiB per transfer, median of %d, paths interleaved:\n\n", r.SizeMiB, r.Reps)
		fmt.Fprintf(&b, "| cipher | dir | path | MiB/s (runs) | ×direct | ×socat | ×sshpiper | proxy CPU s/GiB mean (median) | CPU ×sshpiper | proxy syscalls/MiB (read+write) | sshd CPU s/GiB | client CPU s/GiB | load (1 min) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, t := range r.Transfers {
			sys := ""
			if t.ProxyReads+t.ProxyWrites > 0 {
				sys = fmt.Sprintf("%.0f + %.0f", t.ProxyReads, t.ProxyWrites)
			}
			pcpu := blank(t.ProxyCPU)
			if t.ProxyCPUMedian > 0 {
				pcpu += fmt.Sprintf(" (%.2f)", t.ProxyCPUMedian)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.0f (%s) | %.2f | %.2f | %s | %s | %s | %s | %.2f | %.2f | %s |\n", t.Cipher, t.Direction, t.Path, t.Median, fmtList(t.MiBs),
				t.Ratio, t.RatioSocat, blank(t.RatioPeer), pcpu, blank(t.CPURatioPeer), sys, t.SSHDCPU, t.ClientCPU, fmtLoads(t.Load1))
		}
		b.WriteString("\n")
	}
	if r.Peer != "" && len(r.Transfers) > 0 {
		b.WriteString(summary(r))
	}
	if len(r.Latency) > 0 {
		fmt.Fprintf(&b, "`ssh HOST true` (OpenSSH client, default cipher), %d runs per path, interleaved:\n\n| path | p50 ms | p99 ms | p50 ×direct | p99 ×direct |\n|---|---|---|---|---|\n", r.LatencyN)
		for _, l := range r.Latency {
			fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.2f | %.2f |\n", l.Path, l.P50, l.P99, l.RatioP50, l.RatioP99)
		}
		b.WriteString("\n")
	}
	if len(r.Rate) > 0 {
		fmt.Fprintf(&b, "New sessions per second (Go client: login, `true`, close; %d concurrent):\n\n| path | sessions/s | ×direct | errors | proxy CPU ms/session | sshd CPU ms/session |\n|---|---|---|---|---|---|\n", r.Rate[0].Workers)
		for _, s := range r.Rate {
			fmt.Fprintf(&b, "| %s | %.1f | %.2f | %d | %s | %.1f |\n", s.Path, s.PerSecond, s.Ratio, s.Errors, blank(s.ProxyCPUms), s.SSHDCPUms)
		}
		b.WriteString("\n")
	}
	if len(r.Idle) > 0 {
		fmt.Fprintf(&b, "Idle sessions through the gateway (one session channel each, running `cat` on its idle stdin):\n\n| sessions | gateway live KiB/session | gateway RSS KiB/session | goroutines/session | machine KiB/session | load start→end |\n|---|---|---|---|---|---|\n")
		for _, i := range r.Idle {
			if i.Skipped != "" {
				fmt.Fprintf(&b, "| %d | skipped: %s | | | | |\n", i.Sessions, i.Skipped)
				continue
			}
			fmt.Fprintf(&b, "| %d | %.1f | %.1f | %.1f | %.0f | %.1f→%.1f |\n", i.Sessions, i.LiveKiB, i.RSSKiB, i.Goroutines, i.MachineKiB, i.LoadStart.L1, i.LoadEnd.L1)
		}
		b.WriteString("\n")
	}
	if len(r.Goals) > 0 {
		fmt.Fprintf(&b, "Goals (issue 17):\n\n| goal | this run | aim | met |\n|---|---|---|---|\n")
		for _, g := range r.Goals {
			met := "no"
			if g.Met {
				met = "yes"
			}
			fmt.Fprintf(&b, "| %s | %.2f | %s | %s |\n", g.Goal, g.Value, g.Aim, met)
		}
		b.WriteString("\n")
	}
	if len(r.Phases) > 0 {
		fmt.Fprintf(&b, "Phases: ")
		var ps []string
		for _, p := range r.Phases {
			ps = append(ps, fmt.Sprintf("%s %.0f s (load %.1f→%.1f)", p.Name, p.Seconds, p.LoadStart.L1, p.LoadEnd.L1))
		}
		b.WriteString(strings.Join(ps, ", ") + ".\n")
	}
	return b.String()
}

// summary is issue 17's table, one row per cipher: throughput of each
// path as a ratio to direct OpenSSH, up / down, and the CPU seconds per
// GiB of frontdoor and sshpiper, up and down; then the same-run ratios
// the goals are about.
func summary(r *result) string {
	var b strings.Builder
	run := "unpinned"
	if r.Pinned {
		run = "pinned"
	}
	b.WriteString("| run | socat up / down | frontdoor up / down | sshpiper up / down | CPU s/GiB frontdoor / sshpiper, up | CPU s/GiB frontdoor / sshpiper, down |\n|---|---|---|---|---|---|\n")
	var ratios strings.Builder
	ratios.WriteString("| run | frontdoor ×socat up / down | frontdoor ×sshpiper up / down | frontdoor CPU ×sshpiper up / down |\n|---|---|---|---|\n")
	for _, c := range ciphers {
		row := func(p, d string) *transferRow {
			if t := r.row(c.name, d, p); t != nil {
				return t
			}
			return &transferRow{}
		}
		name := strings.Fields(c.name)[0]
		if c.flag == "" {
			name = strings.Trim(strings.Fields(c.name)[1], "()") + " (default)"
		}
		fmt.Fprintf(&b, "| %s, %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f |\n", name, run,
			row(pathSocat, "up").Ratio, row(pathSocat, "down").Ratio,
			row(pathFrontdoor, "up").Ratio, row(pathFrontdoor, "down").Ratio,
			row(pathPeer, "up").Ratio, row(pathPeer, "down").Ratio,
			row(pathFrontdoor, "up").ProxyCPU, row(pathPeer, "up").ProxyCPU,
			row(pathFrontdoor, "down").ProxyCPU, row(pathPeer, "down").ProxyCPU)
		fmt.Fprintf(&ratios, "| %s, %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f |\n", name, run,
			row(pathFrontdoor, "up").RatioSocat, row(pathFrontdoor, "down").RatioSocat,
			row(pathFrontdoor, "up").RatioPeer, row(pathFrontdoor, "down").RatioPeer,
			row(pathFrontdoor, "up").CPURatioPeer, row(pathFrontdoor, "down").CPURatioPeer)
	}
	return "Throughput as a ratio to direct OpenSSH (issue 17's table):\n\n" + b.String() + "\nSame-run ratios (aims: ≥ 0.95 ×socat, ≥ 1.15 ×sshpiper, CPU ≤ 0.75 ×sshpiper):\n\n" + ratios.String() + "\n"
}

func fmtLoads(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strings.Join(s, " ")
}

func blank(v float64) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", v)
}

// plot is a grouped bar chart: median MiB/s per cipher and direction, one
// bar per path, with the ratio to direct above each bar.
func plot(r *result) string {
	type group struct{ cipher, dir string }
	var groups []group
	for _, c := range ciphers {
		for _, d := range []string{"up", "down"} {
			if r.row(c.name, d, pathDirect) != nil {
				groups = append(groups, group{c.name, d})
			}
		}
	}
	maxV := 1.0
	for _, t := range r.Transfers {
		maxV = max(maxV, t.Median)
	}
	maxV = float64(int(maxV/50)+1) * 50
	const (
		h              = 380
		left, right    = 60, 20
		top, bottom    = 50, 80
		barW, barGap   = 40, 6
		plotH          = h - top - bottom
		groupsInnerPad = 30
	)
	w := left + right + 40 + len(groups)*(len(paths)*(barW+barGap)+groupsInnerPad)
	colors := map[string]string{pathDirect: "#4c72b0", pathFrontdoor: "#dd8452", pathSocat: "#55a868", pathPeer: "#c44e52", pathBaseline: "#8172b3"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">Throughput by path and cipher, MiB/s (median of %d × %d MiB), ratio to direct above bars</text>`+"\n", left, r.Reps, r.SizeMiB)
	fmt.Fprintf(&b, `<text x="%d" y="38" fill="#555">%s, load average %.1f at start, %.1f at end</text>`+"\n", left, html.EscapeString(r.Date), r.LoadStart.L1, r.LoadEnd.L1)
	y := func(v float64) float64 { return top + plotH - v/maxV*plotH }
	for v := 0.0; v <= maxV; v += maxV / 5 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n", left, w-right, y(v), y(v), left-6, y(v)+4, v)
	}
	gw := float64(len(paths)*(barW+barGap) + groupsInnerPad)
	for gi, g := range groups {
		x0 := float64(left) + 20 + float64(gi)*gw
		for pi, p := range paths {
			t := r.row(g.cipher, g.dir, p)
			if t == nil {
				continue
			}
			x := x0 + float64(pi*(barW+barGap))
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"/>`+"\n", x, y(t.Median), barW, float64(top+plotH)-y(t.Median), colors[p])
			label := fmt.Sprintf("%.0f", t.Median)
			if p != pathDirect {
				label = fmt.Sprintf("×%.2f", t.Ratio)
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11">%s</text>`+"\n", x+barW/2, y(t.Median)-4, label)
		}
		name := strings.Fields(g.cipher)[0]
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			x0+float64(len(paths)*(barW+barGap))/2, top+plotH+18, html.EscapeString(name), x0+float64(len(paths)*(barW+barGap))/2, top+plotH+34, g.dir)
	}
	for i, p := range paths {
		x := left + i*160
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="14" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", x, h-22, colors[p], x+20, h-10, p)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func median(v []float64) float64 { return percentile(v, 50) }

// percentile is the nearest-rank percentile (p99 of 100 runs is the 99th).
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s)-1)*p/100 + 0.5)
	return s[i]
}

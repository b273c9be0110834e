package main

// Timelines (--only trace): where a transfer waits. For each path, one
// download and one upload (aes128-gcm) are recorded with perf's scheduler
// and read/write syscall tracepoints, machine-wide. From the records:
//
//   - how long the edge (the ssh client, the node's sshd with the command
//     it runs) was all asleep while the transfer ran, i.e. waiting on the
//     path in between, and whether the proxy was working meanwhile;
//   - per process and file descriptor, reads and writes with their sizes
//     and EAGAINs: the packets on both legs, the window adjustments (the
//     small writes) and how much each read brings in;
//   - the longest stalls, with the events around them.
//
// Results go to OUT/relay-trace.json and OUT/relay-trace.md. The figures
// are as distorted by perf as by any other load on the machine; they show
// the shape of a transfer, not its speed.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// traceMiB is the size of a traced transfer: enough for a steady state,
// few enough events to parse.
const traceMiB = 64

var traceEvents = []string{"sched:sched_switch", "sched:sched_wakeup", "sched:sched_process_fork",
	"syscalls:sys_enter_read", "syscalls:sys_exit_read", "syscalls:sys_enter_write", "syscalls:sys_exit_write"}

// fdStats is one process role's reads or writes on one file descriptor.
type fdStats struct {
	Role   string         `json:"role"` // client, sshd, command, proxy
	Op     string         `json:"op"`   // read, write
	FD     int            `json:"fd"`
	Calls  int            `json:"calls"`
	Bytes  int64          `json:"bytes"`
	EAGAIN int            `json:"eagain,omitempty"`
	Sizes  map[string]int `json:"sizes"` // by size class: ≤64 B (window adjustments), ≤4 KiB, ≤16 KiB, ≤33 KiB (a packet), ≤66 KiB, larger
}

type traceRow struct {
	Path      string  `json:"path"`
	Direction string  `json:"direction"`
	Seconds   float64 `json:"seconds"`
	MiBs      float64 `json:"mib_s"`
	// The share of the transfer the edge spent all asleep: with the proxy
	// running, with the proxy waiting for a CPU (other load on the
	// machine), and with the proxy asleep too.
	EdgeAsleepProxyBusy     float64   `json:"edge_asleep_proxy_running"`
	EdgeAsleepProxyRunnable float64   `json:"edge_asleep_proxy_runnable"`
	EdgeAsleepProxyIdle     float64   `json:"edge_asleep_proxy_asleep"`
	Stalls                  int       `json:"stalls_over_200us"`
	FDs                     []fdStats `json:"fds"`
	// The longest stalls, each with the events around it.
	Longest []string `json:"longest_stalls"`
}

type traceResult struct {
	Date    string     `json:"date"`
	Pinned  bool       `json:"pinned"`
	Cipher  string     `json:"cipher"`
	SizeMiB int        `json:"size_mib"`
	Load    loadAvg    `json:"load_start"`
	Rows    []traceRow `json:"transfers"`
}

func (b *bench) traces(ctx context.Context) error {
	if _, err := exec.LookPath("perf"); err != nil {
		return fmt.Errorf("the trace phase needs perf (linux-perf): %w", err)
	}
	tr := traceResult{Date: time.Now().UTC().Format(time.RFC3339), Pinned: b.o.pinned, Cipher: ciphers[0].name, SizeMiB: traceMiB, Load: loadNow()}
	if err := os.MkdirAll(b.o.out, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "relaybench-trace-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, p := range paths {
		for _, up := range []bool{false, true} {
			if err := b.settle(ctx); err != nil {
				return err
			}
			row, err := b.trace(ctx, dir, p, up)
			if err != nil {
				return fmt.Errorf("trace %s %s: %w", p, dirName(up), err)
			}
			log.Printf("trace %s %s: %.0f MiB/s, edge asleep: %.1f %% proxy running, %.1f %% proxy waiting for a CPU, %.1f %% proxy asleep; %d stalls > 200 µs",
				p, dirName(up), row.MiBs, 100*row.EdgeAsleepProxyBusy, 100*row.EdgeAsleepProxyRunnable, 100*row.EdgeAsleepProxyIdle, row.Stalls)
			tr.Rows = append(tr.Rows, row)
		}
	}
	js, err := json.MarshalIndent(tr, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.o.out, "relay-trace.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.o.out, "relay-trace.md"), []byte(traceMarkdown(tr)), 0o644)
}

// trace records one transfer through path p.
func (b *bench) trace(ctx context.Context, dir, p string, up bool) (traceRow, error) {
	row := traceRow{Path: p, Direction: dirName(up)}
	data := filepath.Join(dir, "perf.data")
	os.Remove(data)
	// Events start disabled (-D -1) and are enabled through perf's
	// control fifo, which acknowledges once they are on; --synth=no skips
	// describing every process on the machine first, which takes seconds
	// on a busy one.
	ctl, ack := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack")
	for _, f := range []string{ctl, ack} {
		os.Remove(f)
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			return row, err
		}
	}
	rec := exec.Command("perf", "record", "-q", "-a", "-D", "-1", "--synth=no", "--control=fifo:"+ctl+","+ack,
		"-o", data, "-e", strings.Join(traceEvents, ","), "--exclude-perf")
	var stderr strings.Builder
	rec.Stderr = &stderr
	if err := rec.Start(); err != nil {
		return row, err
	}
	stop := func() error {
		rec.Process.Signal(syscall.SIGINT)
		err := rec.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() <= 0 {
			err = nil // ended by the signal
		}
		if err != nil {
			return fmt.Errorf("perf record: %w: %s", err, stderr.String())
		}
		return nil
	}
	if err := perfEnable(ctx, ctl, ack); err != nil {
		stop()
		return row, fmt.Errorf("enabling perf's events: %w: %s", err, stderr.String())
	}
	clientPID := make(chan int, 1)
	mibs, _, err := b.transferPID(ctx, b.sshArgs(p, ciphers[0].flag), up, traceMiB, clientPID)
	if serr := stop(); err == nil {
		err = serr
	}
	if err != nil {
		return row, err
	}
	row.MiBs = mibs
	row.Seconds = traceMiB / mibs
	script := exec.CommandContext(ctx, "perf", "script", "-i", data, "-F", "trace:comm,pid,tid,cpu,time,event,trace")
	out, err := script.StdoutPipe()
	if err != nil {
		return row, err
	}
	if err := script.Start(); err != nil {
		return row, err
	}
	proxy := 0
	if pp := b.proxies[p]; pp != nil {
		proxy = pp.cmd.Process.Pid
	}
	var src io.Reader = out
	if b.o.traceRaw {
		// The timeline itself, for reading by hand.
		f, err := os.Create(filepath.Join(b.o.out, fmt.Sprintf("relay-trace-%s-%s.txt", p, dirName(up))))
		if err != nil {
			return row, err
		}
		defer f.Close()
		src = io.TeeReader(out, f)
	}
	perr := parseTrace(src, <-clientPID, b.node.PID(), proxy, &row)
	io.Copy(io.Discard, out)
	if err := script.Wait(); err != nil {
		return row, fmt.Errorf("perf script: %w", err)
	}
	return row, perr
}

// perfEnable tells perf record to enable its events and waits for the
// acknowledgement. Both fifos are opened read-write, which does not block
// on the other end.
func perfEnable(ctx context.Context, ctl, ack string) error {
	c, err := os.OpenFile(ctl, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer c.Close()
	a, err := os.OpenFile(ack, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer a.Close()
	if _, err := c.WriteString("enable\n"); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	a.SetReadDeadline(deadline)
	line, err := bufio.NewReader(a).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "ack" {
		return fmt.Errorf("perf answered %q", line)
	}
	return nil
}

var (
	traceLine  = regexp.MustCompile(`^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$`)
	traceFD    = regexp.MustCompile(`fd: (0x[0-9a-f]+)`)
	traceFork  = regexp.MustCompile(`pid=(\d+) child_comm=.* child_pid=(\d+)`)
	traceSw    = regexp.MustCompile(`prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)`)
	traceWake  = regexp.MustCompile(`comm=.* pid=(\d+) `)
	traceClass = []struct {
		max  int64
		name string
	}{{64, "≤64 B"}, {4 << 10, "≤4 KiB"}, {16 << 10, "≤16 KiB"}, {33 << 10, "≤33 KiB"}, {66 << 10, "≤66 KiB"}, {1 << 62, ">66 KiB"}}
)

// parseTrace reads perf script output: the roles of the tasks come from
// the process tree (the client's, the node sshd's, the proxy's); the
// edge is the client with sshd's sessions and their commands.
func parseTrace(r io.Reader, client, sshd, proxy int, row *traceRow) error {
	role := map[int]string{client: "client", sshd: "sshd"}
	if proxy != 0 {
		role[proxy] = "proxy"
	}
	type call struct {
		op, fd int
		t      float64
	}
	inCall := map[int]call{}
	stats := map[[3]int]*fdStats{}
	state := map[int]byte{} // tid → 'R' running, 'W' runnable, 'S' asleep
	edge, prox := map[int]bool{}, map[int]bool{}
	var t0, t1, last float64
	var bulk int64
	var stallStart float64
	var busy, runnable, idle float64
	// The figures as of the transfer's last read or write.
	var busyAt1, runnableAt1, idleAt1 float64
	var stallsAt1 int
	type ev struct {
		t    float64
		text string
	}
	var recent []ev // a window of events, for the stalls' excerpts
	type stall struct {
		from, to float64
		excerpt  []string
	}
	var stalls []stall
	var pending *stall
	seen := 0 // events in recent when the last line was handled
	groupState := func(g map[int]bool) byte {
		s := byte('S')
		for tid := range g {
			switch state[tid] {
			case 'R':
				return 'R'
			case 'W':
				s = 'W'
			}
		}
		return s
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := traceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[2])
		tid, _ := strconv.Atoi(m[3])
		t, _ := strconv.ParseFloat(m[5], 64)
		event, args := m[6], m[7]
		// The time since the last event, in the states it left.
		if t0 != 0 && last > 0 && groupState(edge) == 'S' {
			switch dt := t - last; groupState(prox) {
			case 'S':
				idle += dt
			case 'W':
				runnable += dt
			default:
				busy += dt
			}
		}
		last = t
		// An event in a task's context: it is on a CPU (a switch says
		// where it goes next, below).
		state[tid] = 'R'
		rl := role[pid]
		// A name perf does not know yet reads ":PID".
		if rl == "sshd" && pid != sshd && m[1] != "sshd" && !strings.HasPrefix(m[1], ":") {
			rl = "command"
			role[pid] = rl
		}
		switch {
		case strings.HasSuffix(event, "sched_process_fork"):
			if f := traceFork.FindStringSubmatch(args); f != nil {
				parent, _ := strconv.Atoi(f[1])
				child, _ := strconv.Atoi(f[2])
				if pr := role[parent]; pr != "" {
					// sshd's session processes are "sshd" until they
					// exec something else (the command, below).
					role[child] = pr
				}
			}
		case strings.Contains(event, "sys_enter_"):
			if rl == "" {
				continue
			}
			f := traceFD.FindStringSubmatch(args)
			if f == nil {
				continue
			}
			fd, _ := strconv.ParseInt(f[1], 0, 64)
			op := 0
			if strings.HasSuffix(event, "write") {
				op = 1
			}
			inCall[tid] = call{op: op, fd: int(fd), t: t}
		case strings.Contains(event, "sys_exit_"):
			c, ok := inCall[tid]
			if !ok {
				continue
			}
			delete(inCall, tid)
			ret, _ := strconv.ParseUint(strings.Fields(args)[len(strings.Fields(args))-1], 0, 64)
			n := int64(ret)
			key := [3]int{roleIndex(rl), c.op, c.fd}
			s := stats[key]
			if s == nil {
				s = &fdStats{Role: rl, Op: []string{"read", "write"}[c.op], FD: c.fd, Sizes: map[string]int{}}
				stats[key] = s
			}
			if n == -int64(syscall.EAGAIN) {
				s.EAGAIN++
				continue
			}
			s.Calls++
			if n > 0 {
				s.Bytes += n
				for _, cl := range traceClass {
					if n <= cl.max {
						s.Sizes[cl.name]++
						break
					}
				}
			}
			// The bulk transfer is from when the client and the command
			// have moved 256 KiB in reads and writes of 4 KiB or more (not
			// the login before it) to the last of those.
			if (rl == "client" || rl == "command") && n >= 4<<10 {
				if bulk += n; t0 == 0 && bulk >= 256<<10 {
					t0 = t
				}
				t1 = t
				busyAt1, runnableAt1, idleAt1, stallsAt1 = busy, runnable, idle, len(stalls)
			}
			recent = append(recent, ev{t, fmt.Sprintf("%s %s fd %d %d", rl, s.Op, c.fd, n)})
		case strings.HasSuffix(event, "sched_switch"):
			if f := traceSw.FindStringSubmatch(args); f != nil {
				prev, _ := strconv.Atoi(f[1])
				next, _ := strconv.Atoi(f[3])
				state[prev] = 'S'
				if strings.HasPrefix(f[2], "R") {
					state[prev] = 'W'
				}
				state[next] = 'R'
			}
		case strings.HasSuffix(event, "sched_wakeup"):
			if f := traceWake.FindStringSubmatch(args); f != nil {
				w, _ := strconv.Atoi(f[1])
				if state[w] != 'R' {
					state[w] = 'W'
				}
			}
		}
		// Group membership by role: a task's pid is known once it ran.
		switch role[pid] {
		case "client", "sshd", "command":
			edge[tid] = true
		case "proxy":
			prox[tid] = true
		}
		if t0 == 0 {
			continue
		}
		asleep := groupState(edge) == 'S'
		switch {
		case asleep && stallStart == 0:
			stallStart = t
		case !asleep && stallStart != 0:
			if t-stallStart > 200e-6 {
				s := stall{from: stallStart, to: t}
				for _, e := range recent[max(0, len(recent)-20):] {
					s.excerpt = append(s.excerpt, fmt.Sprintf("%9.3f ms  %s", (e.t-t0)*1000, e.text))
				}
				stalls = append(stalls, s)
				pending = &stalls[len(stalls)-1]
			}
			stallStart = 0
		}
		if pending != nil && len(recent) > seen {
			// The first events after the stall: what ended it.
			if len(pending.excerpt) < 26 {
				e := recent[len(recent)-1]
				pending.excerpt = append(pending.excerpt, fmt.Sprintf("%9.3f ms  %s (after)", (e.t-t0)*1000, e.text))
			} else {
				pending = nil
			}
		}
		seen = len(recent)
		if len(recent) > 4096 {
			recent = slices.Clone(recent[len(recent)-64:])
			seen = len(recent)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if t1 <= t0 {
		return errors.New("no reads or writes of the client or the command in the trace")
	}
	span := t1 - t0
	row.EdgeAsleepProxyBusy, row.EdgeAsleepProxyRunnable, row.EdgeAsleepProxyIdle = busyAt1/span, runnableAt1/span, idleAt1/span
	stalls = stalls[:stallsAt1]
	row.Stalls = len(stalls)
	slices.SortFunc(stalls, func(a, b stall) int { return int((b.to - b.from - (a.to - a.from)) * 1e9) })
	for _, s := range stalls[:min(3, len(stalls))] {
		row.Longest = append(row.Longest, fmt.Sprintf("stall of %.3f ms at %.3f ms:\n%s", (s.to-s.from)*1000, (s.from-t0)*1000, strings.Join(s.excerpt, "\n")))
	}
	for _, s := range stats {
		if s.Calls+s.EAGAIN >= 16 {
			row.FDs = append(row.FDs, *s)
		}
	}
	slices.SortFunc(row.FDs, func(a, b fdStats) int {
		return cmpAll(roleIndex(a.Role)-roleIndex(b.Role), strings.Compare(a.Op, b.Op), a.FD-b.FD)
	})
	return nil
}

func roleIndex(r string) int {
	return slices.Index([]string{"client", "proxy", "sshd", "command"}, r)
}

func cmpAll(c ...int) int {
	for _, x := range c {
		if x != 0 {
			return x
		}
	}
	return 0
}

func traceMarkdown(tr traceResult) string {
	var b strings.Builder
	pin := "unpinned"
	if tr.Pinned {
		pin = "pinned"
	}
	fmt.Fprintf(&b, "### Relay timelines (%s, %s, %s, %d MiB per transfer, load %.2f at start)\n\n", tr.Date, pin, tr.Cipher, tr.SizeMiB, tr.Load.L1)
	b.WriteString("The edge is the ssh client with the node's sshd and the command it runs; \"asleep\" is the share of the transfer with all of them asleep, waiting on the path in between.\n\n")
	b.WriteString("| path | dir | MiB/s (traced) | edge asleep, proxy running | edge asleep, proxy waiting for a CPU | edge and proxy asleep | stalls > 200 µs |\n|---|---|---|---|---|---|---|\n")
	for _, r := range tr.Rows {
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.1f %% | %.1f %% | %.1f %% | %d |\n", r.Path, r.Direction, r.MiBs,
			100*r.EdgeAsleepProxyBusy, 100*r.EdgeAsleepProxyRunnable, 100*r.EdgeAsleepProxyIdle, r.Stalls)
	}
	for _, r := range tr.Rows {
		fmt.Fprintf(&b, "\n#### %s, %s\n\n| process | call | fd | calls | MiB | bytes/call | EAGAIN | sizes |\n|---|---|---|---|---|---|---|---|\n", r.Path, r.Direction)
		for _, f := range r.FDs {
			var sizes []string
			for _, cl := range traceClass {
				if n := f.Sizes[cl.name]; n > 0 {
					sizes = append(sizes, fmt.Sprintf("%s: %d", cl.name, n))
				}
			}
			per := int64(0)
			if f.Calls > 0 {
				per = f.Bytes / int64(f.Calls)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f | %d | %d | %s |\n", f.Role, f.Op, f.FD, f.Calls, float64(f.Bytes)/(1<<20), per, f.EAGAIN, strings.Join(sizes, ", "))
		}
		for _, l := range r.Longest {
			fmt.Fprintf(&b, "\n```\n%s\n```\n", l)
		}
	}
	return b.String()
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
)

func init() {
	register("status", "show a gateway's status: nodes, drains, recent refusals, last reload (admin API)", stdout(runStatus))
	register("sessions", "list the live sessions of a gateway (admin API)", stdout(runSessions))
	register("nodes", "show the login nodes' health as a gateway sees it (admin API)", stdout(runNodes))
	register("explain", "explain how USER would be routed now (admin API)", stdout(runExplain))
	register("drain", "drain NODE cluster-wide: no new sessions; with --deadline, its users told and their sessions closed then (admin API)", stdout(runMaintenanceDrain))
	register("undrain", "take NODE out of an admin drain (admin API)", stdout(func(ctx context.Context, args []string, out io.Writer) error {
		return runDrain(ctx, "undrain", args, out)
	}))
}

// stdout adapts a command that prints to out.
func stdout(f func(context.Context, []string, io.Writer) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error { return f(ctx, args, os.Stdout) }
}

// tableJSON are the formats of the admin commands.
var tableJSON = []string{"table", "json"}

const adminUsage = "[--admin SOCKET|URL] [--admin-token-file FILE] [-o table|json]"

// listCommand is the part of nodes, sessions and status that is the
// same: flags, no arguments, and GET path — copied to out as the API's
// JSON with -o json (done), else decoded into v for a table.
func listCommand(ctx context.Context, name string, args []string, path string, out io.Writer, v any) (done bool, err error) {
	fs, a, o := adminFlags(name)
	usage := "frontdoor " + name + " " + adminUsage
	if err := parseFlags(fs, args, usage, o, tableJSON...); err != nil {
		return true, err
	}
	if fs.NArg() != 0 {
		return true, fmt.Errorf("%w: %s", errUsage, usage)
	}
	if *o == "json" {
		return true, a.get(ctx, path, nil, out)
	}
	return false, a.get(ctx, path, v, nil)
}

func runNodes(ctx context.Context, args []string, out io.Writer) error {
	var ns []admin.NodeInfo
	if done, err := listCommand(ctx, "nodes", args, "/v1/nodes", out, &ns); done || err != nil {
		return err
	}
	return nodesTable(out, ns, time.Now())
}

func nodesTable(out io.Writer, ns []admin.NodeInfo, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOOL\tADDR\tSTATE\tAGE\tLOAD1/CPUS\tMEM FREE\tPSI CPU/MEM\tSESSIONS\tUSERS\tSCORE")
	for _, n := range ns {
		state := "up"
		if n.NotTaking != "" {
			// A discovered node HyperPod does not run now: no new
			// logins; its sessions through this gateway go on.
			fmt.Fprintf(tw, "%s	-	-	not taking logins (%s)	-	-	-	-	%d here	-	-\n", n.Name, n.NotTaking, n.Here)
			continue
		}
		switch {
		case n.Lied:
			state = "lied"
		case !n.Alive:
			state = "dead"
		case !n.SSHDUp:
			state = "sshd-down"
		case n.Draining:
			state = "draining"
		}
		if n.NoAgent {
			state += " (no agent: sshd probed)"
		}
		for _, w := range n.Warnings {
			state += " !" + w
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f/%d\t%.0f%%\t%.2f/%.2f\t%d (+%d)\t%d\t%.3f\n", n.Name, n.Pool, n.Addr, state,
			now.Sub(n.HealthAt).Round(100*time.Millisecond), n.Load1, n.CPUs, 100*n.MemAvailFrac,
			n.CPUPressure, n.MemPressure, n.Sessions, n.RecentlyRouted, n.Users, n.Score)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return maintenanceTable(out, ns, now)
}

func runExplain(ctx context.Context, args []string, out io.Writer) error {
	fs, a, o := adminFlags("explain")
	usage := "frontdoor explain " + adminUsage + " USER[+NODE]"
	if err := parseFlags(fs, args, usage, o, tableJSON...); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	if *o == "table" {
		return a.get(ctx, "/v1/explain?user="+url.QueryEscape(fs.Arg(0)), nil, out)
	}
	var text strings.Builder
	if err := a.get(ctx, "/v1/explain?user="+url.QueryEscape(fs.Arg(0)), nil, &text); err != nil {
		return err
	}
	return writeJSON(out, map[string]string{"user": fs.Arg(0), "explanation": text.String()})
}

func runDrain(ctx context.Context, verb string, args []string, out io.Writer) error {
	fs, a, o := adminFlags(verb)
	comment := fs.String("comment", "", "why, for the log and audit trail (the admin recorded is the one the credential proves)")
	usage := "frontdoor " + verb + " " + adminUsage + " [--comment TEXT] NODE"
	if err := parseFlags(fs, args, usage, o, tableJSON...); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	body, err := json.Marshal(map[string]string{"node": fs.Arg(0), "comment": sudoNote(*comment)})
	if err != nil {
		return err
	}
	var res drainResult
	if err := a.post(ctx, "/v1/"+verb, body, &res); err != nil {
		return err
	}
	if *o == "json" {
		return writeJSON(out, res)
	}
	state := "undrained"
	if res.Draining {
		state = "draining"
	}
	fmt.Fprintf(out, "%s: %s (by %s)\n", res.Node, state, res.By)
	return nil
}

func runSessions(ctx context.Context, args []string, out io.Writer) error {
	var ss []admin.Session
	if done, err := listCommand(ctx, "sessions", args, "/v1/sessions", out, &ss); done || err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tUSER\tNODE\tFROM\tMETHOD\tAGE\tUP\tDOWN\tCHANNELS")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.ID, s.User, s.Node, s.Src, s.Method,
			time.Since(s.Started).Round(time.Second), human(s.BytesUp), human(s.BytesDown), s.Channels)
	}
	return tw.Flush()
}

func runStatus(ctx context.Context, args []string, out io.Writer) error {
	var st admin.Status
	if done, err := listCommand(ctx, "status", args, "/v1/status", out, &st); done || err != nil {
		return err
	}
	return statusTable(out, st)
}

// statusTable prints the status as the page shows it, section by section.
func statusTable(out io.Writer, st admin.Status) error {
	fmt.Fprintf(out, "gateway %s, %s\n", st.Gateway, st.Now.UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPROCESS\tSTATE\tSTARTED\tSESSIONS\tDRAIN DEADLINE")
	for _, p := range st.Processes {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", p.PID, p.State, p.Started.UTC().Format(time.RFC3339), p.Sessions, stampOr(p.DrainDeadline, "-"))
	}
	fmt.Fprintln(tw, "\nGATEWAY\tGOSSIP ADDR\tSESSIONS\t")
	for _, g := range st.Gateways {
		self := ""
		if g.Self {
			self = "(this one)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", g.Name, cmpOr(g.Addr, "-"), g.Sessions, self)
	}
	fmt.Fprintln(tw, "\nDRAINING\tBY\tDEADLINE\tSESSIONS LEFT\tMESSAGE")
	for _, d := range st.Drains {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", d.Node, cmpOr(d.By, "-"), stampOr(d.Deadline, "none"), d.Sessions, cmpOr(d.Message, "-"))
	}
	if len(st.Drains) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t")
	}
	fmt.Fprintf(tw, "\nREFUSED (LAST %ds)\tCOUNT\t\t\t\n", st.Refusals.WindowSeconds)
	for _, r := range st.Refusals.ByReason {
		fmt.Fprintf(tw, "%s\t%d\t\t\t\n", r.Reason, r.Count)
	}
	if len(st.Refusals.ByReason) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t")
	}
	lockedSection(tw, st.Locks)
	if err := tw.Flush(); err != nil {
		return err
	}
	switch r := st.LastReload; {
	case r == nil:
		fmt.Fprintln(out, "\nlast reload: none since this process started")
	case r.OK:
		fmt.Fprintf(out, "\nlast reload: ok at %s by %s\n", r.At.UTC().Format(time.RFC3339), cmpOr(r.By, "-"))
	default:
		fmt.Fprintf(out, "\nlast reload: %s at %s by %s (the running configuration is the one before):\n%s\n",
			strings.ToUpper(cmpOr(r.Result, "failed")), r.At.UTC().Format(time.RFC3339), cmpOr(r.By, "-"), r.Error)
	}
	if u := st.LastUpgrade; u != nil {
		fmt.Fprintf(out, "last upgrade: %s at %s by %s", u.Result, u.At.UTC().Format(time.RFC3339), cmpOr(u.By, "-"))
		if u.PID != 0 {
			fmt.Fprintf(out, ", new pid %d", u.PID)
		}
		if u.Error != "" {
			fmt.Fprintf(out, ":\n%s", u.Error)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out)
	return nodesTable(out, st.Nodes, st.Now)
}

func stampOr(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}

func cmpOr(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// human formats a byte count.
func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// sudoNote is an admin command's comment with who ran sudo: worth a note
// in the audit trail, though the gateway records the peer's own identity
// (root, here) whatever this says.
func sudoNote(comment string) string {
	if su := os.Getenv("SUDO_USER"); su != "" {
		return strings.TrimSpace(comment + " (sudo by " + su + ")")
	}
	return comment
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
)

// `frontdoor drain NODE [--deadline D] [--message M]`: no new sessions on
// NODE, cluster-wide. With a deadline, every gateway tells the users of
// its sessions there (at once, 10 and 1 minute before) and closes what is
// left at the deadline, saying why. `frontdoor undrain NODE` ends the
// drain and closes nothing (admin.go).

const drainUsage = "frontdoor drain " + adminUsage + " [--deadline 30m|RFC3339] [--message TEXT] NODE"

// drainResult is the answer of POST /v1/drain and /v1/undrain.
type drainResult struct {
	Node     string    `json:"node"`
	Draining bool      `json:"draining"`
	By       string    `json:"by"`
	Deadline time.Time `json:"deadline,omitzero"`
	Message  string    `json:"message,omitempty"`
}

func runMaintenanceDrain(ctx context.Context, args []string, out io.Writer) error {
	fs, a, o := adminFlags("drain")
	var message, deadline string
	fs.StringVar(&message, "message", "", "what the node's users are told with a --deadline (at most 200 bytes, one line); without one, a note for the log and audit trail")
	fs.StringVar(&message, "comment", "", "the same as --message (its earlier name)")
	fs.StringVar(&deadline, "deadline", "", "close the sessions still on the node after this long (30m, 2h) or at this time (2026-06-01T22:00:00Z), telling their users before")
	if err := parseFlags(fs, args, drainUsage, o, tableJSON...); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: %s", errUsage, drainUsage)
	}
	req := map[string]string{"node": fs.Arg(0), "message": message, "comment": message}
	if deadline != "" {
		if d, err := time.ParseDuration(deadline); err == nil {
			req["deadline_in"] = d.String() // by the gateway's clock
		} else if t, err := time.Parse(time.RFC3339, deadline); err == nil {
			req["deadline"] = t.UTC().Format(time.RFC3339Nano)
		} else {
			return fmt.Errorf("%w: --deadline %q: want a duration (30m) or an RFC 3339 time (2026-06-01T22:00:00Z)", errUsage, deadline)
		}
	}
	// In the audit trail, not in what users read.
	req["comment"] = sudoNote(message)
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var res drainResult
	if err := a.post(ctx, "/v1/drain", body, &res); err != nil {
		return err
	}
	if *o == "json" {
		return writeJSON(out, res)
	}
	if res.Deadline.IsZero() {
		fmt.Fprintf(out, "%s: draining (by %s)\n", res.Node, res.By)
		return nil
	}
	fmt.Fprintf(out, "%s: draining (by %s) until %s, in %s: its sessions are told now, 10 and 1 minute before, and closed then\n",
		res.Node, res.By, res.Deadline.UTC().Format(time.RFC3339), time.Until(res.Deadline).Round(time.Second))
	return nil
}

// maintenanceTable lists, under the nodes table, the nodes drained with a
// deadline: when their sessions are closed, how many are left, and what
// their users are told.
func maintenanceTable(out io.Writer, ns []admin.NodeInfo, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	header := false
	for _, n := range ns {
		if n.DrainDeadline.IsZero() {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "\nMAINTENANCE\tDEADLINE\tIN\tSESSIONS LEFT\tBY\tMESSAGE")
			header = true
		}
		left := "passed"
		if d := n.DrainDeadline.Sub(now); d > 0 {
			left = d.Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", n.Name, n.DrainDeadline.UTC().Format(time.RFC3339), left,
			max(n.Sessions, n.Here), cmpOr(n.DrainBy, "-"), cmpOr(n.DrainMessage, "-"))
	}
	return tw.Flush()
}

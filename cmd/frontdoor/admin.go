package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
)

func init() {
	register("sessions", "list the live sessions of a gateway (admin API)", runSessions)
	register("nodes", "show the login nodes' health as a gateway sees it (admin API)", runNodes)
	register("explain", "explain how USER would be routed now (admin API)", runExplain)
	register("drain", "drain NODE cluster-wide: no new sessions (admin API)", func(ctx context.Context, args []string) error {
		return runDrain(ctx, "drain", args)
	})
	register("undrain", "take NODE out of an admin drain (admin API)", func(ctx context.Context, args []string) error {
		return runDrain(ctx, "undrain", args)
	})
}

func runNodes(ctx context.Context, args []string) error {
	fs, a, asJSON := adminFlags("nodes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *asJSON {
		return a.get(ctx, "/v1/nodes", nil, os.Stdout)
	}
	var ns []admin.NodeInfo
	if err := a.get(ctx, "/v1/nodes", &ns, nil); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
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
			time.Since(n.HealthAt).Round(100*time.Millisecond), n.Load1, n.CPUs, 100*n.MemAvailFrac,
			n.CPUPressure, n.MemPressure, n.Sessions, n.RecentlyRouted, n.Users, n.Score)
	}
	return tw.Flush()
}

func runExplain(ctx context.Context, args []string) error {
	fs, a, _ := adminFlags("explain")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: frontdoor explain [--admin SOCKET|URL] USER[+NODE]", errUsage)
	}
	return a.get(ctx, "/v1/explain?user="+url.QueryEscape(fs.Arg(0)), nil, os.Stdout)
}

func runDrain(ctx context.Context, verb string, args []string) error {
	fs, a, _ := adminFlags(verb)
	comment := fs.String("comment", "", "why, for the log and audit trail (the admin recorded is the one the credential proves)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: frontdoor %s [--admin SOCKET|URL] [--comment TEXT] NODE", errUsage, verb)
	}
	// Who ran sudo is worth a note; the gateway records the peer's own
	// identity (root, here) whatever this says.
	note := *comment
	if su := os.Getenv("SUDO_USER"); su != "" {
		note = strings.TrimSpace(note + " (sudo by " + su + ")")
	}
	body, err := json.Marshal(map[string]string{"node": fs.Arg(0), "comment": note})
	if err != nil {
		return err
	}
	var res struct {
		Node     string `json:"node"`
		Draining bool   `json:"draining"`
		By       string `json:"by"`
	}
	if err := a.post(ctx, "/v1/"+verb, body, &res); err != nil {
		return err
	}
	state := "undrained"
	if res.Draining {
		state = "draining"
	}
	fmt.Printf("%s: %s (by %s)\n", res.Node, state, res.By)
	return nil
}

func runSessions(ctx context.Context, args []string) error {
	fs, a, asJSON := adminFlags("sessions")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *asJSON {
		return a.get(ctx, "/v1/sessions", nil, os.Stdout)
	}
	var ss []admin.Session
	if err := a.get(ctx, "/v1/sessions", &ss, nil); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tUSER\tNODE\tFROM\tMETHOD\tAGE\tUP\tDOWN\tCHANNELS")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.ID, s.User, s.Node, s.Src, s.Method,
			time.Since(s.Started).Round(time.Second), human(s.BytesUp), human(s.BytesDown), s.Channels)
	}
	return tw.Flush()
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

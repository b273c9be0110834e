package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"text/tabwriter"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
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
	fs, addr, asJSON := adminFlags("nodes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *asJSON {
		return adminGet(ctx, *addr, "/v1/nodes", nil, os.Stdout)
	}
	var ns []gateway.NodeInfo
	if err := adminGet(ctx, *addr, "/v1/nodes", &ns, nil); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOOL\tADDR\tSTATE\tAGE\tLOAD1/CPUS\tMEM FREE\tPSI CPU/MEM\tSESSIONS\tUSERS\tSCORE")
	for _, n := range ns {
		state := "up"
		switch {
		case !n.Alive:
			state = "dead"
		case !n.SSHDUp:
			state = "sshd-down"
		case n.Draining:
			state = "draining"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f/%d\t%.0f%%\t%.2f/%.2f\t%d (+%d)\t%d\t%.3f\n", n.Name, n.Pool, n.Addr, state,
			time.Since(n.HealthAt).Round(100*time.Millisecond), n.Load1, n.CPUs, 100*n.MemAvailFrac,
			n.CPUPressure, n.MemPressure, n.Sessions, n.RecentlyRouted, n.Users, n.Score)
	}
	return tw.Flush()
}

func runExplain(ctx context.Context, args []string) error {
	fs, addr, _ := adminFlags("explain")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: frontdoor explain [--admin ADDR] USER[+NODE]", errUsage)
	}
	return adminGet(ctx, *addr, "/v1/explain?user="+url.QueryEscape(fs.Arg(0)), nil, os.Stdout)
}

func runDrain(ctx context.Context, verb string, args []string) error {
	fs, addr, _ := adminFlags(verb)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: frontdoor %s [--admin ADDR] NODE", errUsage, verb)
	}
	by := os.Getenv("SUDO_USER")
	if by == "" {
		by = os.Getenv("USER")
	}
	q := url.Values{"node": {fs.Arg(0)}, "by": {by}}
	return adminPost(ctx, *addr, "/v1/"+verb+"?"+q.Encode(), os.Stdout)
}

func adminPost(ctx context.Context, addr, path string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("admin API: %s: %s", resp.Status, b)
	}
	_, err = out.Write(b)
	return err
}

// defaultAdmin is where the admin commands look for a gateway's admin API.
const defaultAdmin = "127.0.0.1:9101"

func adminFlags(name string) (*flag.FlagSet, *string, *bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	addr := fs.String("admin", envOr("FRONTDOOR_ADMIN", defaultAdmin), "gateway admin address (env FRONTDOOR_ADMIN)")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	return fs, addr, asJSON
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// adminGet fetches path from the admin API into v (or copies it raw to w).
func adminGet(ctx context.Context, addr, path string, v any, raw io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("admin API %s: %s: %s", path, resp.Status, b)
	}
	if raw != nil {
		_, err := io.Copy(raw, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func runSessions(ctx context.Context, args []string) error {
	fs, addr, asJSON := adminFlags("sessions")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *asJSON {
		return adminGet(ctx, *addr, "/v1/sessions", nil, os.Stdout)
	}
	var ss []gateway.SessionInfo
	if err := adminGet(ctx, *addr, "/v1/sessions", &ss, nil); err != nil {
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

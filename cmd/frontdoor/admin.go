package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"text/tabwriter"
	"time"
)

func init() {
	register("sessions", "list the live sessions of a gateway (admin API)", runSessions)
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
	var ss []struct {
		ID        string    `json:"id"`
		User      string    `json:"user"`
		Node      string    `json:"node"`
		Src       string    `json:"src"`
		Method    string    `json:"method"`
		Started   time.Time `json:"started"`
		BytesUp   int64     `json:"bytes_up"`
		BytesDown int64     `json:"bytes_down"`
		Channels  int64     `json:"channels"`
	}
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

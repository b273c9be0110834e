package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
)

func init() {
	register("reload", "re-read a gateway's configuration; new logins use it, open sessions go on (admin API)", runReload)
	register("upgrade", "start the installed binary in a gateway's place; it takes the sockets over, open sessions stay (admin API)", runUpgrade)
	register("status", "show a gateway process: state, last reload and upgrade, drain (admin API)", runStatus)
}

// runReload: POST /v1/reload. Exit 0 when the configuration is in use;
// otherwise each problem on a line of its own and exit 1.
func runReload(ctx context.Context, args []string) error {
	fs, a, asJSON := adminFlags("reload")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, raw, err := postChange(ctx, a, "/v1/reload")
	if err != nil {
		return err
	}
	if *asJSON {
		os.Stdout.Write(raw)
	}
	if c.Result != "ok" {
		return reportChange(os.Stderr, "reload", c)
	}
	if !*asJSON {
		fmt.Println("reloaded: new logins use the new configuration; open sessions go on as they started")
	}
	return nil
}

// runUpgrade: POST /v1/upgrade, then GET /v1/status until the new process
// answers on the handed-over socket, or the old one reports a failure.
func runUpgrade(ctx context.Context, args []string) error {
	fs, a, _ := adminFlags("upgrade")
	wait := fs.Duration("wait", 3*time.Minute, "how long to wait for the outcome (0: return once started)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var before admin.Status
	if err := a.get(ctx, "/v1/status", &before, nil); err != nil {
		return err
	}
	c, _, err := postChange(ctx, a, "/v1/upgrade")
	if err != nil {
		return err
	}
	if c.Result != "started" {
		return reportChange(os.Stderr, "upgrade", c)
	}
	fmt.Printf("upgrade started: pid %d starts the installed binary, which takes the sockets over once ready\n", before.PID)
	if *wait == 0 {
		return nil
	}
	deadline := time.Now().Add(*wait)
	for {
		var st admin.Status
		if err := a.get(ctx, "/v1/status", &st, nil); err == nil {
			switch {
			case st.PID != before.PID:
				fmt.Printf("upgraded: pid %d (version %s) serves the gateway now\n", st.PID, orDash(st.Version))
				if p := st.Previous; p != nil && p.PID == before.PID {
					fmt.Printf("pid %d relays its %d sessions until they end or %s\n", p.PID, p.Sessions, p.Deadline.Local().Format(time.DateTime))
				}
				return nil
			case st.LastUpgrade != nil && st.LastUpgrade.Result != "started" && !st.LastUpgrade.Time.Before(c.Time):
				if st.LastUpgrade.Result == "ok" {
					continue // the old process has it; the new one answers next
				}
				return reportChange(os.Stderr, "upgrade", *st.LastUpgrade)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no outcome within %s: see `frontdoor status` and the gateway's log", *wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func runStatus(ctx context.Context, args []string) error {
	fs, a, asJSON := adminFlags("status")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *asJSON {
		return a.get(ctx, "/v1/status", nil, os.Stdout)
	}
	var st admin.Status
	if err := a.get(ctx, "/v1/status", &st, nil); err != nil {
		return err
	}
	fmt.Printf("gateway %s: pid %d, %s, %d sessions, version %s, up since %s\n", st.Gateway, st.PID, st.State, st.Sessions,
		orDash(st.Version), st.Started.Local().Format(time.DateTime))
	if d := st.Drain; d != nil {
		fmt.Printf("draining (%s) since %s, until %s at most\n", d.Reason, d.Started.Local().Format(time.DateTime), d.Deadline.Local().Format(time.DateTime))
	}
	if p := st.Previous; p != nil {
		fmt.Printf("previous process: pid %d relays %d sessions until they end or %s\n", p.PID, p.Sessions, p.Deadline.Local().Format(time.DateTime))
	}
	for _, ch := range []struct {
		what string
		c    *admin.Change
	}{{"last reload", st.LastReload}, {"last upgrade", st.LastUpgrade}} {
		if ch.c == nil {
			continue
		}
		fmt.Printf("%s: %s at %s by %s\n", ch.what, ch.c.Result, ch.c.Time.Local().Format(time.DateTime), ch.c.By)
		for _, e := range ch.c.Errors {
			fmt.Printf("  %s\n", e)
		}
	}
	return nil
}

// postChange sends a state change and decodes the Change the gateway
// answers with, whatever its status.
func postChange(ctx context.Context, a *adminTarget, path string) (admin.Change, []byte, error) {
	status, b, err := a.send(ctx, http.MethodPost, path, []byte("{}"))
	if err != nil {
		return admin.Change{}, nil, err
	}
	var c admin.Change
	if jerr := json.Unmarshal(b, &c); jerr != nil || c.Result == "" {
		if status == http.StatusOK {
			return admin.Change{}, nil, fmt.Errorf("admin API %s: %w", path, errors.Join(jerr, errors.New("no result")))
		}
		return admin.Change{}, nil, fmt.Errorf("admin API %s: %d %s: %s", path, status, http.StatusText(status), b)
	}
	return c, b, nil
}

// reportChange prints a change that did not happen, one problem per line,
// for an exit status of 1.
func reportChange(w io.Writer, what string, c admin.Change) error {
	fmt.Fprintf(w, "%s %s; nothing changed:\n", what, c.Result)
	for _, e := range c.Errors {
		fmt.Fprintln(w, e)
	}
	return errReported
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

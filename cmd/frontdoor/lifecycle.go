package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
)

func init() {
	register("reload", "re-read a gateway's configuration; new logins use it, open sessions go on (admin API)", stdout(runReload))
	register("upgrade", "start the installed binary in a gateway's place; it takes the sockets over, open sessions stay (admin API)", stdout(runUpgrade))
}

// runReload: POST /v1/reload. Exit 0 when the configuration is in use;
// otherwise each problem on a line of its own and exit 1.
func runReload(ctx context.Context, args []string, out io.Writer) error {
	fs, a, o := adminFlags("reload")
	usage := "frontdoor reload " + adminUsage
	if err := parseFlags(fs, args, usage, o, tableJSON...); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	var r admin.Reload
	raw, err := postResult(ctx, a, "/v1/reload", &r, func() string { return r.Result })
	if err != nil {
		return err
	}
	if *o == "json" {
		out.Write(raw)
	}
	if r.Result != admin.ResultOK {
		return report(os.Stderr, "reload", r.Result, r.Error)
	}
	if *o != "json" {
		fmt.Fprintln(out, "reloaded: new logins use the new configuration; open sessions go on as they started")
	}
	return nil
}

// runUpgrade: POST /v1/upgrade, then GET /v1/status until the new process
// answers on the handed-over socket, or the old one reports a failure.
func runUpgrade(ctx context.Context, args []string, out io.Writer) error {
	fs, a, o := adminFlags("upgrade")
	wait := fs.Duration("wait", 3*time.Minute, "how long to wait for the outcome (0: return once started)")
	usage := "frontdoor upgrade [--wait 3m] " + adminUsage
	if err := parseFlags(fs, args, usage, o, "table"); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	var before admin.Status
	if err := a.get(ctx, "/v1/status", &before, nil); err != nil {
		return err
	}
	old := servingPID(before)
	var u admin.Upgrade
	if _, err := postResult(ctx, a, "/v1/upgrade", &u, func() string { return u.Result }); err != nil {
		return err
	}
	if u.Result != admin.ResultStarted {
		return report(os.Stderr, "upgrade", u.Result, u.Error)
	}
	fmt.Fprintf(out, "upgrade started: pid %d starts the installed binary, which takes the sockets over once ready\n", old)
	if *wait == 0 {
		return nil
	}
	deadline := time.Now().Add(*wait)
	for {
		var st admin.Status
		if err := a.get(ctx, "/v1/status", &st, nil); err == nil {
			if pid := servingPID(st); pid != old && pid != 0 {
				fmt.Fprintf(out, "upgraded: pid %d serves the gateway now\n", pid)
				for _, p := range st.Processes {
					if p.PID == old {
						fmt.Fprintf(out, "pid %d relays its %d sessions until they end or %s\n", p.PID, p.Sessions, stampOr(p.DrainDeadline, "-"))
					}
				}
				return nil
			}
			if l := st.LastUpgrade; l != nil && !l.At.Before(u.At) && l.Result != admin.ResultStarted && l.Result != admin.ResultOK {
				return report(os.Stderr, "upgrade", l.Result, l.Error)
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

// servingPID is the pid of the gateway process that takes logins (0: none).
func servingPID(st admin.Status) int {
	for _, p := range st.Processes {
		if p.State != admin.ProcessDraining {
			return p.PID
		}
	}
	return 0
}

// postResult sends a state change and decodes the answer into v, whatever
// its status, as long as it has a result.
func postResult(ctx context.Context, a *adminTarget, path string, v any, result func() string) ([]byte, error) {
	code, b, err := a.send(ctx, http.MethodPost, path, []byte("{}"))
	if err != nil {
		return nil, err
	}
	if jerr := json.Unmarshal(b, v); jerr != nil || result() == "" {
		if code == http.StatusOK {
			return nil, fmt.Errorf("admin API %s: %w", path, errors.Join(jerr, errors.New("no result")))
		}
		return nil, fmt.Errorf("admin API %s: %d %s: %s", path, code, http.StatusText(code), oneLine(string(b)))
	}
	return b, nil
}

// report prints a change that did not happen, one problem per line, for
// an exit status of 1.
func report(w io.Writer, what, result, problems string) error {
	fmt.Fprintf(w, "%s %s; nothing changed:\n", what, result)
	for _, l := range strings.Split(strings.TrimSpace(problems), "\n") {
		fmt.Fprintln(w, l)
	}
	return errReported
}

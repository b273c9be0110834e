package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
)

func init() {
	register("lock", "lock USER's account on every gateway: no new logins, optionally end their sessions (admin API)", stdout(runLock))
	register("unlock", "lift the lock of USER's account on every gateway (admin API)", stdout(runUnlock))
	register("locks", "list the account locks in force (admin API)", stdout(runLocks))
}

func runLock(ctx context.Context, args []string, out io.Writer) error {
	fs, a, o := adminFlags("lock")
	reason := fs.String("reason", "", "why, for the admins: audit, `frontdoor locks`; never shown to the user (at most 200 bytes)")
	message := fs.String("message", "", "what the user is told when refused and on the terminals of sessions it ends (default: only that the account is locked)")
	expire := fs.String("expire", "", "end the lock after DURATION (90m, 8h, 7d) or at TIME (2026-12-24 or RFC 3339); default: until unlocked")
	end := fs.Bool("end-sessions", false, "close the user's open sessions on every gateway, telling interactive ones why")
	force := fs.Bool("force", false, "lock a name the directory has no account for")
	usage := "frontdoor lock " + adminUsage + " [--reason TEXT] [--message TEXT] [--expire DURATION|TIME] [--end-sessions] [--force] USER"
	if err := parseFlags(fs, args, usage, o, tableJSON...); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	req := admin.LockRequest{User: fs.Arg(0), Reason: withSudo(*reason), Message: *message, EndSessions: *end, Force: *force}
	if *expire != "" {
		d, t, err := parseExpire(*expire, time.Now())
		if err != nil {
			return fmt.Errorf("%w: --expire %q: %v; usage: %s", errUsage, *expire, err, usage)
		}
		if d > 0 {
			req.For = d.String()
		} else {
			req.Until = t
		}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var l admin.Lock
	if err := a.post(ctx, "/v1/lock", body, &l); err != nil {
		return err
	}
	if *o == "json" {
		return writeJSON(out, l)
	}
	fmt.Fprintf(out, "%s: locked on every gateway (by %s) %s", l.User, l.By, untilText(l.Until))
	if l.EndSessions {
		fmt.Fprint(out, "; open sessions are being closed")
	}
	fmt.Fprintln(out)
	return nil
}

func runUnlock(ctx context.Context, args []string, out io.Writer) error {
	fs, a, o := adminFlags("unlock")
	usage := "frontdoor unlock " + adminUsage + " USER"
	if err := parseFlags(fs, args, usage, o, tableJSON...); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	body, err := json.Marshal(admin.UnlockRequest{User: fs.Arg(0)})
	if err != nil {
		return err
	}
	var u admin.Unlocked
	if err := a.post(ctx, "/v1/unlock", body, &u); err != nil {
		return err
	}
	if *o == "json" {
		return writeJSON(out, u)
	}
	if u.WasLocked {
		fmt.Fprintf(out, "%s: unlocked on every gateway (by %s)\n", u.User, u.By)
	} else {
		fmt.Fprintf(out, "%s: was not locked on this gateway; unlocked on every gateway anyway (by %s)\n", u.User, u.By)
	}
	return nil
}

func runLocks(ctx context.Context, args []string, out io.Writer) error {
	var ls []admin.Lock
	if done, err := listCommand(ctx, "locks", args, "/v1/locks", out, &ls); done || err != nil {
		return err
	}
	return locksTable(out, ls, time.Now())
}

func locksTable(out io.Writer, ls []admin.Lock, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tBY\tSINCE\tUNTIL\tSESSIONS\tREASON\tMESSAGE")
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%s\t%s ago\t%s\t%s\t%s\t%s\n", l.User, l.By, now.Sub(l.At).Round(time.Second),
			stampOr(l.Until, "unlocked by hand"), sessionsText(l), cmpOr(l.Reason, "-"), cmpOr(l.Message, "-"))
	}
	if len(ls) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t\t\t")
	}
	return tw.Flush()
}

func untilText(t time.Time) string {
	if t.IsZero() {
		return "until unlocked"
	}
	return "until " + t.UTC().Format(time.RFC3339)
}

// withSudo notes who ran sudo: the gateway records the socket peer's own
// identity (root, then) whatever this says.
func withSudo(note string) string {
	if su := os.Getenv("SUDO_USER"); su != "" {
		return strings.TrimSpace(note + " (sudo by " + su + ")")
	}
	return note
}

// parseExpire reads --expire: a duration (Go's, plus whole days "7d"),
// or a time (RFC 3339, "2006-01-02 15:04" or a date, in local time)
// after now.
func parseExpire(s string, now time.Time) (time.Duration, time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil {
			if n <= 0 {
				return 0, time.Time{}, fmt.Errorf("not a positive number of days")
			}
			return time.Duration(n) * 24 * time.Hour, time.Time{}, nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, time.Time{}, fmt.Errorf("not a positive duration")
		}
		return d, time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"} {
		t, err := time.ParseInLocation(layout, s, time.Local)
		if err != nil {
			continue
		}
		if !t.After(now) {
			return 0, time.Time{}, fmt.Errorf("%s is past", t.Format(time.RFC3339))
		}
		return 0, t, nil
	}
	return 0, time.Time{}, fmt.Errorf("want a duration (90m, 8h, 7d) or a time (2026-12-24, 2026-12-24 18:00, RFC 3339)")
}

// lockedSection is the status's locked accounts (without reasons).
func lockedSection(tw io.Writer, ls []admin.Lock) {
	fmt.Fprintln(tw, "\nLOCKED\tBY\tUNTIL\tSESSIONS\t")
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", l.User, l.By, stampOr(l.Until, "unlocked by hand"), sessionsText(l))
	}
	if len(ls) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t")
	}
}

// sessionsText says what the lock does to the user's open sessions.
func sessionsText(l admin.Lock) string {
	if l.EndSessions {
		return "ended"
	}
	return "left open"
}

package lifecycle

import (
	"fmt"
	"time"
)

// What the users of a draining process are told, and when: at the start
// of the drain, 10 and 1 minute before its deadline (each only if the
// drain is longer than that), and why their session ends if the deadline
// closes it. One line each, on the terminal of every interactive session
// (proxy.Relay.Notify).

// noticesBefore are the warnings before the deadline.
var noticesBefore = []time.Duration{10 * time.Minute, time.Minute}

// notice is one warning: when, and what it says.
type notice struct {
	at   time.Time
	text string
}

// drainNotices are the warnings of a drain from start to deadline, in
// order, the first at start.
func drainNotices(reason string, start, deadline time.Time) []notice {
	out := []notice{{at: start, text: startText(reason, deadline.Sub(start), deadline)}}
	for _, before := range noticesBefore {
		if at := deadline.Add(-before); at.After(start) {
			out = append(out, notice{at: at, text: fmt.Sprintf("this session will be closed in %s (%s); %s", short(before), why(reason), reconnect(reason))})
		}
	}
	return out
}

func startText(reason string, left time.Duration, deadline time.Time) string {
	if reason == ReasonUpgrade {
		return fmt.Sprintf("this gateway has been upgraded: this session goes on until it ends, or at most %s (until %s UTC); new logins already use the new version",
			short(left), deadline.UTC().Format("15:04"))
	}
	return fmt.Sprintf("this gateway is shutting down: this session goes on until it ends, or at most %s (until %s UTC); %s",
		short(left), deadline.UTC().Format("15:04"), reconnect(reason))
}

// closeText is why the deadline closes a session.
func closeText(reason string, timeout time.Duration) string {
	return fmt.Sprintf("%s (drain timeout %s); %s", why(reason), short(timeout), reconnect(reason))
}

func why(reason string) string {
	if reason == ReasonUpgrade {
		return "gateway upgraded"
	}
	return "gateway shutting down"
}

func reconnect(reason string) string {
	if reason == ReasonUpgrade {
		return "log in again to continue"
	}
	return "log in again to continue through another gateway"
}

// short writes a duration the way a person reads it: 30m, 1h30m, 45s.
func short(d time.Duration) string {
	d = d.Round(time.Second)
	s := d.String()
	for _, zero := range []struct{ from, to string }{{"h0m0s", "h"}, {"m0s", "m"}} {
		if len(s) > len(zero.from) && s[len(s)-len(zero.from):] == zero.from {
			return s[:len(s)-len(zero.from)] + zero.to
		}
	}
	return s
}

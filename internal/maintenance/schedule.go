// Package maintenance tells the users of a login node drained for
// maintenance what is coming, and closes their sessions at the deadline.
//
// A maintenance drain (cluster.DrainUntil; `frontdoor drain NODE
// --deadline D --message M`, or HyperPod discovery) is in the gateways'
// shared state. Every gateway process runs one Watcher over its own
// sessions: each session on a drained node gets a one-line notice on its
// terminal when the watcher first sees it there, again 10 and 1 minute
// before the deadline (Warnings), and is closed at the deadline with the
// reason on its terminal. Sessions without a terminal (commands, scp,
// sftp) get no text and are closed all the same.
//
// The schedule is a pure function of the drain, the time and what the
// session was told already (plan, below), so it is table-tested with
// made-up times; the Watcher applies it on a timer. Nothing is kept but
// which notice each session had: a process that takes over (a reload
// keeps the watcher; an upgrade's new process starts its own) finds the
// drain in the shared state, and its sessions get the notice that is due
// for them, never the whole series at once.
package maintenance

import (
	"fmt"
	"strings"
	"time"
)

// DefaultWarnings are when users are warned before the deadline.
var DefaultWarnings = []time.Duration{10 * time.Minute, time.Minute}

// Drain is a node drained with a deadline.
type Drain struct {
	Node     string
	Deadline time.Time
	Message  string
}

// told is what one session was told of one drain: its deadline and message
// (a changed drain starts over) and when the last notice went out.
type told struct {
	deadline time.Time
	message  string
	at       time.Time
}

// step is what is due for one session now.
type step int

const (
	stepNone step = iota
	stepStart
	stepWarn
	stepClose
)

// plan decides what a session on d's node is due at now, given what it
// was told (nil: nothing yet), and when it is next due for something. A
// session is told at once, warned at each warning point after the last
// notice it had (a session first told 30 seconds before the deadline is
// not warned again for the minute mark it already passed), and closed at
// the deadline.
func plan(d Drain, t *told, now time.Time, warnings []time.Duration) (step, time.Duration, time.Time) {
	if !now.Before(d.Deadline) {
		return stepClose, 0, time.Time{}
	}
	if t == nil || !t.deadline.Equal(d.Deadline) || t.message != d.Message {
		return stepStart, 0, nextWarning(d.Deadline, now, warnings)
	}
	due := time.Duration(-1)
	for _, w := range warnings {
		if at := d.Deadline.Add(-w); !now.Before(at) && t.at.Before(at) && (due < 0 || w < due) {
			due = w
		}
	}
	next := nextWarning(d.Deadline, now, warnings)
	if due >= 0 {
		return stepWarn, due, next
	}
	return stepNone, 0, next
}

// nextWarning is the first warning point or the deadline after now.
func nextWarning(deadline, now time.Time, warnings []time.Duration) time.Time {
	next := deadline
	for _, w := range warnings {
		if at := deadline.Add(-w); at.After(now) && at.Before(next) {
			next = at
		}
	}
	return next
}

// startText is the first notice, warnText the ones before the deadline,
// closeText why the session ends (Relay.Close says "closing this
// session: " before it).
func startText(d Drain, now time.Time) string {
	return fmt.Sprintf("login node %s goes down for maintenance at %s UTC, in %s%s: this session will be closed then; save your work (new logins go to other nodes)",
		d.Node, d.Deadline.UTC().Format("15:04:05"), short(d.Deadline.Sub(now)), because(d.Message))
}

func warnText(d Drain, before time.Duration) string {
	return fmt.Sprintf("login node %s goes down for maintenance in %s%s: this session will be closed then; save your work",
		d.Node, short(before), because(d.Message))
}

func closeText(d Drain) string {
	return fmt.Sprintf("login node %s is going down for maintenance%s; log in again to continue on another node", d.Node, because(d.Message))
}

func because(message string) string {
	if message = strings.TrimSpace(message); message == "" {
		return ""
	}
	return " (" + message + ")"
}

// short writes a duration the way a person reads it: 30m, 1h30m, 45s.
func short(d time.Duration) string {
	s := max(d, 0).Round(time.Second).String()
	for _, zero := range []struct{ from, to string }{{"h0m0s", "h"}, {"m0s", "m"}} {
		if strings.HasSuffix(s, zero.from) && len(s) > len(zero.from) {
			return strings.TrimSuffix(s, zero.from) + zero.to
		}
	}
	return s
}

package admin

import (
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
)

// maintenanceSource is fakeSource that drains with a deadline, checking
// the message and deadline as the gateway's cluster does.
type maintenanceSource struct {
	fakeSource
	deadline time.Time
	message  string
}

func (m *maintenanceSource) DrainUntil(node string, deadline time.Time, message, by string) error {
	if err := cluster.CheckDrainDeadline(deadline, time.Now()); err != nil {
		return err
	}
	if err := cluster.CheckDrainText(message, cluster.MaxDrainMessage); err != nil {
		return err
	}
	m.mu.Lock()
	m.deadline, m.message = deadline, message
	m.drains = append(m.drains, node+" until "+by)
	m.mu.Unlock()
	return nil
}

// POST /v1/drain with a deadline: by the gateway's clock or absolute;
// hostile messages and deadlines refused and audited as failures; without
// a deadline, today's drain with the message as its comment.
func TestMaintenanceDrain(t *testing.T) {
	src := &maintenanceSource{}
	base := startTCP(t, &src.fakeSource, func(o *Options) { o.Source = src; o.Audit = src })
	const json = "application/json"
	post := func(body string) (int, string) {
		t.Helper()
		status, b, _ := do(t, nil, base, req{method: "POST", path: "/v1/drain", token: opsSecret, ctype: json, body: body})
		return status, b
	}
	start := time.Now()
	status, body := post(`{"node": "login1", "deadline_in": "30m", "message": "kernel update", "comment": "ticket 42"}`)
	if status != 200 || !strings.Contains(body, `"message": "kernel update"`) || !strings.Contains(body, `"deadline"`) {
		t.Fatalf("drain with deadline_in: %d %s", status, body)
	}
	if d := src.deadline.Sub(start); d < 30*time.Minute || d > 31*time.Minute || src.message != "kernel update" {
		t.Fatalf("deadline in %s, message %q", d, src.message)
	}
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	if status, body := post(`{"node": "login1", "deadline": "` + at.Format(time.RFC3339) + `", "message": "firmware"}`); status != 200 || !src.deadline.Equal(at) {
		t.Fatalf("absolute deadline: %d %s (%v)", status, body, src.deadline)
	}
	ev := src.audited()
	if len(ev) != 2 || ev[0].User != "token:ops" || !strings.Contains(ev[0].Reason, `"kernel update"`) || !strings.Contains(ev[0].Reason, "ticket 42") {
		t.Fatalf("audit %+v", ev)
	}
	before := src.count()
	for _, tc := range []struct{ name, body, want string }{
		{"escape sequence", `{"node": "login1", "deadline_in": "30m", "message": "\u001b[2J\u001b[Hyou have been hacked"}`, "U+001B"},
		{"newline", `{"node": "login1", "deadline_in": "30m", "message": "a\nfrontdoor: fake"}`, "U+000A"},
		{"bidi", `{"node": "login1", "deadline_in": "30m", "message": "\u202Eevil"}`, "U+202E"},
		{"huge", `{"node": "login1", "deadline_in": "30m", "message": "` + strings.Repeat("A", 3000) + `"}`, "at most 200"},
		{"larger than a request", `{"node": "login1", "deadline_in": "30m", "message": "` + strings.Repeat("A", 5000) + `"}`, "too large"},
		{"past", `{"node": "login1", "deadline": "2001-01-01T00:00:00Z"}`, "not in the future"},
		{"negative", `{"node": "login1", "deadline_in": "-5m"}`, "positive duration"},
		{"overflowing", `{"node": "login1", "deadline_in": "9999999h"}`, "positive duration"},
		{"a year", `{"node": "login1", "deadline_in": "8760h"}`, "more than"},
		{"both", `{"node": "login1", "deadline_in": "5m", "deadline": "2030-01-01T00:00:00Z"}`, "no deadline with it"},
		{"not a duration", `{"node": "login1", "deadline_in": "soon"}`, "positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(tc.body)
			if status != 400 || !strings.Contains(body, tc.want) || strings.ContainsAny(body, "\x1b\u202e") {
				t.Fatalf("%d %q, want 400 with %q", status, body, tc.want)
			}
		})
	}
	if src.count() != before {
		t.Fatalf("a refused drain was applied: %v", src.drains)
	}
	// Without a deadline: the plain drain, the message its comment.
	if status, body := post(`{"node": "login2", "message": "checking"}`); status != 200 || src.lastDrain() != "login2 on token:ops" {
		t.Fatalf("plain drain: %d %s, %s", status, body, src.lastDrain())
	}
	if ev := src.audited(); !strings.Contains(ev[len(ev)-1].Reason, "drain (checking)") {
		t.Fatalf("audit %+v", ev[len(ev)-1])
	}
}

// A source that cannot drain with a deadline says so.
func TestMaintenanceDrainUnsupported(t *testing.T) {
	base := startTCP(t, &fakeSource{}, nil)
	status, body, _ := do(t, nil, base, req{method: "POST", path: "/v1/drain", token: opsSecret, ctype: "application/json",
		body: `{"node": "login1", "deadline_in": "30m"}`})
	if status != 501 {
		t.Fatalf("%d %s", status, body)
	}
}

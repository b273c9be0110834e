package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// Messages of a type a reader does not know (a later binary's) are
// skipped; a malformed one ends the channel; an overlong line too.
func TestLineReader(t *testing.T) {
	in := strings.Join([]string{
		`{"t":"takeover","v":1,"pid":7,"member":"gw1"}`,
		`{"t":"hint-from-the-future","x":[1,2,3]}`,
		`{"t":"set","user":"alice","node":"login1","n":2,"extra":"ignored"}`,
		`{"t":"drain","deadline":"2026-12-03T15:00:00Z"}`,
		`{"t":"set","user":"bob","node":"login1","n":-1}`,
	}, "\n") + "\n"
	r := newLineReader(strings.NewReader(in))
	if m, err := r.next("takeover"); err != nil || m.PID != 7 || m.Member != "gw1" || m.V != 1 {
		t.Fatalf("takeover: %+v, %v", m, err)
	}
	if m, err := r.next("set", "drain"); err != nil || m.User != "alice" || m.N != 2 {
		t.Fatalf("set after an unknown type: %+v, %v", m, err)
	}
	if m, err := r.next("set", "drain"); err != nil || !m.Deadline.Equal(time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)) {
		t.Fatalf("drain: %+v, %v", m, err)
	}
	if _, err := r.next("set"); err == nil || !strings.Contains(err.Error(), "negative count") {
		t.Fatalf("a negative count: %v", err)
	}
	long := `{"t":"audit","event":{"reason":"` + strings.Repeat("x", maxLine) + `"}}` + "\n"
	if _, err := newLineReader(strings.NewReader(long)).next("audit"); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("an overlong line: %v", err)
	}
	if _, err := newLineReader(strings.NewReader(`{"t":"set"`)).next("set"); !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Fatalf("a cut line: %v", err)
	}
}

// What one side encodes, the other decodes to the same message.
func FuzzDecodeMessage(f *testing.F) {
	for _, m := range []message{
		{T: "takeover", V: protocolVersion, PID: 1, Member: "gw1"},
		{T: "sessions", PID: 2, Sessions: []sessionCount{{User: "alice", Node: "login1", N: 3}}},
		{T: "set", sessionCount: sessionCount{User: "bob", Node: "login2", N: 0}},
		{T: "drain", Deadline: time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)},
		{T: "identities", Identities: json.RawMessage(`{"v":1,"entries":[]}`)},
	} {
		b, _ := json.Marshal(m)
		f.Add(b)
	}
	f.Add([]byte(`{"t":"sessions","sessions":[{"user":"","node":"x","n":1}]}`))
	f.Add([]byte(`{"t":""}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := decodeMessage(line)
		if err != nil {
			return
		}
		if m.T == "" || m.N < 0 {
			t.Fatalf("accepted %+v", m)
		}
		for _, s := range m.Sessions {
			if s.N < 0 || s.User == "" || s.Node == "" {
				t.Fatalf("accepted session count %+v", s)
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeMessage(b)
		if err != nil {
			t.Fatalf("re-encoded %s: %v", b, err)
		}
		b2, _ := json.Marshal(again)
		if !bytes.Equal(b, b2) {
			t.Fatalf("round trip: %s != %s", b, b2)
		}
	})
}

// The old process's cached identities reach the new one's takeover when it
// sends them (before "sessions"); an old process that sends none (an older
// binary) leaves the new one with an empty cache, not a failed takeover;
// a new process that does not know "identities" (an older binary) skips
// them and reads the sessions.
func TestTakeoverIdentities(t *testing.T) {
	ids := `{"v":1,"entries":[{"name":"alice"}]}`
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"sent", []string{`{"t":"identities","identities":` + ids + `}`, `{"t":"sessions","pid":9,"nodes":["login1"]}`}, ids},
		{"not sent", []string{`{"t":"sessions","pid":9,"nodes":["login1"]}`}, ""},
		{"sent twice", []string{`{"t":"identities","identities":` + ids + `}`, `{"t":"identities","identities":{"v":9}}`,
			`{"t":"sessions","pid":9,"nodes":["login1"]}`}, ids},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, theirs, err := socketPair()
			if err != nil {
				t.Fatal(err)
			}
			defer ours.Close()
			p, err := newPredecessor(theirs, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer p.conn.Close()
			go func() { // the old process
				if _, err := newLineReader(ours).next("takeover"); err != nil {
					return
				}
				ours.Write([]byte(strings.Join(tc.lines, "\n") + "\n"))
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := p.takeover(ctx, "gw1"); err != nil {
				t.Fatal(err)
			}
			if got := string(p.identities()); got != tc.want {
				t.Errorf("identities %q, want %q", got, tc.want)
			}
			if pid, _, _, ok := p.status(); !ok || pid != 9 || !slices.Equal(p.nodesUp(), []string{"login1"}) {
				t.Errorf("the sessions message after the identities: pid %d, nodes %v", pid, p.nodesUp())
			}
		})
	}
	// An older new process reads only "sessions": the identities are
	// skipped like any type it does not know.
	r := newLineReader(strings.NewReader(`{"t":"identities","identities":` + ids + "}\n" + `{"t":"sessions","pid":9}` + "\n"))
	if m, err := r.next("sessions"); err != nil || m.PID != 9 {
		t.Fatalf("sessions after identities, read by an older binary: %+v, %v", m, err)
	}
}

package lifecycle

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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

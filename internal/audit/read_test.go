package audit

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func gz(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

const (
	ev1 = `{"time":"2026-12-03T06:00:00Z","type":"session.start","gateway":"gw1","session":"s1","user":"ann"}`
	ev2 = `{"time":"2026-12-03T07:00:00Z","type":"session.end","gateway":"gw1","session":"s1","user":"ann","duration_s":3600}`
	hdr = `{"time":"2026-12-03T07:01:00Z","type":"batch","v":1,"gateway":"gw1","chain":"20261203T060000Z-00c0ffee","seq":2,` +
		`"prev":"5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef","events":2,"first":"2026-12-03T06:00:00Z","last":"2026-12-03T07:00:00Z"}`
)

// chained is a batch object as the S3 sink writes it: a gzip member with
// the header, then one with the events.
func chained() []byte { return append(gz(hdr+"\n"), gz(ev1+"\n"+ev2+"\n")...) }

type scanned struct {
	lines   []int
	events  []string
	headers int
	errs    []error
}

func scan(t *testing.T, data []byte) (scanned, error) {
	t.Helper()
	var s scanned
	err := Scan(bytes.NewReader(data), func(r Record) error {
		s.lines = append(s.lines, r.Line)
		switch {
		case r.Err != nil:
			s.errs = append(s.errs, r.Err)
		case r.Header != nil:
			s.headers++
		default:
			s.events = append(s.events, r.Event.Type)
		}
		return nil
	})
	return s, err
}

func TestScan(t *testing.T) {
	long := `{"time":"2026-12-03T06:00:00Z","type":"auth","reason":"` + strings.Repeat("x", MaxLine) + `"}`
	for _, tc := range []struct {
		name    string
		data    []byte
		events  int
		headers int
		bad     int
		err     bool
	}{
		{"plain lines", []byte(ev1 + "\n\n" + ev2 + "\n"), 2, 0, 0, false},
		{"no final newline", []byte(ev1 + "\n" + ev2), 2, 0, 0, false},
		{"torn last line", []byte(ev1 + "\n" + ev2[:40]), 1, 0, 1, false},
		{"gzip", gz(ev1 + "\n" + ev2 + "\n"), 2, 0, 0, false},
		{"chained batch: two gzip members", chained(), 2, 1, 0, false},
		{"gzip cut short: what came before, then the cut", chained()[:len(chained())-12], 2, 1, 1, false},
		{"a line too long, then a good one", []byte(ev1 + "\n" + long + "\n" + ev2 + "\n"), 2, 0, 1, false},
		{"no time", []byte(`{"type":"auth"}` + "\n" + ev1), 1, 0, 1, false},
		{"not JSON", []byte("hello\n" + ev1), 1, 0, 1, false},
		{"broken gzip header", []byte("\x1f\x8b garbage"), 0, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scan(t, tc.data)
			if (err != nil) != tc.err || len(s.events) != tc.events || s.headers != tc.headers || len(s.errs) != tc.bad {
				t.Errorf("events %d headers %d bad %v err %v; want %d %d %d err=%v", len(s.events), s.headers, s.errs, err,
					tc.events, tc.headers, tc.bad, tc.err)
			}
			for i := 1; i < len(s.lines); i++ {
				if s.lines[i] <= s.lines[i-1] {
					t.Errorf("line numbers %v", s.lines)
				}
			}
		})
	}
	s, _ := scan(t, []byte(ev1+"\n"+long+"\n"+ev2+"\n"))
	if !errors.Is(s.errs[0], ErrLineTooLong) || s.lines[1] != 2 || s.lines[2] != 3 {
		t.Errorf("long line: %v at %v", s.errs, s.lines)
	}
}

func TestParseBatch(t *testing.T) {
	b, err := ParseBatch(chained())
	if err != nil || b.Header == nil || b.Header.Seq != 2 || len(b.Events) != 2 || b.Hash != Hash(chained()) {
		t.Fatalf("%+v %v", b, err)
	}
	// An object from before chaining: no header, still a batch.
	if b, err := ParseBatch(gz(ev1 + "\n")); err != nil || b.Header != nil || len(b.Events) != 1 {
		t.Errorf("unchained: %+v %v", b, err)
	}
	for name, obj := range map[string][]byte{
		"plain text":          []byte(ev1 + "\n"),
		"header not first":    append(gz(ev1+"\n"), gz(hdr+"\n")...),
		"a bad line":          gz(hdr + "\n" + ev1 + "\nnot json\n"),
		"cut short":           chained()[:len(chained())-12],
		"header of bad shape": gz(strings.Replace(hdr, `"seq":2`, `"seq":"two"`, 1) + "\n"),
	} {
		var be *BatchError
		if _, err := ParseBatch(obj); !errors.As(err, &be) {
			t.Errorf("%s: %v, want a *BatchError", name, err)
		}
	}
	h, err := ReadHeader(chained())
	if err != nil || h == nil || h.Chain != "20261203T060000Z-00c0ffee" || !h.First.Equal(time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)) {
		t.Errorf("ReadHeader: %+v %v", h, err)
	}
}

// FuzzScan: the reader of every audit record (usage, verify, the sink
// reading its own spool) on hostile bytes. It never panics, numbers lines
// upwards, and every record it returns re-encodes to one that scans back
// the same.
func FuzzScan(f *testing.F) {
	f.Add([]byte(ev1 + "\n" + ev2 + "\n"))
	f.Add(chained())
	f.Add(gz(ev1 + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		last := 0
		Scan(bytes.NewReader(data), func(r Record) error {
			if r.Line <= last {
				t.Fatalf("line %d after %d", r.Line, last)
			}
			last = r.Line
			var v any = r.Event
			switch {
			case r.Err != nil:
				return nil
			case r.Header != nil:
				v = r.Header
			case r.Event.Time.IsZero() || r.Event.Type == TypeBatch:
				t.Fatalf("event %+v", r.Event)
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil // a time outside what JSON can hold
			}
			again := parseLine(1, b)
			if again.Err != nil || (again.Header != nil) != (r.Header != nil) {
				t.Fatalf("%s does not scan back: %v", b, again.Err)
			}
			return nil
		})
	})
}

// FuzzParseBatch: the strict batch parser frontdoor audit verify runs on
// every object of a bucket a stolen gateway writes into.
func FuzzParseBatch(f *testing.F) {
	f.Add(chained())
	f.Add(gz(ev1 + "\n"))
	f.Add(append(gz(ev1+"\n"), gz(hdr+"\n")...))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBatch(data)
		if b.Hash != Hash(data) {
			t.Fatal("hash is not the object's")
		}
		if err != nil {
			var be *BatchError
			if !errors.As(err, &be) {
				t.Fatalf("error %T %v is not a *BatchError", err, err)
			}
			return
		}
		if b.Header != nil && b.Header.Type != TypeBatch {
			t.Fatalf("header of type %q", b.Header.Type)
		}
		for _, e := range b.Events {
			if e.Time.IsZero() || e.Type == TypeBatch {
				t.Fatalf("event %+v", e)
			}
		}
	})
}

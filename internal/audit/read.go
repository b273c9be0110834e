package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Reading audit records back, for everything that does (frontdoor usage,
// frontdoor audit verify, the S3 sink itself). Every byte read here may
// have been written by someone hostile: a stolen gateway writes its own
// batches, and a bucket or a file can be tampered with. So: no line
// longer than MaxLine is buffered, a bad line is reported and skipped
// (never fatal to the lines after it), and nothing here panics (fuzzed).
//
// An audit stream is JSON lines, gzip'ed or not (told by the first bytes;
// several gzip members read as one stream). Each line is an Event, or a
// BatchHeader: the first line of every batch object the S3 sink writes
// since batches are chained. Readers that know nothing of headers see a
// record of type "batch" with a time, and skip it like any type they do
// not count.

// MaxLine is the longest record read; a longer line is reported and
// skipped.
const MaxLine = 1 << 20

// TypeBatch is the type of a batch header record.
const TypeBatch = "batch"

// BatchHeader is the first record of a batch object in S3. It ties the
// batch into its gateway's hash chain: Prev is the SHA-256 of the
// previous batch object of the same chain, byte for byte as stored, so
// changing, removing or reordering any batch but the newest breaks the
// chain where it happened (see internal/audit/s3sink and verify).
type BatchHeader struct {
	// Time is when the batch was linked into the chain.
	Time time.Time `json:"time"`
	// Type is TypeBatch.
	Type string `json:"type"`
	// V is the header format version (1).
	V int `json:"v"`
	// Gateway wrote the batch; its events are its own.
	Gateway string `json:"gateway"`
	// Chain names the chain: a gateway starts a new one only when it has
	// lost its chain state (Restart says why).
	Chain string `json:"chain"`
	// Seq is the batch's place in the chain, from 1, without gaps.
	Seq uint64 `json:"seq"`
	// Prev is the hex SHA-256 of the chain's previous batch object; empty
	// only at Seq 1.
	Prev string `json:"prev,omitempty"`
	// Restart says why this chain began (set at Seq 1 only).
	Restart string `json:"restart,omitempty"`
	// Events is the number of event lines after the header.
	Events int `json:"events"`
	// First and Last are the earliest and latest event times in the batch.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Dropped counts events, by class, that this gateway's S3 spool
	// dropped since the previous batch (as far as the process knew: a
	// crash forgets its count).
	Dropped map[string]int64 `json:"dropped,omitempty"`
}

// HeaderVersion is the BatchHeader format written.
const HeaderVersion = 1

// Hash is the chain hash of a batch object: hex SHA-256 of its bytes.
func Hash(object []byte) string {
	sum := sha256.Sum256(object)
	return hex.EncodeToString(sum[:])
}

// Record is one line of an audit stream as Scan found it: exactly one of
// Header, Err, or (neither) Event is meaningful.
type Record struct {
	// Line is the 1-based line number in the (decompressed) stream.
	Line   int
	Event  Event
	Header *BatchHeader
	// Err says why the line is not a record: ErrLineTooLong, ErrTruncated,
	// or a JSON or field error.
	Err error
}

var (
	// ErrLineTooLong marks a line longer than MaxLine (skipped).
	ErrLineTooLong = errors.New("line longer than audit.MaxLine")
	// ErrTruncated marks a gzip stream cut short: a copy taken while it was
	// written, a torn upload. What came before it was read.
	ErrTruncated = errors.New("gzip stream cut short")
	// ErrNoTime marks a record without a time (every record has one).
	ErrNoTime = errors.New("record has no time")
)

// Scan reads the audit stream r and calls fn for every non-blank line in
// order; fn's error stops the scan and is returned. A stream cut short
// inside gzip ends with a Record carrying ErrTruncated and a nil error;
// other read errors (a broken gzip header or checksum, the network) are
// returned.
func Scan(r io.Reader, fn func(Record) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	var long []byte // a line longer than br's buffer, being assembled
	tooLong := false
	line := 0
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if !tooLong && len(long)+len(chunk) <= MaxLine {
				long = append(long, chunk...)
			} else {
				tooLong, long = true, long[:0]
			}
			continue
		case err != nil && !errors.Is(err, io.EOF):
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fn(Record{Line: line + 1, Err: ErrTruncated})
			}
			return err
		}
		if len(chunk) > 0 || len(long) > 0 || tooLong {
			line++
			var rec Record
			switch {
			case tooLong || len(long)+len(chunk) > MaxLine+1:
				rec = Record{Line: line, Err: ErrLineTooLong}
			case len(long) > 0:
				rec = parseLine(line, append(long, chunk...))
			default:
				rec = parseLine(line, chunk)
			}
			long, tooLong = long[:0], false
			if rec.Line != 0 { // not blank
				if ferr := fn(rec); ferr != nil {
					return ferr
				}
			}
		}
		if err != nil { // io.EOF
			return nil
		}
	}
}

// parseLine decodes one line; a blank line gives a Record with Line 0.
func parseLine(n int, b []byte) Record {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return Record{}
	}
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		return Record{Line: n, Err: err}
	}
	if e.Time.IsZero() {
		return Record{Line: n, Err: ErrNoTime}
	}
	if e.Type != TypeBatch {
		return Record{Line: n, Event: e}
	}
	h := new(BatchHeader)
	if err := json.Unmarshal(b, h); err != nil {
		return Record{Line: n, Err: fmt.Errorf("batch header: %w", err)}
	}
	return Record{Line: n, Header: h}
}

// Batch is one batch object, parsed strictly (ParseBatch).
type Batch struct {
	// Header is the chain header; nil for an object written before
	// batches were chained.
	Header *BatchHeader
	Events []Event
	// Hash is the object's chain hash (Hash of its bytes).
	Hash string
}

// BatchError says what is wrong with a batch object and on which line.
type BatchError struct {
	Line int // 0: the object as a whole
	Err  error
}

func (e *BatchError) Error() string {
	if e.Line == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// ParseBatch parses a whole batch object as the S3 sink writes it: gzip'ed
// JSON lines, a header first (or none, for an object written before
// chaining) and events after it, every line a record. The first fault is
// returned as a *BatchError, with what was read up to it.
func ParseBatch(object []byte) (Batch, error) {
	b := Batch{Hash: Hash(object)}
	if len(object) < 2 || object[0] != 0x1f || object[1] != 0x8b {
		return b, &BatchError{Err: errors.New("not gzip")}
	}
	err := Scan(bytes.NewReader(object), func(r Record) error {
		switch {
		case r.Err != nil:
			return &BatchError{Line: r.Line, Err: r.Err}
		case r.Header != nil && r.Line != 1:
			return &BatchError{Line: r.Line, Err: errors.New("batch header after the first line")}
		case r.Header != nil:
			b.Header = r.Header
		default:
			b.Events = append(b.Events, r.Event)
		}
		return nil
	})
	var be *BatchError
	if err != nil && !errors.As(err, &be) {
		err = &BatchError{Err: err}
	}
	return b, err
}

// ReadHeader returns the header of a batch object without reading past
// its first line (nil, nil: no header).
func ReadHeader(object []byte) (*BatchHeader, error) {
	var h *BatchHeader
	stop := errors.New("stop")
	err := Scan(bytes.NewReader(object), func(r Record) error {
		if r.Err != nil {
			return r.Err
		}
		h = r.Header
		return stop
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, err
	}
	return h, nil
}

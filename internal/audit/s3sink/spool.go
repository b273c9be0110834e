package s3sink

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// The spool directory, written down before the code:
//
//	seq                                 the last sequence number handed out
//	2026-12-03_gw1-0000000042.jsonl     the open batch: JSON lines appended as events come
//	2026-12-03_gw1-0000000041.jsonl.gz  a sealed batch waiting for upload
//	*.tmp                               a seal in progress (removed at start)
//
// A batch is named when its first event arrives: the date (UTC) of that
// event, the gateway, and a sequence number that only grows (the seq file
// is rewritten before the name is used, and at start the next number is
// above both it and every name in the directory). The name fixes the
// object key, PREFIX/2026/12/03/gw1-0000000042.jsonl.gz, so uploading a
// batch twice writes the same key: a crash between upload and removal
// cannot duplicate records.
//
// Sealing gzips the open file into NAME.jsonl.gz.tmp, syncs it, renames it
// to NAME.jsonl.gz and only then removes NAME.jsonl; at start, a .jsonl
// whose .jsonl.gz exists is such a half-finished seal and is removed, any
// other .jsonl is sealed (its last line dropped if a crash cut it short).

const (
	openExt   = ".jsonl"
	sealedExt = ".jsonl.gz"
	tmpExt    = ".tmp"
	seqFile   = "seq"
	dateFmt   = "2006-01-02"
	seqDigits = 10
)

// batchName is a batch's file name without extension.
type batchName struct {
	day     time.Time // UTC midnight
	gateway string
	seq     uint64
}

func (b batchName) String() string {
	return fmt.Sprintf("%s_%s-%0*d", b.day.Format(dateFmt), b.gateway, seqDigits, b.seq)
}

// key is the object key under prefix.
func (b batchName) key(prefix string) string {
	return fmt.Sprintf("%s/%s/%s-%0*d%s", prefix, b.day.Format("2006/01/02"), b.gateway, seqDigits, b.seq, sealedExt)
}

// parseBatchName parses a spool file name without its extension.
func parseBatchName(s string) (batchName, error) {
	date, rest, ok := strings.Cut(s, "_")
	if !ok {
		return batchName{}, fmt.Errorf("%q: no date", s)
	}
	day, err := time.Parse(dateFmt, date)
	if err != nil {
		return batchName{}, fmt.Errorf("%q: %w", s, err)
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return batchName{}, fmt.Errorf("%q: no sequence number", s)
	}
	gw, num := rest[:i], rest[i+1:]
	if !names.Gateway.Valid(gw) || len(num) == 0 || len(num) > 20 {
		return batchName{}, fmt.Errorf("%q: not GATEWAY-SEQ", s)
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return batchName{}, fmt.Errorf("%q: %w", s, err)
	}
	return batchName{day: day, gateway: gw, seq: seq}, nil
}

// spoolState is what a scan of the spool directory finds at start.
type spoolState struct {
	sealed   []batchName // waiting for upload
	unsealed []batchName // open batches a crash left behind
	maxSeq   uint64
	bytes    int64
}

// scanSpool reads dir (creating it), tidying what a crash left.
func scanSpool(dir string) (spoolState, error) {
	var st spoolState
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return st, fmt.Errorf("spool: %w", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, seqFile)); err == nil {
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			st.maxSeq = v
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return st, fmt.Errorf("spool: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return st, fmt.Errorf("spool: %w", err)
	}
	sealed := map[string]bool{}
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), sealedExt); ok {
			sealed[n] = true
		}
	}
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(dir, name)
		var base string
		var isSealed bool
		switch {
		case strings.HasSuffix(name, tmpExt):
			os.Remove(path)
			continue
		case strings.HasSuffix(name, sealedExt):
			base, isSealed = strings.TrimSuffix(name, sealedExt), true
		case strings.HasSuffix(name, openExt):
			base = strings.TrimSuffix(name, openExt)
			if sealed[base] {
				os.Remove(path) // a seal that finished all but its last step
				continue
			}
		default:
			continue
		}
		b, err := parseBatchName(base)
		if err != nil {
			continue // not ours; left alone
		}
		st.maxSeq = max(st.maxSeq, b.seq)
		if info, err := e.Info(); err == nil {
			st.bytes += info.Size()
		}
		if isSealed {
			st.sealed = append(st.sealed, b)
		} else {
			st.unsealed = append(st.unsealed, b)
		}
	}
	return st, nil
}

// writeSeq records seq as handed out, durably, before its name is used.
func writeSeq(dir string, seq uint64) error {
	tmp := filepath.Join(dir, seqFile+tmpExt)
	if err := writeFileSync(tmp, []byte(strconv.FormatUint(seq, 10)+"\n")); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, seqFile))
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// seal gzips dir/NAME.jsonl into dir/NAME.jsonl.gz and removes the open
// file. A last line without its newline (a write a crash cut short) is
// dropped; dropped says whether one was. It returns the sealed size.
func seal(dir string, b batchName) (events int, sealedSize int64, dropped bool, err error) {
	open := filepath.Join(dir, b.String()+openExt)
	raw, err := os.ReadFile(open)
	if err != nil {
		return 0, 0, false, err
	}
	if i := bytes.LastIndexByte(raw, '\n'); i != len(raw)-1 {
		dropped = len(raw) > 0
		raw = raw[:i+1]
	}
	events = bytes.Count(raw, []byte{'\n'})
	if events == 0 {
		return 0, 0, dropped, os.Remove(open)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		return 0, 0, dropped, err
	}
	dst := filepath.Join(dir, b.String()+sealedExt)
	if err := writeFileSync(dst+tmpExt, buf.Bytes()); err != nil {
		return 0, 0, dropped, err
	}
	if err := os.Rename(dst+tmpExt, dst); err != nil {
		return 0, 0, dropped, err
	}
	return events, int64(buf.Len()), dropped, os.Remove(open)
}

// countEvents counts the JSON lines in a sealed batch.
func countEvents(gz []byte) (int, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return 0, err
	}
	n := 0
	sc := bufio.NewReader(zr)
	for {
		_, err := sc.ReadSlice('\n')
		if err == nil {
			n++
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		return n, err
	}
}

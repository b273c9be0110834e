package s3sink

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// The spool directory, written down before the code:
//
//	chain                                    chain state: chain name, last seq, last hash (chain.go)
//	open-authenticated-0000000007.jsonl      an open batch: JSON lines appended as events come
//	open-unauthenticated-0000000008.jsonl    the open batch of failed authentications
//	body-unauthenticated-0000000006.jsonl.gz a closed batch, gzipped, not yet in the chain
//	link-0000000042-0000000005.jsonl.gz      body 5 linked as seq 42: header + body, the
//	                                         object exactly as it is uploaded
//	*.tmp                                    a write in progress (removed at start)
//	*.corrupt, *.conflict                    set aside for a human; never uploaded
//
// Each class has its own open batch and bodies, so that its share of the
// spool is known to the byte and unauthenticated bodies can be shed
// (deleted) when session and admin records need the room. Only bodies are
// ever shed: a batch joins the chain when it is next to be uploaded, so
// nothing in the chain is ever missing on purpose.
//
// Numbers: a batch gets a local id when it opens (above every id in the
// directory); bodies join the chain in id order. Linking writes the link
// file (tmp, fsync, rename), then the chain state, then removes the body;
// a crash between the steps leaves a link file whose id names a body that
// is still there (the body is removed at start) or a chain state behind
// the newest link file (the state is taken from that file at start).
//
// Files of the previous spool layout (2026-12-03_gw1-0000000042.jsonl[.gz]
// and seq) are taken over at start as authenticated batches.

const (
	openExt   = ".jsonl"
	bodyExt   = ".jsonl.gz"
	tmpExt    = ".tmp"
	idDigits  = 10
	chainFile = "chain"
)

// batchFile is a batch in the spool: an open (or closed, not yet sealed)
// batch, a body, or a link file.
type batchFile struct {
	kind  string // "open", "body" or "link"
	class audit.Class
	id    uint64
	seq   uint64 // link files only
}

func (b batchFile) name() string {
	switch b.kind {
	case "link":
		return fmt.Sprintf("link-%0*d-%0*d%s", idDigits, b.seq, idDigits, b.id, bodyExt)
	case "body":
		return fmt.Sprintf("body-%s-%0*d%s", b.class, idDigits, b.id, bodyExt)
	}
	return fmt.Sprintf("open-%s-%0*d%s", b.class, idDigits, b.id, openExt)
}

// parseBatchFile parses a spool file name.
func parseBatchFile(name string) (batchFile, bool) {
	var b batchFile
	var rest string
	switch {
	case strings.HasSuffix(name, bodyExt):
		rest = strings.TrimSuffix(name, bodyExt)
	case strings.HasSuffix(name, openExt):
		rest = strings.TrimSuffix(name, openExt)
	default:
		return b, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 {
		return b, false
	}
	b.kind = parts[0]
	num := func(s string) (uint64, bool) {
		if len(s) < idDigits || len(s) > 20 || strings.TrimLeft(s, "0123456789") != "" {
			return 0, false
		}
		v, err := strconv.ParseUint(s, 10, 64)
		return v, err == nil && fmt.Sprintf("%0*d", idDigits, v) == s
	}
	var ok bool
	switch {
	case b.kind == "link" && strings.HasSuffix(name, bodyExt):
		if b.seq, ok = num(parts[1]); !ok {
			return b, false
		}
	case (b.kind == "body" && strings.HasSuffix(name, bodyExt)) || (b.kind == "open" && strings.HasSuffix(name, openExt)):
		switch parts[1] {
		case audit.ClassAuthenticated.String():
			b.class = audit.ClassAuthenticated
		case audit.ClassUnauthenticated.String():
			b.class = audit.ClassUnauthenticated
		default:
			return b, false
		}
	default:
		return b, false
	}
	if b.id, ok = num(parts[2]); !ok {
		return b, false
	}
	return b, b.name() == name
}

// spoolState is what a scan of the spool directory finds at start.
type spoolState struct {
	open   []batchFile // batches a crash (or the last stop) left open: to seal
	bodies []batchFile
	links  []linkFile
	maxID  uint64
	// bytes per class (open and bodies); linkBytes for link files.
	bytes     [2]int64
	linkBytes int64
}

// linkFile is a link file and the header it carries.
type linkFile struct {
	batchFile
	header *audit.BatchHeader
	hash   string
	size   int64
}

// scanSpool reads dir (creating it), takes over the previous layout's
// files, and tidies what a crash left.
func scanSpool(dir, gateway string) (spoolState, error) {
	var st spoolState
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return st, fmt.Errorf("spool: %w", err)
	}
	if err := adoptOldLayout(dir); err != nil {
		return st, fmt.Errorf("spool: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return st, fmt.Errorf("spool: %w", err)
	}
	linked := map[uint64]bool{}
	var bodies []batchFile
	var sizes = map[string]int64{}
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(dir, name)
		if strings.HasSuffix(name, tmpExt) {
			os.Remove(path)
			continue
		}
		b, ok := parseBatchFile(name)
		if !ok {
			continue // not ours (or set aside): left alone
		}
		st.maxID = max(st.maxID, b.id)
		info, err := e.Info()
		if err != nil {
			return st, fmt.Errorf("spool: %w", err)
		}
		sizes[name] = info.Size()
		switch b.kind {
		case "open":
			st.open = append(st.open, b)
			st.bytes[b.class] += info.Size()
		case "body":
			bodies = append(bodies, b)
		case "link":
			obj, err := os.ReadFile(path)
			if err != nil {
				return st, fmt.Errorf("spool: %w", err)
			}
			h, err := audit.ReadHeader(obj)
			if err != nil || h == nil || h.Gateway != gateway || h.Seq != b.seq {
				// Not a batch this gateway can upload as it is.
				os.Rename(path, path+".corrupt")
				continue
			}
			st.links = append(st.links, linkFile{batchFile: b, header: h, hash: audit.Hash(obj), size: int64(len(obj))})
			st.linkBytes += int64(len(obj))
			linked[b.id] = true
		}
	}
	for _, b := range bodies {
		if linked[b.id] {
			// Linked just before a crash; the link file has it.
			os.Remove(filepath.Join(dir, b.name()))
			continue
		}
		st.bodies = append(st.bodies, b)
		st.bytes[b.class] += sizes[b.name()]
	}
	byID := func(x, y batchFile) int { return cmpUint(x.id, y.id) }
	slices.SortFunc(st.open, byID)
	slices.SortFunc(st.bodies, byID)
	slices.SortFunc(st.links, func(x, y linkFile) int {
		if c := strings.Compare(x.header.Chain, y.header.Chain); c != 0 {
			return c
		}
		return cmpUint(x.seq, y.seq)
	})
	return st, nil
}

func cmpUint(x, y uint64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// adoptOldLayout renames the previous spool layout's batches
// (DATE_GATEWAY-SEQ.jsonl[.gz], in sequence order) to authenticated open
// batches and bodies with ids below any new one, and removes its seq
// file. Their events are whatever the old version recorded, so they are
// never shed.
func adoptOldLayout(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type old struct {
		name string
		seq  uint64
		gz   bool
	}
	var olds []old
	sealed := map[string]bool{}
	var maxID uint64
	for _, e := range ents {
		if b, ok := parseBatchFile(e.Name()); ok {
			maxID = max(maxID, b.id)
		}
		base, gz := strings.CutSuffix(e.Name(), bodyExt)
		if !gz {
			var ok bool
			if base, ok = strings.CutSuffix(e.Name(), openExt); !ok {
				continue
			}
		}
		date, rest, ok := strings.Cut(base, "_")
		i := strings.LastIndexByte(rest, '-')
		if !ok || len(date) != 10 || i < 0 {
			continue
		}
		seq, err := strconv.ParseUint(rest[i+1:], 10, 64)
		if err != nil || !names.Gateway.Valid(rest[:i]) {
			continue
		}
		if gz {
			sealed[base] = true
		}
		olds = append(olds, old{e.Name(), seq, gz})
	}
	slices.SortFunc(olds, func(x, y old) int { return cmpUint(x.seq, y.seq) })
	for _, o := range olds {
		if !o.gz && sealed[strings.TrimSuffix(o.name, openExt)] {
			os.Remove(filepath.Join(dir, o.name)) // a seal that finished all but its last step
			continue
		}
		maxID++
		b := batchFile{kind: "open", class: audit.ClassAuthenticated, id: maxID}
		if o.gz {
			b.kind = "body"
		}
		if err := os.Rename(filepath.Join(dir, o.name), filepath.Join(dir, b.name())); err != nil {
			return err
		}
	}
	if len(olds) > 0 {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	if err := os.Remove(filepath.Join(dir, "seq")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// writeFileSync writes path durably: tmp file, fsync, rename, fsync of
// the directory.
func writeFileSync(path string, data []byte) error {
	tmp := path + tmpExt
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// seal gzips an open batch into its body and removes the open file. A
// last line without its newline (a write a crash cut short) is dropped;
// cut says whether one was. It returns the number of events (0: nothing
// left, no body) and the body's size.
func seal(dir string, b batchFile) (events int, size int64, cut bool, err error) {
	open := filepath.Join(dir, b.name())
	raw, err := os.ReadFile(open)
	if err != nil {
		return 0, 0, false, err
	}
	if i := bytes.LastIndexByte(raw, '\n'); i != len(raw)-1 {
		cut = len(raw) > 0
		raw = raw[:i+1]
	}
	events = bytes.Count(raw, []byte{'\n'})
	if events == 0 {
		return 0, 0, cut, os.Remove(open)
	}
	gz := gzipBytes(raw)
	body := b
	body.kind = "body"
	if err := writeFileSync(filepath.Join(dir, body.name()), gz); err != nil {
		return 0, 0, cut, err
	}
	return events, int64(len(gz)), cut, os.Remove(open)
}

func gzipBytes(raw []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw) // a bytes.Buffer does not fail
	zw.Close()
	return buf.Bytes()
}

// countEvents counts the records in a gzipped body.
func countEvents(gz []byte) (int, error) {
	n := 0
	err := audit.Scan(bytes.NewReader(gz), func(r audit.Record) error {
		if r.Err != nil {
			return fmt.Errorf("line %d: %w", r.Line, r.Err)
		}
		n++
		return nil
	})
	return n, err
}

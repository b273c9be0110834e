package usage

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// MaxLine is the longest audit record read; a longer line is skipped.
const MaxLine = 1 << 20

// ReadStats says what reading audit records found.
type ReadStats struct {
	// Sources read (files, S3 objects) and records kept.
	Sources, Records int
	// Bad lines (not JSON, too long, no time): skipped, never fatal, since
	// a gateway that crashed mid-write leaves a torn last line.
	Bad int
}

// ReadEvents reads JSON-lines audit records from r, gzip'ed or not (told
// by its first bytes, not a name), keeping session.start and session.end
// records whose time is in [from, to) and passing them to keep.
func ReadEvents(r io.Reader, from, to time.Time, keep func(audit.Event)) (records, bad int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return 0, 0, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e audit.Event
		if json.Unmarshal(line, &e) != nil || e.Time.IsZero() {
			bad++
			continue
		}
		if e.Type != audit.TypeSessionStart && e.Type != audit.TypeSessionEnd {
			continue
		}
		if e.Time.Before(from) || !e.Time.Before(to) {
			continue
		}
		keep(e)
		records++
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return records, bad + 1, nil // the rest of the file is one line
		}
		// A truncated gzip stream (a copy taken mid-rotation) keeps what
		// was read.
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return records, bad + 1, nil
		}
		return records, bad, err
	}
	return records, bad, nil
}

// LocalFiles expands an audit path: a directory is every regular file in
// it; a file also brings its rotated copies (PATH.1, PATH.2.gz,
// PATH-20261101.gz: PATH.* and PATH-*).
func LocalFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	var out []string
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		for _, e := range ents {
			if e.Type().IsRegular() {
				out = append(out, filepath.Join(path, e.Name()))
			}
		}
		return out, nil
	}
	out = append(out, path)
	for _, pat := range []string{path + ".*", path + "-*"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		out = append(out, m...)
	}
	sort.Strings(out[1:])
	return out, nil
}

// ReadFiles reads the records of files in [from, to).
func ReadFiles(files []string, from, to time.Time, keep func(audit.Event)) (ReadStats, error) {
	var st ReadStats
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return st, fmt.Errorf("audit: %w", err)
		}
		n, bad, err := ReadEvents(fh, from, to, keep)
		fh.Close()
		if err != nil {
			return st, fmt.Errorf("audit %s: %w", f, err)
		}
		st.Sources++
		st.Records += n
		st.Bad += bad
	}
	return st, nil
}

// S3API is the part of the S3 client ReadS3 uses; *s3.Client satisfies it.
type S3API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// ParseS3URL splits s3://bucket/prefix (the prefix without slashes at
// either end; default "audit", internal/audit/s3sink's).
func ParseS3URL(u string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an s3:// URL", u)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucket == "" || strings.ContainsAny(bucket, " \t\n") {
		return "", "", fmt.Errorf("%q has no bucket", u)
	}
	if prefix == "" {
		prefix = "audit"
	}
	return bucket, prefix, nil
}

// ReadS3 reads the objects internal/audit/s3sink wrote
// (PREFIX/yyyy/mm/dd/GATEWAY-SEQ.jsonl.gz) for every UTC day from one day
// before from to to (a batch's day is that of its first event, so records
// of a day can sit in the previous day's last batch), keeping the records
// in [from, to). Each S3 call is bounded by callTimeout.
func ReadS3(ctx context.Context, api S3API, bucket, prefix string, from, to time.Time, callTimeout time.Duration, keep func(audit.Event)) (ReadStats, error) {
	var st ReadStats
	if callTimeout <= 0 {
		callTimeout = time.Minute
	}
	for d := from.UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour); d.Before(to); d = d.Add(24 * time.Hour) {
		dayPrefix := prefix + "/" + d.Format("2006/01/02") + "/"
		var token *string
		for {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			out, err := api.ListObjectsV2(cctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(dayPrefix), ContinuationToken: token})
			cancel()
			if err != nil {
				return st, fmt.Errorf("audit: list s3://%s/%s: %w", bucket, dayPrefix, err)
			}
			for _, o := range out.Contents {
				if o.Key == nil || !strings.HasSuffix(*o.Key, ".jsonl.gz") {
					continue
				}
				n, bad, err := getObject(ctx, api, bucket, *o.Key, from, to, callTimeout, keep)
				if err != nil {
					return st, err
				}
				st.Sources++
				st.Records += n
				st.Bad += bad
			}
			if out.IsTruncated == nil || !*out.IsTruncated || out.NextContinuationToken == nil {
				break
			}
			token = out.NextContinuationToken
		}
	}
	return st, nil
}

func getObject(ctx context.Context, api S3API, bucket, key string, from, to time.Time, timeout time.Duration, keep func(audit.Event)) (int, int, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	obj, err := api.GetObject(cctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return 0, 0, fmt.Errorf("audit: get s3://%s/%s: %w", bucket, key, err)
	}
	defer obj.Body.Close()
	n, bad, err := ReadEvents(obj.Body, from, to, keep)
	if err != nil {
		return n, bad, fmt.Errorf("audit: s3://%s/%s: %w", bucket, key, err)
	}
	return n, bad, nil
}

// Dedup drops records read twice (the audit file and S3 both hold them):
// the same type, gateway, session and time.
func Dedup(events []audit.Event) []audit.Event {
	type key struct {
		typ, gateway, session string
		t                     int64
	}
	seen := map[key]bool{}
	out := events[:0]
	for _, e := range events {
		k := key{e.Type, e.Gateway, e.Session, e.Time.UnixNano()}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out
}

package usage

import (
	"context"
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
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
)

// ReadStats says what reading audit records found.
type ReadStats struct {
	// Sources read (files, S3 objects) and records kept.
	Sources, Records int
	// Bad lines (not JSON, too long, no time): skipped, never fatal, since
	// a gateway that crashed mid-write leaves a torn last line.
	Bad int
}

// ReadEvents reads JSON-lines audit records from r with audit.Scan (gzip'ed
// or not, S3 batches with their chain headers included), keeping
// session.start and session.end records whose time is in [from, to) and
// passing them to keep.
func ReadEvents(r io.Reader, from, to time.Time, keep func(audit.Event)) (records, bad int, err error) {
	err = audit.Scan(r, func(rec audit.Record) error {
		e := rec.Event
		switch {
		case rec.Err != nil:
			bad++
		case rec.Header != nil:
		case e.Type != audit.TypeSessionStart && e.Type != audit.TypeSessionEnd:
		case e.Time.Before(from) || !e.Time.Before(to):
		default:
			keep(e)
			records++
		}
		return nil
	})
	return records, bad, err
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

// ReadS3 reads the objects internal/audit/s3sink wrote (both layouts:
// PREFIX/GATEWAY/yyyy/mm/dd/… and the older PREFIX/yyyy/mm/dd/…) for
// every UTC day from one day before from to to (a batch's day is that of
// its first event, so records of a day can sit in the previous day's last
// batch), keeping the records in [from, to). Each S3 call is bounded by
// callTimeout.
func ReadS3(ctx context.Context, api S3API, bucket, prefix string, from, to time.Time, callTimeout time.Duration, keep func(audit.Event)) (ReadStats, error) {
	var st ReadStats
	if callTimeout <= 0 {
		callTimeout = time.Minute
	}
	gateways, err := s3sink.Gateways(ctx, api, bucket, prefix, callTimeout)
	if err != nil {
		return st, fmt.Errorf("audit: %w", err)
	}
	for d := from.UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour); d.Before(to); d = d.Add(24 * time.Hour) {
		for _, dayPrefix := range s3sink.DayPrefixes(prefix, gateways, d) {
			if err := readPrefix(ctx, api, bucket, prefix, dayPrefix, from, to, callTimeout, keep, &st); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}

// readPrefix reads every batch object under one day prefix.
func readPrefix(ctx context.Context, api S3API, bucket, prefix, dayPrefix string, from, to time.Time, callTimeout time.Duration, keep func(audit.Event), st *ReadStats) error {
	var token *string
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		out, err := api.ListObjectsV2(cctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(dayPrefix), ContinuationToken: token})
		cancel()
		if err != nil {
			return fmt.Errorf("audit: list s3://%s/%s: %w", bucket, dayPrefix, err)
		}
		for _, o := range out.Contents {
			if o.Key == nil {
				continue
			}
			if _, err := s3sink.ParseKey(prefix, *o.Key); err != nil {
				continue // not a batch (frontdoor audit verify reports it)
			}
			n, bad, err := getObject(ctx, api, bucket, *o.Key, from, to, callTimeout, keep)
			if err != nil {
				return err
			}
			st.Sources++
			st.Records += n
			st.Bad += bad
		}
		if out.IsTruncated == nil || !*out.IsTruncated || out.NextContinuationToken == nil {
			return nil
		}
		token = out.NextContinuationToken
	}
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

package usage_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/usage"
)

var (
	nov1 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	dec1 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
)

func sessionEvents(gw string, n int, first time.Time) []audit.Event {
	var out []audit.Event
	for i := 0; i < n; i++ {
		start := first.Add(time.Duration(i) * 6 * time.Hour)
		id := gw + "-s" + string(rune('a'+i))
		out = append(out,
			audit.Event{Time: start, Type: audit.TypeSessionStart, Gateway: gw, Session: id, User: "ann", Node: "login1", Rule: "nlp"},
			audit.Event{Time: start.Add(-time.Minute), Type: audit.TypeAuth, Gateway: gw, User: "ann", Result: "ok"},
			audit.Event{Time: start.Add(time.Hour), Type: audit.TypeSessionEnd, Gateway: gw, Session: id, User: "ann", Node: "login1", Duration: 3600})
	}
	return out
}

// Local audit files: the live file, rotated copies (one gzip'ed, by
// content not name), a torn last line from a crash; only session records
// in the window are kept.
func TestLocalAuditFiles(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "audit.jsonl")
	writeJSONL(t, live, sessionEvents("gw1", 2, time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)))
	writeJSONL(t, live+".1", sessionEvents("gw1b", 2, time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)))
	// live.2.gz: gzip'ed, with a torn last line.
	var plain strings.Builder
	for _, e := range sessionEvents("gw1c", 1, time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)) {
		b, _ := json.Marshal(e)
		plain.Write(append(b, '\n'))
	}
	plain.WriteString(`{"time":"2026-11-02T09:00:00Z","type":"session.st`)
	f, err := os.Create(live + ".2.gz")
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	io.WriteString(zw, plain.String())
	zw.Close()
	f.Close()
	// Outside the window: October.
	writeJSONL(t, live+"-20261001", sessionEvents("gw0", 2, time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)))
	// Not ours.
	writeJSONL(t, filepath.Join(dir, "other.jsonl"), sessionEvents("gwx", 1, time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)))

	files, err := usage.LocalFiles(live)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("files %v: want the live file and its 3 rotated copies", files)
	}
	var got []audit.Event
	st, err := usage.ReadFiles(files, nov1, dec1, func(e audit.Event) { got = append(got, e) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Sources != 4 || st.Records != 10 || st.Bad != 1 || len(got) != 10 {
		t.Errorf("stats %+v, %d records; want 4 files, 10 session records (5 sessions), 1 bad line", st, len(got))
	}
	r := usage.Aggregate(usage.Input{From: nov1, To: dec1, Now: dec1, By: usage.ByGroup, Events: got, Config: usage.DefaultConfig()})
	if len(r.Rows) != 1 || r.Rows[0].Key != "nlp" || r.Rows[0].Sessions != 5 || r.Rows[0].SessionHours != 5 {
		t.Errorf("rows %+v", r.Rows)
	}
	// A directory is every file in it.
	all, err := usage.LocalFiles(dir)
	if err != nil || len(all) != 5 {
		t.Errorf("directory: %v %v", all, err)
	}
	if _, err := usage.LocalFiles(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing audit file is no error")
	}
}

// The S3 layout internal/audit/s3sink writes, read back through the SDK
// from gofakes3: the sink itself ships the records (two gateways, several
// days and batches), and usage finds exactly them, each once, also when
// the audit file holds them too.
func TestAuditFromS3(t *testing.T) {
	const bucket = "audit-bucket"
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var all []audit.Event
	for _, gw := range []string{"gw1", "gw2"} {
		cfg := s3sink.DefaultConfig()
		cfg.Bucket, cfg.Region, cfg.Endpoint, cfg.PathStyle = bucket, "us-east-1", srv.URL, true
		cfg.SpoolDir, cfg.BatchMaxEvents, cfg.BatchMaxAge = filepath.Join(t.TempDir(), gw), 4, time.Hour
		sink, err := s3sink.New(ctx, cfg, gw, s3sink.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		// Sessions every 6 h from Oct 31 18:00 (the day before the window:
		// read, then filtered by time) for 3 days.
		evs := sessionEvents(gw, 12, time.Date(2026, 10, 31, 18, 0, 0, 0, time.UTC))
		for _, e := range evs {
			sink.Record(e)
		}
		if err := sink.Close(ctx); err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	// An object a gateway wrote before batches were chained (no header,
	// PREFIX/yyyy/mm/dd/GATEWAY-SEQ.jsonl.gz) is read too.
	old := sessionEvents("gwold", 1, time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC))
	var oldBody bytes.Buffer
	zw := gzip.NewWriter(&oldBody)
	for _, e := range old {
		b, _ := json.Marshal(e)
		zw.Write(append(b, '\n'))
	}
	zw.Close()
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("audit/2026/11/05/gwold-0000000001.jsonl.gz"),
		Body: bytes.NewReader(oldBody.Bytes())}); err != nil {
		t.Fatal(err)
	}
	all = append(all, old...)
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, *o.Key)
	}
	sort.Strings(keys)
	t.Logf("%d objects: %s … %s", len(keys), keys[0], keys[len(keys)-1])

	bucketName, prefix, err := usage.ParseS3URL("s3://" + bucket + "/audit/")
	if err != nil || bucketName != bucket || prefix != "audit" {
		t.Fatalf("ParseS3URL: %q %q %v", bucketName, prefix, err)
	}
	var got []audit.Event
	st, err := usage.ReadS3(ctx, client, bucket, prefix, nov1, dec1, 10*time.Second, func(e audit.Event) { got = append(got, e) })
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, e := range all {
		if (e.Type == audit.TypeSessionStart || e.Type == audit.TypeSessionEnd) && !e.Time.Before(nov1) {
			want++
		}
	}
	if st.Sources != len(keys) || len(got) != want || st.Bad != 0 {
		t.Errorf("read %d objects (bucket has %d), %d records (want %d), %d bad", st.Sources, len(keys), len(got), want, st.Bad)
	}
	// The same records from a local file as well count once.
	dup := append(append([]audit.Event{}, got...), got...)
	r := usage.Aggregate(usage.Input{From: nov1, To: dec1, Now: dec1, By: usage.ByUser, Events: usage.Dedup(dup), Config: usage.DefaultConfig()})
	// Per gateway: 12 sessions from Oct 31 18:00, the first one before the
	// window: 11 in it; and the old object's one.
	if len(r.Rows) != 1 || r.Rows[0].Sessions != 23 || r.Rows[0].SessionHours != 23 {
		t.Errorf("rows %+v", r.Rows)
	}
	for _, bad := range []string{"s3:/x", "http://bucket/audit", "s3://", "s3:///audit"} {
		if _, _, err := usage.ParseS3URL(bad); err == nil {
			t.Errorf("ParseS3URL accepted %q", bad)
		}
	}
}

func FuzzReadEvents(f *testing.F) {
	f.Add([]byte(`{"time":"2026-11-02T00:00:00Z","type":"session.start","gateway":"gw","session":"s","user":"ann","node":"n"}` + "\n" +
		`{"time":"2026-11-02T01:00:00Z","type":"session.end","gateway":"gw","session":"s","user":"ann","duration_s":3600}`))
	f.Add([]byte("\x1f\x8b garbage"))
	f.Add([]byte(`{"time":"2026-11-02T01:00:00Z","type":"session.end","session":"s","user":"ann","duration_s":-1e300}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var evs []audit.Event
		_, _, _ = usage.ReadEvents(strings.NewReader(string(data)), nov1, dec1, func(e audit.Event) { evs = append(evs, e) })
		r := usage.Aggregate(usage.Input{From: nov1, To: dec1, Now: dec1, By: usage.ByUser, Events: evs, Config: usage.DefaultConfig()})
		for _, row := range r.Rows {
			if row.SessionHours < 0 || row.LoginNodeHours < 0 || row.SessionHours > 24*30*float64(len(evs)) {
				t.Fatalf("impossible row from %q: %+v", data, row)
			}
		}
	})
}

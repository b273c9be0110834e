package s3sink

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// TestMain gives the SDK's default credential chain test keys through
// the environment and nothing else to find.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "s3sink-test")
	if err != nil {
		panic(err)
	}
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDS3SINKTEST", "AWS_SECRET_ACCESS_KEY": "s3sink-test-secret",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const bucket = "audit-bucket"

// Server modes: normal; refuse every request with 503 (the bucket is
// unreachable); store the object but answer 503 (the answer is lost).
const (
	modeNormal = iota
	modeRefuse
	modeAckLost
)

// fakeS3 is gofakes3 (a real S3 implementation, in memory) behind a
// switch that makes it unreachable.
type fakeS3 struct {
	URL    string
	client *s3.Client

	mu        sync.Mutex // mu protects the following
	mode      int
	puts      map[int]int // mode → PUT requests seen in it
	conflicts int         // PUTs answered 412: the key exists
	headers   []http.Header
}

func startS3(t testing.TB) *fakeS3 {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	h := gofakes3.New(backend).Server()
	f := &fakeS3{puts: map[int]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		mode := f.mode
		if r.Method == http.MethodPut {
			f.puts[mode]++
			f.headers = append(f.headers, r.Header.Clone())
		}
		f.mu.Unlock()
		switch mode {
		case modeRefuse:
			io.Copy(io.Discard, r.Body)
			http.Error(w, "<Error><Code>ServiceUnavailable</Code><Message>Service Unavailable</Message></Error>", http.StatusServiceUnavailable)
		case modeAckLost:
			h.ServeHTTP(httptest.NewRecorder(), r)
			http.Error(w, "<Error><Code>ServiceUnavailable</Code><Message>Service Unavailable</Message></Error>", http.StatusServiceUnavailable)
		default:
			sw := &statusWriter{ResponseWriter: w}
			h.ServeHTTP(sw, r)
			if r.Method == http.MethodPut && sw.code == http.StatusPreconditionFailed {
				f.mu.Lock()
				f.conflicts++
				f.mu.Unlock()
			}
		}
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	// The test itself reads the bucket around the switch.
	direct := httptest.NewServer(h)
	t.Cleanup(direct.Close)
	f.client = s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(direct.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	return f
}

func (f *fakeS3) setMode(m int) { f.mu.Lock(); f.mode = m; f.mu.Unlock() }
func (f *fakeS3) putsIn(m int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts[m]
}

// bucketContents reads every object: key → the events' session IDs.
func (f *fakeS3) contents(t *testing.T) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	list, err := f.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		obj, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(obj.Body)
		if err != nil {
			t.Fatalf("%s: not gzip: %v", *o.Key, err)
		}
		sc := bufio.NewScanner(zr)
		ids := []string{}
		for sc.Scan() {
			var e audit.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("%s: line %q: %v", *o.Key, sc.Text(), err)
			}
			ids = append(ids, e.Session)
		}
		obj.Body.Close()
		out[*o.Key] = ids
	}
	return out
}

// sessionCounts counts how often each session ID is in the bucket.
func (f *fakeS3) sessionCounts(t *testing.T) (map[string]int, int) {
	counts, total := map[string]int{}, 0
	for _, ids := range f.contents(t) {
		for _, id := range ids {
			counts[id]++
			total++
		}
	}
	return counts, total
}

func testConfig(f *fakeS3, spool string) Config {
	c := DefaultConfig()
	c.Bucket, c.Region, c.Endpoint, c.PathStyle = bucket, "us-east-1", f.URL, true
	c.BatchMaxEvents, c.BatchMaxAge, c.SpoolDir = 10, time.Hour, spool
	return c
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newSink(t *testing.T, cfg Config, log *slog.Logger) *Sink {
	t.Helper()
	if log == nil {
		log = quietLog()
	}
	s, err := New(context.Background(), cfg, "gw1", Options{Logger: log, RetryMin: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond,
		UploadTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func record(s *Sink, from, n int) {
	for i := from; i < from+n; i++ {
		s.Record(audit.Event{Time: time.Now(), Type: audit.TypeSessionStart, Gateway: "gw1", Session: fmt.Sprintf("s%05d", i), User: "alice"})
	}
}

func closeSink(t *testing.T, s *Sink) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var keyRE = regexp.MustCompile(`^audit/(\d{4})/(\d{2})/(\d{2})/gw1-(\d{10})\.jsonl\.gz$`)

// Normal shipping: batches by count, the last one on Close, keys by date
// and sequence, SSE asked for, the spool empty afterwards.
func TestShipping(t *testing.T) {
	f := startS3(t)
	spool := t.TempDir()
	cfg := testConfig(f, spool)
	cfg.SSE = "AES256"
	s := newSink(t, cfg, nil)
	record(s, 0, 25)
	eventually(t, "two full batches uploaded", func() bool { return len(f.contents(t)) == 2 })
	closeSink(t, s)
	objs := f.contents(t)
	today := time.Now().UTC().Format("2006/01/02")
	var keys []string
	for k, ids := range objs {
		keys = append(keys, k)
		if !keyRE.MatchString(k) || !strings.HasPrefix(k, "audit/"+today+"/") {
			t.Errorf("key %q, want audit/%s/gw1-SEQ.jsonl.gz", k, today)
		}
		if len(ids) != 10 && len(ids) != 5 {
			t.Errorf("%s: %d events", k, len(ids))
		}
	}
	for _, seq := range []string{"0000000001", "0000000002", "0000000003"} {
		if _, ok := objs["audit/"+today+"/gw1-"+seq+".jsonl.gz"]; !ok {
			t.Errorf("no object with seq %s in %v", seq, keys)
		}
	}
	counts, total := f.sessionCounts(t)
	if total != 25 || len(counts) != 25 {
		t.Errorf("bucket holds %d events, %d distinct; want 25", total, len(counts))
	}
	for _, h := range f.headers {
		if h.Get("X-Amz-Server-Side-Encryption") != "AES256" || h.Get("If-None-Match") != "*" || h.Get("X-Amz-Meta-Sha256") == "" {
			t.Errorf("PUT headers: sse=%q if-none-match=%q sha=%q", h.Get("X-Amz-Server-Side-Encryption"), h.Get("If-None-Match"), h.Get("X-Amz-Meta-Sha256"))
		}
	}
	left, _ := filepath.Glob(filepath.Join(spool, "*.jsonl*"))
	if len(left) != 0 {
		t.Errorf("spool not empty after Close: %v", left)
	}
	if v := testutil.ToFloat64(s.metrics.uploadedEvents); v != 25 {
		t.Errorf("uploaded_events_total = %v", v)
	}
}

// A batch closes at its maximum age without Close; sse aws:kms sends the key.
func TestBatchMaxAgeAndKMS(t *testing.T) {
	f := startS3(t)
	cfg := testConfig(f, t.TempDir())
	cfg.BatchMaxAge, cfg.SSE, cfg.KMSKeyID = 100*time.Millisecond, "aws:kms", "alias/frontdoor-audit"
	s := newSink(t, cfg, nil)
	defer closeSink(t, s)
	record(s, 0, 3)
	eventually(t, "the batch uploaded by age", func() bool { _, n := f.sessionCounts(t); return n == 3 })
	h := f.headers[0]
	if h.Get("X-Amz-Server-Side-Encryption") != "aws:kms" || h.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id") != "alias/frontdoor-audit" {
		t.Errorf("SSE headers: %v", h)
	}
}

// The bucket unreachable in the middle of shipping, then answering but
// its answers lost: nothing lost, nothing duplicated.
func TestOutageNothingLostNothingDuplicated(t *testing.T) {
	f := startS3(t)
	cfg := testConfig(f, t.TempDir())
	cfg.BatchMaxEvents, cfg.BatchMaxAge = 5, 50*time.Millisecond
	s := newSink(t, cfg, nil)
	record(s, 0, 20)
	eventually(t, "first 20 events shipped", func() bool { _, n := f.sessionCounts(t); return n == 20 })

	f.setMode(modeRefuse)
	record(s, 20, 30)
	eventually(t, "uploads failing and batches spooled", func() bool {
		s.mu.Lock()
		spooled := len(s.sealed)
		s.mu.Unlock()
		return testutil.ToFloat64(s.metrics.uploads.WithLabelValues("error")) >= 2 && spooled >= 6
	})
	f.setMode(modeAckLost)
	record(s, 50, 10)
	eventually(t, "uploads stored with their answers lost", func() bool { return f.putsIn(modeAckLost) >= 3 })
	f.setMode(modeNormal)
	record(s, 60, 10)
	eventually(t, "all 70 events in the bucket", func() bool { _, n := f.sessionCounts(t); return n >= 70 })
	closeSink(t, s)

	counts, total := f.sessionCounts(t)
	for i := range 70 {
		if id := fmt.Sprintf("s%05d", i); counts[id] != 1 {
			t.Errorf("%s in the bucket %d times", id, counts[id])
		}
	}
	if total != 70 {
		t.Errorf("bucket holds %d events, want 70", total)
	}
	f.mu.Lock()
	conflicts := f.conflicts
	f.mu.Unlock()
	if conflicts == 0 {
		t.Error("no upload met its own earlier copy (412): the lost-answer case was not exercised")
	}
	t.Logf("PUTs refused: %d, stored with answer lost: %d, re-sent and recognised (412): %d, objects: %d, upload errors: %v",
		f.putsIn(modeRefuse), f.putsIn(modeAckLost), conflicts, len(f.contents(t)), testutil.ToFloat64(s.metrics.uploads.WithLabelValues("error")))
	if v := testutil.ToFloat64(s.metrics.dropped.WithLabelValues("spool_full")); v != 0 {
		t.Errorf("dropped %v", v)
	}
}

// A crash (no flush, a last line cut short) and a restart on the same
// spool: what was spooled is uploaded, sequence numbers keep growing.
func TestCrashResume(t *testing.T) {
	f := startS3(t)
	spool := t.TempDir()
	cfg := testConfig(f, spool)
	f.setMode(modeRefuse)
	s1 := newSink(t, cfg, nil)
	record(s1, 0, 15) // one full batch of 10 (sealed), 5 in the open batch
	eventually(t, "the full batch sealed", func() bool {
		m, _ := filepath.Glob(filepath.Join(spool, "*"+sealedExt))
		return len(m) == 1
	})
	// Crash: the worker stops dead, nothing is flushed.
	s1.abort()
	<-s1.done
	s1.mu.Lock()
	open := filepath.Join(spool, s1.openName.String()+openExt)
	s1.open.Close()
	s1.mu.Unlock()
	fh, err := os.OpenFile(open, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(`{"time":"2026-12-03T06:00:00Z","type":"sess`) // a write cut short
	fh.Close()
	if _, n := f.sessionCounts(t); n != 0 {
		t.Fatalf("%d events in the bucket before the restart", n)
	}

	f.setMode(modeNormal)
	s2 := newSink(t, cfg, nil)
	eventually(t, "the spooled 15 events uploaded after restart", func() bool { _, n := f.sessionCounts(t); return n == 15 })
	if v := testutil.ToFloat64(s2.metrics.dropped.WithLabelValues("truncated")); v != 1 {
		t.Errorf("truncated line counted %v times, want 1", v)
	}
	record(s2, 15, 5)
	closeSink(t, s2)
	counts, total := f.sessionCounts(t)
	if total != 20 || len(counts) != 20 {
		t.Errorf("bucket holds %d events, %d distinct; want 20", total, len(counts))
	}
	var seqs []string
	for k := range f.contents(t) {
		seqs = append(seqs, keyRE.FindStringSubmatch(k)[4])
	}
	if len(seqs) != 3 || !strings.Contains(strings.Join(seqs, ","), "0000000003") {
		t.Errorf("sequence numbers %v, want 1, 2 (before the crash) and 3 (after)", seqs)
	}
}

// A full spool drops new events, counts them and says so loudly; once
// uploads resume, events are accepted again.
func TestSpoolFull(t *testing.T) {
	f := startS3(t)
	cfg := testConfig(f, t.TempDir())
	// One open batch holds the whole fill (no seal shrinks the spool
	// meanwhile), so what fills it is exactly the events' bytes.
	cfg.SpoolMaxBytes, cfg.BatchMaxEvents = 64<<10, 1000
	var logs bytes.Buffer
	var logMu sync.Mutex
	s := newSink(t, cfg, slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil)))
	f.setMode(modeRefuse)
	pad := strings.Repeat("x", 1000)
	for i := range 100 {
		s.Record(audit.Event{Time: time.Now(), Type: audit.TypeAuth, Session: fmt.Sprintf("s%05d", i), Reason: pad})
	}
	dropped := int(testutil.ToFloat64(s.metrics.dropped.WithLabelValues("spool_full")))
	if dropped == 0 || testutil.ToFloat64(s.metrics.full) != 1 {
		t.Fatalf("dropped %d, full %v: want drops and the full gauge at 1", dropped, testutil.ToFloat64(s.metrics.full))
	}
	logMu.Lock()
	loud := strings.Count(logs.String(), "AUDIT EVENTS DROPPED")
	logMu.Unlock()
	if loud != 1 {
		t.Errorf("loud log lines: %d, want 1 (then at most one a minute)", loud)
	}
	accepted := 100 - dropped
	f.setMode(modeNormal)
	s.mu.Lock()
	s.rotateLocked() // as batch_max_age would
	s.mu.Unlock()
	eventually(t, "the spooled events uploaded and room again", func() bool {
		_, n := f.sessionCounts(t)
		return n == accepted && testutil.ToFloat64(s.metrics.full) == 0
	})
	record(s, 1000, 5)
	if v := int(testutil.ToFloat64(s.metrics.dropped.WithLabelValues("spool_full"))); v != dropped {
		t.Errorf("events dropped after the spool drained: %d", v-dropped)
	}
	closeSink(t, s)
	if testutil.ToFloat64(s.metrics.full) != 0 {
		t.Error("full gauge still 1 after the spool drained")
	}
	counts, total := f.sessionCounts(t)
	if total != accepted+5 || len(counts) != total {
		t.Errorf("bucket holds %d events (%d distinct), want %d accepted + 5", total, len(counts), accepted)
	}
	t.Logf("spool cap 64 KiB: %d of 100 1-KB events accepted, %d dropped", accepted, dropped)
}

// An object under a batch's key that is not that batch (a spool directory
// lost, its sequence restarted) is never overwritten.
func TestForeignObjectNotOverwritten(t *testing.T) {
	f := startS3(t)
	key := "audit/" + time.Now().UTC().Format("2006/01/02") + "/gw1-0000000001.jsonl.gz"
	var foreign bytes.Buffer
	zw := gzip.NewWriter(&foreign)
	zw.Write([]byte(`{"type":"auth","session":"old"}` + "\n"))
	zw.Close()
	if _, err := f.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(foreign.Bytes())}); err != nil {
		t.Fatal(err)
	}
	s := newSink(t, testConfig(f, t.TempDir()), nil)
	record(s, 0, 3)
	closeSink(t, s)
	objs := f.contents(t)
	if ids := objs[key]; len(ids) != 1 || ids[0] != "old" {
		t.Errorf("foreign object overwritten: %v", ids)
	}
	if ids := objs[strings.Replace(key, "0000000001", "0000000002", 1)]; len(ids) != 3 {
		t.Errorf("batch not renumbered to 2: %v", objs)
	}
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

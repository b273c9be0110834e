package s3sink

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// contents reads every object: key → the events' session IDs. Every
// object must parse as a chained batch of gw1's.
func (f *fakeS3) contents(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for key, b := range f.batches(t) {
		ids := []string{}
		for _, e := range b.Events {
			ids = append(ids, e.Session)
		}
		out[key] = ids
	}
	return out
}

// batches reads and parses every object in the bucket.
func (f *fakeS3) batches(t *testing.T) map[string]audit.Batch {
	t.Helper()
	ctx := context.Background()
	out := map[string]audit.Batch{}
	list, err := f.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		obj, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		b, err := audit.ParseBatch(body)
		if err != nil || b.Header == nil {
			t.Fatalf("%s: not a chained batch: %v", *o.Key, err)
		}
		out[*o.Key] = b
	}
	return out
}

// chains checks every chain in the bucket link by link — seq from 1
// without gaps, each prev the hash of the object before, the key from
// the header — and returns them by name, in order.
func (f *fakeS3) chains(t *testing.T) map[string][]audit.Batch {
	t.Helper()
	out := map[string][]audit.Batch{}
	for key, b := range f.batches(t) {
		h := b.Header
		if want := headerKey("audit", h); key != want {
			t.Errorf("object %s: its header says %s", key, want)
		}
		if h.Events != len(b.Events) {
			t.Errorf("%s: header says %d events, has %d", key, h.Events, len(b.Events))
		}
		out[h.Chain] = append(out[h.Chain], b)
	}
	for name, c := range out {
		slices.SortFunc(c, func(x, y audit.Batch) int { return cmpUint(x.Header.Seq, y.Header.Seq) })
		for i, b := range c {
			h := b.Header
			switch {
			case h.Seq != uint64(i+1):
				t.Errorf("chain %s: batch %d has seq %d", name, i+1, h.Seq)
			case i == 0 && (h.Prev != "" || h.Restart == ""):
				t.Errorf("chain %s starts with prev %q, restart %q", name, h.Prev, h.Restart)
			case i > 0 && h.Prev != c[i-1].Hash:
				t.Errorf("chain %s: seq %d does not link to seq %d", name, h.Seq, h.Seq-1)
			}
		}
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

var keyRE = regexp.MustCompile(`^audit/gw1/(\d{4}/\d{2}/\d{2})/(\d{8}T\d{6}Z-[0-9a-f]{8})-(\d{10})\.jsonl\.gz$`)

// Normal shipping: batches by count, the last one on Close, keys under the
// gateway's prefix by date, chain and sequence, one chain linked from
// seq 1, create-only PUTs with a checksum and SSE, the spool empty
// afterwards but for the chain state.
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
	for k, ids := range objs {
		if m := keyRE.FindStringSubmatch(k); m == nil || m[1] != today {
			t.Errorf("key %q, want audit/gw1/%s/CHAIN-SEQ.jsonl.gz", k, today)
		}
		if len(ids) != 10 && len(ids) != 5 {
			t.Errorf("%s: %d events", k, len(ids))
		}
	}
	chains := f.chains(t)
	if len(chains) != 1 {
		t.Fatalf("%d chains, want 1", len(chains))
	}
	for _, c := range chains {
		if len(c) != 3 || !strings.Contains(c[0].Header.Restart, "no chain state") || c[0].Header.Gateway != "gw1" {
			t.Errorf("chain of %d batches, first header %+v", len(c), c[0].Header)
		}
	}
	counts, total := f.sessionCounts(t)
	if total != 25 || len(counts) != 25 {
		t.Errorf("bucket holds %d events, %d distinct; want 25", total, len(counts))
	}
	for _, h := range f.headers {
		if h.Get("X-Amz-Server-Side-Encryption") != "AES256" || h.Get("If-None-Match") != "*" || h.Get("X-Amz-Meta-Sha256") == "" ||
			h.Get("X-Amz-Checksum-Sha256") == "" || h.Get("X-Amz-Sdk-Checksum-Algorithm") != "SHA256" {
			t.Errorf("PUT headers: sse=%q if-none-match=%q sha=%q checksum=%q", h.Get("X-Amz-Server-Side-Encryption"),
				h.Get("If-None-Match"), h.Get("X-Amz-Meta-Sha256"), h.Get("X-Amz-Checksum-Sha256"))
		}
	}
	left, _ := filepath.Glob(filepath.Join(spool, "*"))
	if len(left) != 1 || filepath.Base(left[0]) != chainFile {
		t.Errorf("spool after Close: %v, want only the chain state", left)
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
	f.mu.Lock()
	h := f.headers[0]
	f.mu.Unlock()
	if h.Get("X-Amz-Server-Side-Encryption") != "aws:kms" || h.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id") != "alias/frontdoor-audit" {
		t.Errorf("SSE headers: %v", h)
	}
}

func spooled(s *Sink) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ready) + len(s.bodies) + len(s.links)
}

// The bucket unreachable in the middle of shipping, then answering but
// its answers lost: nothing lost, nothing duplicated, one unbroken chain.
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
		return testutil.ToFloat64(s.metrics.uploads.WithLabelValues("error")) >= 2 && spooled(s) >= 6
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
	if c := f.chains(t); len(c) != 1 {
		t.Errorf("%d chains, want 1", len(c))
	}
	f.mu.Lock()
	conflicts := f.conflicts
	f.mu.Unlock()
	if conflicts == 0 {
		t.Error("no upload met its own earlier copy (412): the lost-answer case was not exercised")
	}
	t.Logf("PUTs refused: %d, stored with answer lost: %d, re-sent and recognised (412): %d, objects: %d, upload errors: %v",
		f.putsIn(modeRefuse), f.putsIn(modeAckLost), conflicts, len(f.contents(t)), testutil.ToFloat64(s.metrics.uploads.WithLabelValues("error")))
	for _, reason := range []string{"spool_full", "conflict"} {
		if v := testutil.ToFloat64(s.metrics.dropped.WithLabelValues(reason, "authenticated")); v != 0 {
			t.Errorf("dropped (%s) %v", reason, v)
		}
	}
}

// crash stops a sink dead: the worker returns, nothing is flushed, the
// open batches stay as they are.
func crash(t *testing.T, s *Sink) {
	t.Helper()
	s.abort()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ob := range s.open {
		if ob != nil {
			ob.f.Close()
		}
	}
}

// A crash (no flush, a last line cut short) and a restart on the same
// spool: what was spooled is uploaded, and the chain goes on.
func TestCrashResume(t *testing.T) {
	f := startS3(t)
	spool := t.TempDir()
	cfg := testConfig(f, spool)
	f.setMode(modeRefuse)
	s1 := newSink(t, cfg, nil)
	record(s1, 0, 15) // one full batch of 10 (linked, refused), 5 in the open batch
	eventually(t, "the full batch linked", func() bool {
		m, _ := filepath.Glob(filepath.Join(spool, "link-*"))
		return len(m) == 1
	})
	s1.mu.Lock()
	open := filepath.Join(spool, s1.open[audit.ClassAuthenticated].file.name())
	s1.mu.Unlock()
	crash(t, s1)
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
	if v := testutil.ToFloat64(s2.metrics.dropped.WithLabelValues("truncated", "authenticated")); v != 1 {
		t.Errorf("truncated line counted %v times, want 1", v)
	}
	record(s2, 15, 5)
	closeSink(t, s2)
	counts, total := f.sessionCounts(t)
	if total != 20 || len(counts) != 20 {
		t.Errorf("bucket holds %d events, %d distinct; want 20", total, len(counts))
	}
	chains := f.chains(t)
	if len(chains) != 1 {
		t.Fatalf("%d chains after a crash, want the one going on", len(chains))
	}
	for _, c := range chains {
		if len(c) != 3 {
			t.Errorf("%d batches, want 1 (before the crash), 2 (left open by it) and 3 (after)", len(c))
		}
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
		s.Record(audit.Event{Time: time.Now(), Type: audit.TypeSessionEnd, Session: fmt.Sprintf("s%05d", i), Reason: pad})
	}
	dropped := int(testutil.ToFloat64(s.metrics.dropped.WithLabelValues("spool_full", "authenticated")))
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
	s.rotateLocked(audit.ClassAuthenticated) // as batch_max_age would
	s.mu.Unlock()
	eventually(t, "the spooled events uploaded and room again", func() bool {
		_, n := f.sessionCounts(t)
		return n == accepted && testutil.ToFloat64(s.metrics.full) == 0
	})
	record(s, 1000, 5)
	if v := int(testutil.ToFloat64(s.metrics.dropped.WithLabelValues("spool_full", "authenticated"))); v != dropped {
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
	// The batch after the drops says how many there were.
	var reported int64
	for _, c := range f.chains(t) {
		for _, b := range c {
			reported += b.Header.Dropped["authenticated"]
		}
	}
	if reported != int64(dropped) {
		t.Errorf("batch headers report %d dropped events, the sink dropped %d", reported, dropped)
	}
	t.Logf("spool cap 64 KiB: %d of 100 1-KB events accepted, %d dropped", accepted, dropped)
}

// An object under a batch's key that is not that batch is never
// overwritten: the batch is set aside in the spool, counted, and the
// chain goes on (verify shows the break).
func TestConflictSetAside(t *testing.T) {
	f := startS3(t)
	spool := t.TempDir()
	cfg := testConfig(f, spool)
	f.setMode(modeRefuse)
	var logs bytes.Buffer
	var logMu sync.Mutex
	s := newSink(t, cfg, slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil)))
	record(s, 0, 10)
	var key string
	eventually(t, "the batch linked", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.links) == 0 {
			return false
		}
		key = headerKey("audit", s.links[0].header)
		return true
	})
	foreign := gzipBytes([]byte(`{"time":"2026-12-03T06:00:00Z","type":"auth","session":"planted"}` + "\n"))
	if _, err := f.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(foreign)}); err != nil {
		t.Fatal(err)
	}
	f.setMode(modeNormal)
	record(s, 10, 3)
	closeSink(t, s)
	if testutil.ToFloat64(s.metrics.conflicts) != 1 {
		t.Errorf("conflicts = %v, want 1", testutil.ToFloat64(s.metrics.conflicts))
	}
	got, err := f.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if !bytes.Equal(body, foreign) {
		t.Error("the object under the batch's key was overwritten")
	}
	if m, _ := filepath.Glob(filepath.Join(spool, "link-*.conflict")); len(m) != 1 {
		t.Errorf("set aside: %v, want one link file", m)
	}
	logMu.Lock()
	if !strings.Contains(logs.String(), "AUDIT BATCH NOT UPLOADED") {
		t.Error("the conflict was not logged as an error")
	}
	logMu.Unlock()
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

package verify

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
)

const bucketName = "audit-bucket"

// bucket is gofakes3 (a real S3 implementation, in memory) with a clock
// the test moves, so that LastModified says what was written first.
type bucket struct {
	client *s3.Client
	clock  gofakes3.TimeSourceAdvancer
	spools map[string]string // gateway → its spool directory
}

func newBucket(t *testing.T) *bucket {
	t.Helper()
	clock := gofakes3.FixedTimeSource(time.Now().UTC())
	backend := s3mem.New(s3mem.WithTimeSource(clock))
	if err := backend.CreateBucket(bucketName); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend, gofakes3.WithTimeSource(clock)).Server())
	t.Cleanup(srv.Close)
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	return &bucket{client: client, clock: clock, spools: map[string]string{}}
}

// ship runs gw's S3 sink (its spool kept across calls, so its chain goes
// on) for n session events from the audit logger, in batches of 5.
func (b *bucket) ship(t *testing.T, gw string, from, n int, edit ...func(*audit.Event)) {
	t.Helper()
	if b.spools[gw] == "" {
		b.spools[gw] = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := s3sink.DefaultConfig()
	cfg.Bucket, cfg.Region, cfg.BatchMaxEvents, cfg.BatchMaxAge, cfg.SpoolDir = bucketName, "us-east-1", 5, time.Hour, b.spools[gw]
	sink, err := s3sink.New(ctx, cfg, gw, s3sink.Options{Logger: slog.New(slog.DiscardHandler), API: b.client})
	if err != nil {
		t.Fatal(err)
	}
	l := audit.New(nil, slog.New(slog.DiscardHandler), audit.Options{})
	l.AddSink(sink)
	for i := from; i < from+n; i++ {
		e := audit.Event{Type: audit.TypeSessionStart, Gateway: gw, Session: fmt.Sprintf("%s-s%04d", gw, i), User: "alice", Node: "login1"}
		for _, f := range edit {
			f(&e)
		}
		l.Record(e)
		b.clock.Advance(time.Millisecond)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Second)
}

// keys are gw's chained object keys in chain order.
func (b *bucket) keys(t *testing.T, gw string) []string {
	t.Helper()
	objs, err := S3{API: b.client, Bucket: bucketName}.List(context.Background(), "audit/"+gw+"/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	slices.SortFunc(keys, func(x, y string) int {
		kx, _ := s3sink.ParseKey("audit", x)
		ky, _ := s3sink.ParseKey("audit", y)
		return strings.Compare(fmt.Sprintf("%s-%020d", kx.Chain, kx.Seq), fmt.Sprintf("%s-%020d", ky.Chain, ky.Seq))
	})
	return keys
}

func (b *bucket) get(t *testing.T, key string) []byte {
	t.Helper()
	body, err := S3{API: b.client, Bucket: bucketName}.Get(context.Background(), key, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// put writes key as someone with more rights than a gateway would: no
// If-None-Match, so it overwrites.
func (b *bucket) put(t *testing.T, key string, body []byte) {
	t.Helper()
	if _, err := b.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucketName), Key: aws.String(key),
		Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Second)
}

func (b *bucket) delete(t *testing.T, key string) {
	t.Helper()
	if _, err := b.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucketName), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
}

func (b *bucket) verify(t *testing.T) *Report {
	t.Helper()
	r, err := Verify(context.Background(), S3{API: b.client, Bucket: bucketName}, Options{Prefix: "audit"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// healthy is the bucket every case starts from: two gateways, gw2 with a
// second chain (its spool lost), and gw1's objects from before chaining.
func healthy(t *testing.T) *bucket {
	b := newBucket(t)
	b.put(t, "audit/2026/11/30/gw1-0000000001.jsonl.gz", gzipped(`{"time":"2026-11-30T06:00:00Z","type":"session.start","gateway":"gw1","session":"old"}`))
	b.ship(t, "gw1", 0, 20) // seq 1-4
	b.ship(t, "gw2", 0, 10)
	os.Remove(filepath.Join(b.spools["gw2"], "chain"))
	b.ship(t, "gw2", 10, 7)
	return b
}

func gzipped(lines ...string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, l := range lines {
		io.WriteString(zw, l+"\n")
	}
	zw.Close()
	return buf.Bytes()
}

type finding struct{ kind, key, other string }

func findings(r *Report) []finding {
	var out []finding
	for _, p := range r.Problems {
		out = append(out, finding{p.Kind, p.Key, p.Other})
	}
	return out
}

func TestCleanBucketVerifies(t *testing.T) {
	b := healthy(t)
	r := b.verify(t)
	if !r.OK || len(r.Problems) != 0 {
		t.Fatalf("problems in a clean bucket: %+v", r.Problems)
	}
	if len(r.Chains) != 3 || r.Objects != 1+4+2+2 {
		t.Errorf("%d chains, %d objects: %+v", len(r.Chains), r.Objects, r.Chains)
	}
	for _, c := range r.Chains {
		if c.FirstSeq != 1 || !strings.Contains(c.Started, "no chain state") || c.Problems != 0 {
			t.Errorf("chain %+v", c)
		}
	}
	if gw1 := r.Chains[0]; gw1.Gateway != "gw1" || gw1.Batches != 4 || gw1.Events != 20 || gw1.LastSeq != 4 {
		t.Errorf("gw1's chain: %+v", gw1)
	}
	if len(r.Unchained) != 1 || r.Unchained[0].Gateway != "gw1" || r.Unchained[0].Objects != 1 {
		t.Errorf("unchained: %+v", r.Unchained)
	}
	var table, js bytes.Buffer
	WriteTable(&table, r)
	WriteJSON(&js, r)
	if !strings.Contains(table.String(), "3 chains: OK") || !strings.Contains(js.String(), `"ok": true`) {
		t.Errorf("table:\n%s\njson:\n%s", table.String(), js.String())
	}
}

// Every kind of tampering is reported at the objects it touched, and
// nothing else is.
func TestTamperingIsReportedPrecisely(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, b *bucket, k []string) []finding
	}{
		{"deleted", func(t *testing.T, b *bucket, k []string) []finding {
			b.delete(t, k[1])
			return []finding{{KindGap, k[2], k[0]}}
		}},
		{"first deleted", func(t *testing.T, b *bucket, k []string) []finding {
			b.delete(t, k[0])
			return []finding{{KindGap, k[1], ""}}
		}},
		{"modified", func(t *testing.T, b *bucket, k []string) []finding {
			obj := b.get(t, k[1])
			bat, _ := audit.ParseBatch(obj)
			var lines []string
			for _, e := range bat.Events {
				lines = append(lines, fmt.Sprintf(`{"time":%q,"type":"session.start","gateway":"gw1","session":%q,"user":"mallory"}`,
					e.Time.Format(time.RFC3339Nano), e.Session))
			}
			h, _ := audit.ReadHeader(obj)
			hdr := fmt.Sprintf(`{"time":%q,"type":"batch","v":1,"gateway":"gw1","chain":%q,"seq":2,"prev":%q,"events":5,"first":%q,"last":%q}`,
				h.Time.Format(time.RFC3339Nano), h.Chain, h.Prev, h.First.Format(time.RFC3339Nano), h.Last.Format(time.RFC3339Nano))
			b.put(t, k[1], append(gzipped(hdr), gzipped(lines...)...))
			return []finding{{KindBreak, k[2], k[1]}}
		}},
		{"reordered", func(t *testing.T, b *bucket, k []string) []finding {
			o2, o3 := b.get(t, k[1]), b.get(t, k[2])
			b.put(t, k[1], o3)
			b.put(t, k[2], o2)
			return []finding{{KindBreak, k[1], k[0]}, {KindMismatch, k[1], ""}, {KindBreak, k[2], k[1]}, {KindMismatch, k[2], ""},
				{KindBreak, k[3], k[2]}}
		}},
		{"inserted at the end", func(t *testing.T, b *bucket, k []string) []finding {
			next := strings.Replace(k[3], "0000000004", "0000000005", 1)
			obj := b.get(t, k[3])
			b.put(t, next, obj) // a copy of seq 4 posing as seq 5
			return []finding{{KindMismatch, next, ""}, {KindBreak, next, k[3]}}
		}},
		{"inserted twice: a copy under another day", func(t *testing.T, b *bucket, k []string) []finding {
			key, _ := s3sink.ParseKey("audit", k[1])
			key.Day = key.Day.Add(-24 * time.Hour)
			copyKey := key.String("audit")
			b.put(t, copyKey, b.get(t, k[1]))
			return []finding{{KindDuplicate, copyKey, k[1]}, {KindMismatch, copyKey, ""}}
		}},
		{"garbage at a batch key", func(t *testing.T, b *bucket, k []string) []finding {
			next := strings.Replace(k[3], "0000000004", "0000000005", 1)
			b.put(t, next, []byte("not a batch"))
			return []finding{{KindUnreadable, next, ""}}
		}},
		{"outside any gateway prefix", func(t *testing.T, b *bucket, k []string) []finding {
			b.put(t, "audit/notes.txt", []byte("hello"))
			b.put(t, "audit/gw1/2026/12/03/whatever.jsonl.gz", gzipped(`{"time":"2026-12-03T06:00:00Z","type":"auth"}`))
			return []finding{{KindForeign, "audit/gw1/2026/12/03/whatever.jsonl.gz", ""}, {KindForeign, "audit/notes.txt", ""}}
		}},
		{"an old-layout object written after chaining began", func(t *testing.T, b *bucket, k []string) []finding {
			late := "audit/2026/12/01/gw1-0000000002.jsonl.gz"
			b.put(t, late, gzipped(`{"time":"2026-12-01T06:00:00Z","type":"session.start","gateway":"gw1","session":"forged"}`))
			return []finding{{KindLate, late, ""}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := healthy(t)
			k := b.keys(t, "gw1")
			if len(k) != 4 {
				t.Fatalf("gw1 has %d objects, want 4", len(k))
			}
			want := tc.tamper(t, b, k)
			r := b.verify(t)
			got := findings(r)
			sortFindings(got)
			sortFindings(want)
			if !slices.Equal(got, want) || r.OK {
				var table bytes.Buffer
				WriteTable(&table, r)
				t.Errorf("found:\n%v\nwant:\n%v\n%s", got, want, table.String())
			}
		})
	}
}

func sortFindings(f []finding) {
	slices.SortFunc(f, func(a, b finding) int { return strings.Compare(a.key+a.kind, b.key+b.kind) })
}

// A record in gw1's batches that speaks for gw2 is reported: a gateway
// may say only what it authenticated itself.
func TestRecordOfAnotherGateway(t *testing.T) {
	b := newBucket(t)
	b.ship(t, "gw1", 0, 3, func(e *audit.Event) {
		if e.Session == "gw1-s0001" {
			e.Gateway = "gw2"
		}
	})
	r := b.verify(t)
	if len(r.Problems) != 1 || r.Problems[0].Kind != KindOtherGateway || !strings.Contains(r.Problems[0].Detail, `"gw2"`) {
		t.Errorf("problems: %+v", r.Problems)
	}
}

// A chain that starts without saying why, or a later batch that links to
// nothing, is reported; so is a batch too large to be one.
func TestBadStartsAndSizes(t *testing.T) {
	b := newBucket(t)
	b.ship(t, "gw1", 0, 5)
	k := b.keys(t, "gw1")[0]
	h, _ := audit.ReadHeader(b.get(t, k))
	name := strings.Replace(h.Chain, h.Chain[len(h.Chain)-8:], "00000000", 1)
	day := h.First.UTC().Format("2006/01/02")
	mk := func(seq int, prev, restart string) []byte {
		hdr := fmt.Sprintf(`{"time":%q,"type":"batch","v":1,"gateway":"gw1","chain":%q,"seq":%d,"prev":%q,"restart":%q,"events":1,"first":%q,"last":%q}`,
			h.First.Format(time.RFC3339Nano), name, seq, prev, restart, h.First.Format(time.RFC3339Nano), h.First.Format(time.RFC3339Nano))
		return append(gzipped(hdr), gzipped(fmt.Sprintf(`{"time":%q,"type":"auth","gateway":"gw1"}`, h.First.Format(time.RFC3339Nano)))...)
	}
	key := func(seq int) string { return fmt.Sprintf("audit/gw1/%s/%s-%010d.jsonl.gz", day, name, seq) }
	b.put(t, key(1), mk(1, "", ""))
	b.put(t, key(2), mk(2, "", ""))
	r, err := Verify(context.Background(), S3{API: b.client, Bucket: bucketName}, Options{Prefix: "audit", Gateway: "gw1", MaxObjectBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	got := findings(r)
	want := []finding{{KindBadStart, key(1), ""}, {KindBadStart, key(2), ""}}
	if !slices.Equal(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
	r, err = Verify(context.Background(), S3{API: b.client, Bucket: bucketName}, Options{Prefix: "audit", Gateway: "gw1", MaxObjectBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Problems); n == 0 || r.Problems[0].Kind != KindUnreadable || !strings.Contains(r.Problems[0].Detail, "too large") {
		t.Errorf("objects over the size limit: %+v", r.Problems)
	}
}

// With the bucket's lifecycle expiring objects after RetentionDays, a
// chain whose oldest batches are gone is fine when what is left is that
// old; the same hole in a young chain is a gap.
func TestExpiredHead(t *testing.T) {
	b := newBucket(t)
	b.ship(t, "gw1", 0, 15)
	k := b.keys(t, "gw1")
	b.delete(t, k[0])
	src := S3{API: b.client, Bucket: bucketName}
	written := b.clock.Now()
	for _, tc := range []struct {
		age     time.Duration
		expired uint64
		ok      bool
	}{
		{399 * 24 * time.Hour, 1, true},
		{10 * 24 * time.Hour, 0, false},
	} {
		r, err := Verify(context.Background(), src, Options{Prefix: "audit", RetentionDays: 400, Now: func() time.Time { return written.Add(tc.age) }})
		if err != nil {
			t.Fatal(err)
		}
		if r.OK != tc.ok || r.Chains[0].Expired != tc.expired {
			t.Errorf("head gone, the rest %s old: ok %v, expired through %d; problems %+v", tc.age, r.OK, r.Chains[0].Expired, r.Problems)
		}
	}
}

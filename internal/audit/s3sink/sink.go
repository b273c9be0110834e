// Package s3sink ships audit events to an S3 bucket: batches of JSON
// lines, gzipped, one object per batch under
// PREFIX/yyyy/mm/dd/GATEWAY-SEQ.jsonl.gz, with optional server-side
// encryption.
//
// Nothing is lost while the bucket is unreachable: every event is appended
// to a batch file in a local spool directory first (Record never waits for
// the network), sealed batches wait there until an upload succeeds, and
// what is in the spool at start (after a crash too) is uploaded. The spool
// has a size cap; when it is full new events are dropped, counted and
// logged as errors — the audit file keeps them if one is configured.
// Nothing is duplicated: a batch's key is fixed by its name, and uploads
// are conditional (If-None-Match: *), so a batch uploaded twice (a crash
// or a lost answer after a successful upload) is recognised by its
// checksum and not written again; a different object under the same key
// (a spool directory lost and its sequence restarted) is never
// overwritten — the batch takes the next free number instead.
package s3sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Options are the parts of a Sink built outside it.
type Options struct {
	Logger *slog.Logger
	// API replaces the S3 client built from the config.
	API API
	// RetryMin and RetryMax bound the backoff between failed uploads
	// (after the SDK's own retries). Default 1s and 2m.
	RetryMin, RetryMax time.Duration
	// UploadTimeout bounds one upload, SDK retries included. Default 60s.
	UploadTimeout time.Duration
}

// Sink is an audit.Sink shipping to S3. Record is safe for concurrent use.
type Sink struct {
	cfg     Config
	gateway string
	api     API
	log     *slog.Logger
	opts    Options
	metrics *metrics
	now     func() time.Time
	// transport is the S3 client's, closed with the sink (nil with Options.API).
	transport *http.Transport

	wake     chan struct{} // a batch is ready, or Close wants a flush
	stop     chan struct{} // closed by Close: drain, then return
	kill     chan struct{} // closed (killOnce) to make the worker return at once
	done     chan struct{} // closed when the worker returned
	closeMu  sync.Once
	killOnce sync.Once

	mu sync.Mutex // mu protects the following
	// open is the batch events are appended to (nil: none yet).
	open       *os.File
	openName   batchName
	openEvents int
	openSince  time.Time
	// ready are closed batches the worker has to seal; sealed wait for upload.
	ready   []batchName
	sealed  []batchName
	lastSeq uint64
	bytes   int64 // spool size: open, ready and sealed files
	full    bool
	fullLog time.Time
	dropped int64 // while full, since the last loud log line
	closed  bool
}

// New opens the spool (uploading what an earlier run left there) and
// starts shipping. gateway names this gateway in object keys.
func New(ctx context.Context, cfg Config, gateway string, opts Options) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !names.Gateway.Valid(gateway) {
		return nil, fmt.Errorf("audit s3: gateway name %q cannot be part of an object key (letters, digits, '.', '-')", gateway)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = time.Second
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = max(opts.RetryMin, 2*time.Minute)
	}
	if opts.UploadTimeout <= 0 {
		opts.UploadTimeout = time.Minute
	}
	s := &Sink{cfg: cfg, gateway: gateway, api: opts.API, log: opts.Logger, opts: opts, metrics: newMetrics(), now: time.Now,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), kill: make(chan struct{}), done: make(chan struct{})}
	if s.api == nil {
		c, tr, err := NewClient(ctx, cfg)
		if err != nil {
			return nil, err
		}
		s.api, s.transport = c, tr
	}
	st, err := scanSpool(cfg.SpoolDir)
	if err != nil {
		return nil, err
	}
	s.lastSeq, s.bytes = st.maxSeq, st.bytes
	s.ready, s.sealed = st.unsealed, st.sealed
	if n := len(st.sealed) + len(st.unsealed); n > 0 {
		s.log.Info("audit s3: resuming batches left in the spool", "batches", n, "bytes", st.bytes, "spool", cfg.SpoolDir)
	}
	s.updateGaugesLocked()
	go s.run()
	s.poke()
	return s, nil
}

// Collectors are the sink's metrics, for the caller's registry.
func (s *Sink) Collectors() []prometheus.Collector { return s.metrics.collectors() }

// Record appends one event to the open batch. It never waits for the
// network; a full spool drops the event (counted and logged).
func (s *Sink) Record(e audit.Event) {
	line, err := json.Marshal(e)
	if err != nil {
		s.drop("marshal")
		return
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.dropLocked("closed")
		return
	}
	if s.bytes+int64(len(line)) > s.cfg.SpoolMaxBytes {
		s.dropLocked("spool_full")
		return
	}
	if s.open == nil {
		if err := s.openBatchLocked(e.Time); err != nil {
			s.log.Error("audit s3: cannot open a batch in the spool; event dropped", "err", err, "spool", s.cfg.SpoolDir)
			s.dropLocked("write_error")
			return
		}
	}
	if _, err := s.open.Write(line); err != nil {
		s.log.Error("audit s3: spool write failed; event dropped", "err", err, "spool", s.cfg.SpoolDir)
		s.dropLocked("write_error")
		return
	}
	s.openEvents++
	s.bytes += int64(len(line))
	s.metrics.spoolBytes.Set(float64(s.bytes))
	if s.openEvents >= s.cfg.BatchMaxEvents {
		s.rotateLocked()
	}
}

func (s *Sink) drop(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(reason)
}

func (s *Sink) dropLocked(reason string) {
	s.metrics.dropped.WithLabelValues(reason).Inc()
	if reason != "spool_full" {
		return
	}
	s.dropped++
	now := s.now()
	if !s.full || now.Sub(s.fullLog) >= time.Minute {
		s.log.Error("AUDIT EVENTS DROPPED: audit S3 spool is full; new events are dropped until uploads make room",
			"spool", s.cfg.SpoolDir, "spool_bytes", s.bytes, "spool_max_bytes", s.cfg.SpoolMaxBytes,
			"dropped_since_last_report", s.dropped, "bucket", s.cfg.Bucket)
		s.full, s.fullLog, s.dropped = true, now, 0
		s.metrics.full.Set(1)
	}
}

// openBatchLocked names a new batch after the next sequence number.
func (s *Sink) openBatchLocked(first time.Time) error {
	if first.IsZero() {
		first = s.now()
	}
	day := first.UTC().Truncate(24 * time.Hour)
	b := batchName{day: day, gateway: s.gateway, seq: s.lastSeq + 1}
	if err := writeSeq(s.cfg.SpoolDir, b.seq); err != nil {
		return err
	}
	s.lastSeq = b.seq
	f, err := os.OpenFile(filepath.Join(s.cfg.SpoolDir, b.String()+openExt), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.open, s.openName, s.openEvents, s.openSince = f, b, 0, s.now()
	return nil
}

// rotateLocked closes the open batch and hands it to the worker to seal.
func (s *Sink) rotateLocked() {
	if s.open == nil {
		return
	}
	if err := s.open.Close(); err != nil {
		s.log.Error("audit s3: closing batch", "err", err, "batch", s.openName.String())
	}
	s.ready = append(s.ready, s.openName)
	s.open = nil
	s.poke()
}

func (s *Sink) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Sink) updateGaugesLocked() {
	s.metrics.spoolBytes.Set(float64(s.bytes))
	s.metrics.spoolBatches.Set(float64(len(s.sealed) + len(s.ready)))
	if s.full && s.bytes < s.cfg.SpoolMaxBytes*9/10 {
		s.full = false
		s.metrics.full.Set(0)
		s.log.Warn("audit s3: spool has room again; events are accepted", "spool_bytes", s.bytes, "dropped_since_last_report", s.dropped)
		s.dropped = 0
	}
}

// Close stops accepting events, seals the open batch and uploads what the
// spool holds until ctx ends; what is left is uploaded at the next start.
func (s *Sink) Close(ctx context.Context) error {
	s.closeMu.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.rotateLocked()
		s.mu.Unlock()
		close(s.stop)
	})
	select {
	case <-s.done:
	case <-ctx.Done():
		s.abort()
		<-s.done
	}
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.ready) + len(s.sealed); n > 0 {
		return fmt.Errorf("audit s3: %d batches left in %s; they are uploaded at the next start", n, s.cfg.SpoolDir)
	}
	return nil
}

// abort makes the worker return without finishing what it is doing; the
// spool keeps everything for the next start.
func (s *Sink) abort() { s.killOnce.Do(func() { close(s.kill) }) }

// run is the worker: it seals closed batches, closes a batch at its
// maximum age and uploads sealed batches in order, backing off while
// uploads fail. After Close it keeps going until the spool is empty (or
// Close's context ends).
func (s *Sink) run() {
	defer close(s.done)
	tick := time.NewTicker(max(s.cfg.BatchMaxAge/4, 5*time.Millisecond))
	defer tick.Stop()
	var backoff time.Duration
	var retryAt time.Time
	for {
		select {
		case <-s.kill:
			return
		default:
		}
		stopC := s.stop
		stopping := false
		select {
		case <-s.stop:
			stopping, stopC = true, nil
		default:
		}
		s.mu.Lock()
		if s.open != nil && s.now().Sub(s.openSince) >= s.cfg.BatchMaxAge {
			s.rotateLocked()
		}
		s.mu.Unlock()
		s.sealReady()
		var retry <-chan time.Time
		if d := time.Until(retryAt); d > 0 {
			retry = time.After(d)
		} else if err := s.uploadAll(); err != nil {
			backoff = min(max(2*backoff, s.opts.RetryMin), s.opts.RetryMax)
			wait := backoff/2 + rand.N(backoff/2+1)
			retryAt = time.Now().Add(wait)
			retry = time.After(wait)
			s.log.Warn("audit s3: upload failed; batches stay in the spool", "err", err,
				"retry_in", wait.Round(time.Millisecond), "bucket", s.cfg.Bucket)
		} else {
			backoff = 0
			if stopping {
				return
			}
		}
		select {
		case <-s.kill:
			return
		case <-stopC:
		case <-s.wake:
		case <-tick.C:
		case <-retry:
		}
	}
}

// sealReady seals every batch handed over by rotateLocked.
func (s *Sink) sealReady() {
	for {
		s.mu.Lock()
		if len(s.ready) == 0 {
			s.mu.Unlock()
			return
		}
		b := s.ready[0]
		s.mu.Unlock()
		rawSize := fileSize(filepath.Join(s.cfg.SpoolDir, b.String()+openExt))
		events, size, cut, err := seal(s.cfg.SpoolDir, b)
		if cut {
			s.log.Warn("audit s3: a batch's last line was cut short (crash during a write); dropped", "batch", b.String())
			s.metrics.dropped.WithLabelValues("truncated").Inc()
		}
		s.mu.Lock()
		s.ready = s.ready[1:]
		if err != nil {
			// Keep it for the next start rather than spin on it.
			s.log.Error("audit s3: sealing a batch failed; it stays in the spool until restart", "err", err, "batch", b.String())
		} else {
			s.bytes += size - rawSize
			if events > 0 {
				s.sealed = append(s.sealed, b)
				slices.SortFunc(s.sealed, func(x, y batchName) int { return cmpSeq(x, y) })
			}
		}
		s.updateGaugesLocked()
		s.mu.Unlock()
	}
}

func cmpSeq(x, y batchName) int {
	switch {
	case x.seq < y.seq:
		return -1
	case x.seq > y.seq:
		return 1
	}
	return 0
}

func fileSize(path string) int64 {
	if fi, err := os.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}

// uploadAll uploads sealed batches oldest first until one fails.
func (s *Sink) uploadAll() error {
	for {
		select {
		case <-s.kill:
			return errors.New("killed")
		default:
		}
		s.mu.Lock()
		if len(s.sealed) == 0 {
			s.mu.Unlock()
			return nil
		}
		b := s.sealed[0]
		s.mu.Unlock()
		renamed, err := s.upload(b)
		if err != nil {
			s.metrics.uploads.WithLabelValues("error").Inc()
			return err
		}
		s.mu.Lock()
		if renamed != nil {
			// Key taken by another object: the batch has a new number.
			s.sealed[0] = *renamed
		} else {
			s.sealed = s.sealed[1:]
		}
		s.updateGaugesLocked()
		s.mu.Unlock()
	}
}

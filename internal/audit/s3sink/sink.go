// Package s3sink ships audit events to an S3 bucket: batches of JSON
// lines, gzipped, one object per batch under
// PREFIX/GATEWAY/yyyy/mm/dd/CHAIN-SEQ.jsonl.gz (layout.go), with optional
// server-side encryption.
//
// Each gateway's batches form a hash chain (chain.go): every object
// begins with a header carrying its sequence number and the SHA-256 of the
// previous object, and the chain survives restarts; `frontdoor audit
// verify` checks it. The package comment of chain.go says why batches are
// chained and not signed, in terms of the attacker: someone who owns one
// gateway.
//
// Nothing is lost while the bucket is unreachable: every event is appended
// to a batch file in a local spool directory first (spool.go), closed
// batches wait there until an upload succeeds, and what is in the spool at
// start (after a crash too) is uploaded. The spool has a size cap and
// failed authentications — which any stranger can produce — have a budget
// of their own within it: they are shed first, so a flood of them during
// an outage never displaces session and admin records. What cannot be
// kept is dropped, counted by class and logged — the audit file keeps it
// if one is configured.
//
// Nothing is duplicated or overwritten: a batch's key is fixed once it is
// linked into the chain, and uploads are conditional (If-None-Match: *,
// which the IAM policy in deploy/ requires), so a batch uploaded twice (a
// crash or a lost answer after a successful upload) is recognised by its
// checksum; a different object under the key is never overwritten — the
// batch is set aside and the break is left for verify to show.
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

const nClasses = len(audit.Classes)

// dropReportEvery is the least time between two log lines about dropped
// events of one class.
const dropReportEvery = time.Minute

// openBatch is the batch a class's events are appended to.
type openBatch struct {
	f      *os.File
	file   batchFile
	events int
	since  time.Time
}

// body is a closed, gzipped batch waiting to join the chain.
type body struct {
	batchFile
	size int64
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
	// open is each class's open batch (nil: none yet).
	open [nClasses]*openBatch
	// ready are closed batches the worker has to seal into bodies; bodies
	// wait to be linked (by id); links wait for upload (in chain order).
	ready  []batchFile
	bodies []body
	links  []linkFile
	// linking is the id of the body being linked (0: none): never shed.
	linking uint64
	lastID  uint64
	chain   chainState
	// bytes is each class's share of the spool (open batches and bodies);
	// linkBytes is the link files'.
	bytes     [nClasses]int64
	linkBytes int64
	// pendingDrops are drops since the last link, for its header.
	pendingDrops [nClasses]int64
	// full is set while authenticated events are being dropped.
	full bool
	// dropped counts drops since the last report line, per class.
	dropped    [nClasses]int64
	lastReport [nClasses]time.Time
	closed     bool
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
	st, err := scanSpool(cfg.SpoolDir, gateway)
	if err != nil {
		return nil, err
	}
	if s.chain, err = loadChain(cfg.SpoolDir, gateway, st.links, s.now()); err != nil {
		return nil, err
	}
	if s.chain.Seq == 0 && s.chain.Restart != "" {
		s.log.Warn("audit s3: starting a new audit chain", "chain", s.chain.Chain, "reason", s.chain.Restart, "spool", cfg.SpoolDir)
	}
	s.lastID, s.bytes, s.linkBytes = st.maxID, st.bytes, st.linkBytes
	s.ready, s.links = st.open, st.links
	for _, b := range st.bodies {
		s.bodies = append(s.bodies, body{batchFile: b, size: fileSize(filepath.Join(cfg.SpoolDir, b.name()))})
	}
	if n := len(st.open) + len(st.bodies) + len(st.links); n > 0 {
		s.log.Info("audit s3: resuming batches left in the spool", "batches", n, "bytes", s.totalLocked(), "spool", cfg.SpoolDir)
	}
	s.updateGaugesLocked()
	go s.run()
	s.poke()
	return s, nil
}

// Collectors are the sink's metrics, for the caller's registry.
func (s *Sink) Collectors() []prometheus.Collector { return s.metrics.collectors() }

// Name is the sink's name in the audit Logger's metrics.
func (s *Sink) Name() string { return "s3" }

func (s *Sink) totalLocked() int64 {
	return s.bytes[audit.ClassAuthenticated] + s.bytes[audit.ClassUnauthenticated] + s.linkBytes
}

// Record appends one event to its class's open batch. It never waits for
// the network. When the spool has no room, unauthenticated bodies are
// shed for an authenticated event; what still does not fit is dropped
// (counted and logged).
func (s *Sink) Record(e audit.Event) {
	if e.Time.IsZero() { // audit.Logger sets it; every record has one
		e.Time = s.now()
	}
	c := audit.ClassOf(e)
	line, err := json.Marshal(e)
	if err != nil {
		s.drop(c, "marshal")
		return
	}
	line = append(line, '\n')
	n := int64(len(line))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.dropLocked(c, "closed", 1)
		return
	}
	switch c {
	case audit.ClassUnauthenticated:
		if s.bytes[c]+n > s.cfg.unauthenticatedMax() || s.totalLocked()+n > s.cfg.SpoolMaxBytes {
			s.dropLocked(c, "spool_full", 1)
			return
		}
	default:
		if s.totalLocked()+n > s.cfg.SpoolMaxBytes {
			s.shedLocked(s.totalLocked() + n - s.cfg.SpoolMaxBytes)
		}
		if s.totalLocked()+n > s.cfg.SpoolMaxBytes {
			s.dropLocked(c, "spool_full", 1)
			return
		}
	}
	ob := s.open[c]
	if ob == nil {
		if ob, err = s.openBatchLocked(c); err != nil {
			s.log.Error("audit s3: cannot open a batch in the spool; event dropped", "err", err, "spool", s.cfg.SpoolDir)
			s.dropLocked(c, "write_error", 1)
			return
		}
	}
	if _, err := ob.f.Write(line); err != nil {
		s.log.Error("audit s3: spool write failed; event dropped", "err", err, "spool", s.cfg.SpoolDir)
		s.dropLocked(c, "write_error", 1)
		return
	}
	ob.events++
	s.bytes[c] += n
	s.metrics.spoolBytes.Set(float64(s.totalLocked()))
	if ob.events >= s.cfg.BatchMaxEvents {
		s.rotateLocked(c)
	}
}

// shedLocked deletes unauthenticated bodies, oldest first, until need
// bytes are free or none is left (never the one being linked).
func (s *Sink) shedLocked(need int64) {
	for i := 0; i < len(s.bodies) && need > 0; {
		b := s.bodies[i]
		if b.class != audit.ClassUnauthenticated || b.id == s.linking {
			i++
			continue
		}
		path := filepath.Join(s.cfg.SpoolDir, b.name())
		gz, _ := os.ReadFile(path)
		events, _ := countEvents(gz)
		if err := os.Remove(path); err != nil {
			s.log.Error("audit s3: cannot shed a batch of failed authentications", "err", err, "batch", b.name())
			i++
			continue
		}
		s.bodies = slices.Delete(s.bodies, i, i+1)
		s.bytes[b.class] -= b.size
		need -= b.size
		s.dropLocked(b.class, "shed", int64(events))
	}
}

func (s *Sink) drop(c audit.Class, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(c, reason, 1)
}

// dropLocked counts n events of class c that will never reach S3, and
// says so in the log at most once per dropReportEvery per class: loudly
// for authenticated events, as a warning for the noise.
func (s *Sink) dropLocked(c audit.Class, reason string, n int64) {
	s.metrics.dropped.WithLabelValues(reason, c.String()).Add(float64(n))
	s.pendingDrops[c] += n
	if reason != "spool_full" && reason != "shed" {
		return
	}
	s.dropped[c] += n
	now := s.now()
	if c == audit.ClassAuthenticated && !s.full {
		s.full = true
		s.metrics.full.Set(1)
	} else if now.Sub(s.lastReport[c]) < dropReportEvery {
		return
	}
	attrs := []any{"class", c.String(), "dropped_since_last_report", s.dropped[c], "spool", s.cfg.SpoolDir,
		"spool_bytes", s.totalLocked(), "spool_max_bytes", s.cfg.SpoolMaxBytes, "bucket", s.cfg.Bucket}
	if c == audit.ClassAuthenticated {
		s.log.Error("AUDIT EVENTS DROPPED: audit S3 spool is full; new events are dropped until uploads make room", attrs...)
	} else {
		s.log.Warn("audit s3: dropping failed-authentication events: their share of the spool is full (session and admin events are kept)",
			append(attrs, "unauthenticated_max_bytes", s.cfg.unauthenticatedMax())...)
	}
	s.dropped[c], s.lastReport[c] = 0, now
}

// openBatchLocked opens a new batch for class c.
func (s *Sink) openBatchLocked(c audit.Class) (*openBatch, error) {
	b := batchFile{kind: "open", class: c, id: s.lastID + 1}
	f, err := os.OpenFile(filepath.Join(s.cfg.SpoolDir, b.name()), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	s.lastID = b.id
	s.open[c] = &openBatch{f: f, file: b, since: s.now()}
	return s.open[c], nil
}

// rotateLocked closes c's open batch and hands it to the worker to seal.
func (s *Sink) rotateLocked(c audit.Class) {
	ob := s.open[c]
	if ob == nil {
		return
	}
	if err := ob.f.Close(); err != nil {
		s.log.Error("audit s3: closing batch", "err", err, "batch", ob.file.name())
	}
	s.ready = append(s.ready, ob.file)
	s.open[c] = nil
	s.poke()
}

func (s *Sink) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Sink) updateGaugesLocked() {
	total := s.totalLocked()
	s.metrics.spoolBytes.Set(float64(total))
	s.metrics.spoolBatches.Set(float64(len(s.ready) + len(s.bodies) + len(s.links)))
	if s.full && total < s.cfg.SpoolMaxBytes*9/10 {
		s.full = false
		s.metrics.full.Set(0)
		s.log.Warn("audit s3: spool has room again; events are accepted", "spool_bytes", total,
			"dropped_since_last_report", s.dropped[audit.ClassAuthenticated])
		s.dropped[audit.ClassAuthenticated] = 0
	}
}

// Close stops accepting events, seals the open batches and uploads what
// the spool holds until ctx ends; what is left is uploaded at the next
// start.
func (s *Sink) Close(ctx context.Context) error {
	s.closeMu.Do(func() {
		s.mu.Lock()
		s.closed = true
		for _, c := range audit.Classes {
			s.rotateLocked(c)
		}
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
	if n := len(s.ready) + len(s.bodies) + len(s.links); n > 0 {
		return fmt.Errorf("audit s3: %d batches left in %s; they are uploaded at the next start", n, s.cfg.SpoolDir)
	}
	return nil
}

// abort makes the worker return without finishing what it is doing; the
// spool keeps everything for the next start.
func (s *Sink) abort() { s.killOnce.Do(func() { close(s.kill) }) }

func (s *Sink) killed() bool {
	select {
	case <-s.kill:
		return true
	default:
		return false
	}
}

// run is the worker: it seals closed batches, closes a batch at its
// maximum age, links bodies into the chain and uploads them in order,
// backing off while uploads fail. After Close it keeps going until the
// spool is empty (or Close's context ends).
func (s *Sink) run() {
	defer close(s.done)
	tick := time.NewTicker(max(s.cfg.BatchMaxAge/4, 5*time.Millisecond))
	defer tick.Stop()
	var backoff time.Duration
	var retryAt time.Time
	for {
		if s.killed() {
			return
		}
		stopC := s.stop
		stopping := false
		select {
		case <-s.stop:
			stopping, stopC = true, nil
		default:
		}
		s.mu.Lock()
		for c, ob := range s.open {
			if ob != nil && s.now().Sub(ob.since) >= s.cfg.BatchMaxAge {
				s.rotateLocked(audit.Class(c))
			}
		}
		s.mu.Unlock()
		s.sealReady()
		var retry <-chan time.Time
		if d := time.Until(retryAt); d > 0 {
			retry = time.After(d)
		} else if err := s.ship(); err != nil {
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

// sealReady seals every batch handed over by rotateLocked (and those a
// crash left open) into bodies.
func (s *Sink) sealReady() {
	for {
		s.mu.Lock()
		if len(s.ready) == 0 {
			s.mu.Unlock()
			return
		}
		b := s.ready[0]
		s.mu.Unlock()
		rawSize := fileSize(filepath.Join(s.cfg.SpoolDir, b.name()))
		events, size, cut, err := seal(s.cfg.SpoolDir, b)
		if cut {
			s.log.Warn("audit s3: a batch's last line was cut short (crash during a write); dropped", "batch", b.name())
			s.metrics.dropped.WithLabelValues("truncated", b.class.String()).Inc()
		}
		s.mu.Lock()
		s.ready = s.ready[1:]
		if err != nil {
			// Keep it for the next start rather than spin on it.
			s.log.Error("audit s3: sealing a batch failed; it stays in the spool until restart", "err", err, "batch", b.name())
		} else {
			s.bytes[b.class] += size - rawSize
			if events > 0 {
				bb := b
				bb.kind = "body"
				s.bodies = append(s.bodies, body{batchFile: bb, size: size})
				slices.SortFunc(s.bodies, func(x, y body) int { return cmpUint(x.id, y.id) })
			}
		}
		s.updateGaugesLocked()
		s.mu.Unlock()
	}
}

func fileSize(path string) int64 {
	if fi, err := os.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}

// ship uploads link files in chain order and links the next body when
// none is left, until the spool is empty or something fails.
func (s *Sink) ship() error {
	for {
		if s.killed() {
			return errors.New("killed")
		}
		s.mu.Lock()
		nLinks, nBodies := len(s.links), len(s.bodies)
		s.mu.Unlock()
		switch {
		case nLinks > 0:
			if err := s.upload(); err != nil {
				s.metrics.uploads.WithLabelValues("error").Inc()
				return err
			}
		case nBodies > 0:
			if err := s.link(); err != nil {
				return fmt.Errorf("spool: linking a batch: %w", err)
			}
		default:
			return nil
		}
	}
}

// link makes the oldest body the chain's next batch: it writes the link
// file, then the chain state, then removes the body (see spool.go for
// what a crash between the steps leaves).
func (s *Sink) link() error {
	s.mu.Lock()
	b := s.bodies[0]
	s.linking = b.id
	st := s.chain
	dropped := map[string]int64{}
	drops := s.pendingDrops
	for _, c := range audit.Classes {
		if drops[c] > 0 {
			dropped[c.String()] = drops[c]
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.linking = 0
		s.mu.Unlock()
	}()
	path := filepath.Join(s.cfg.SpoolDir, b.name())
	gz, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	bi, err := inspectBody(gz)
	if err != nil {
		// A body this sink wrote does not read back: set it aside for a
		// human rather than put it in the chain or spin on it.
		s.log.Error("audit s3: corrupt batch in the spool moved aside", "batch", b.name(), "err", err)
		os.Rename(path, path+".corrupt")
		s.mu.Lock()
		s.removeBodyLocked(b.id)
		s.bytes[b.class] -= b.size
		s.metrics.dropped.WithLabelValues("corrupt", b.class.String()).Inc()
		s.mu.Unlock()
		return nil
	}
	if len(dropped) == 0 {
		dropped = nil
	}
	obj, next, err := linkObject(st, gz, bi, dropped, s.now())
	if err != nil {
		return err
	}
	lf := linkFile{batchFile: batchFile{kind: "link", id: b.id, seq: next.Seq}, hash: next.Hash, size: int64(len(obj))}
	if lf.header, err = audit.ReadHeader(obj); err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(s.cfg.SpoolDir, lf.name()), obj); err != nil {
		return err
	}
	if err := writeChain(s.cfg.SpoolDir, next); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chain = next
	s.removeBodyLocked(b.id)
	s.bytes[b.class] -= b.size
	s.links = append(s.links, lf)
	s.linkBytes += lf.size
	for _, c := range audit.Classes {
		s.pendingDrops[c] -= drops[c]
	}
	return nil
}

func (s *Sink) removeBodyLocked(id uint64) {
	s.bodies = slices.DeleteFunc(s.bodies, func(b body) bool { return b.id == id })
}

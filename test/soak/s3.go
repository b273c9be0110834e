package soak

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// S3 is the audit bucket the gateways ship to: gofakes3 (S3's wire
// protocol, in memory) behind a switch that can make it unreachable the
// way a network does: new connections are accepted and never answered,
// and the ones in flight go silent.
type S3 struct {
	Bucket  string
	backend *s3mem.Backend
	srv     *http.Server
	direct  net.Listener // gofakes3 itself
	ln      net.Listener // the switch the gateways connect to

	mu    sync.Mutex // mu protects the following
	down  bool
	conns map[net.Conn]net.Conn // client side → gofakes3 side (nil: black-holed)
}

// StartS3 starts the bucket and its switch on 127.0.0.1.
func StartS3(bucket string) (*S3, error) {
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		return nil, err
	}
	direct, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		direct.Close()
		return nil, err
	}
	s := &S3{Bucket: bucket, backend: be, direct: direct, ln: ln, conns: map[net.Conn]net.Conn{},
		srv: &http.Server{Handler: gofakes3.New(be).Server()}}
	go s.srv.Serve(direct)
	go s.serve()
	return s, nil
}

// URL is the endpoint the gateways use (through the switch).
func (s *S3) URL() string { return "http://" + s.ln.Addr().String() }

func (s *S3) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.down {
			s.conns[c] = nil
			s.mu.Unlock()
			continue
		}
		s.mu.Unlock()
		b, err := net.Dial("tcp", s.direct.Addr().String())
		if err != nil {
			c.Close()
			continue
		}
		s.mu.Lock()
		s.conns[c] = b
		s.mu.Unlock()
		go func() { io.Copy(b, c); b.Close() }()
		go func() {
			io.Copy(c, b)
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.conns[c] == nil && s.down {
				return // black-holed: the client waits for its own timeout
			}
			delete(s.conns, c)
			c.Close()
		}()
	}
}

// Cut makes the bucket unreachable: connections in flight go silent, new
// ones are accepted and never answered.
func (s *S3) Cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = true
	for c, b := range s.conns {
		if b != nil {
			s.conns[c] = nil
			b.Close()
		}
	}
}

// Restore makes it reachable again; the silent connections are closed
// (the client sees them fail and retries).
func (s *S3) Restore() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
	for c, b := range s.conns {
		if b == nil {
			c.Close()
			delete(s.conns, c)
		}
	}
}

// Close stops the bucket.
func (s *S3) Close() {
	s.ln.Close()
	s.srv.Close()
	s.mu.Lock()
	for c, b := range s.conns {
		c.Close()
		if b != nil {
			b.Close()
		}
	}
	s.mu.Unlock()
}

// Events reads every object in the bucket: each event once per object it
// is in.
func (s *S3) Events() ([]audit.Event, error) {
	list, err := s.backend.ListBucket(s.Bucket, nil, gofakes3.ListBucketPage{})
	if err != nil {
		return nil, err
	}
	var out []audit.Event
	for _, c := range list.Contents {
		obj, err := s.backend.GetObject(s.Bucket, c.Key, nil)
		if err != nil {
			return nil, err
		}
		evs, err := readBatch(obj.Contents)
		obj.Contents.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Key, err)
		}
		out = append(out, evs...)
	}
	return out, nil
}

func readBatch(r io.Reader) ([]audit.Event, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	var out []audit.Event
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var e audit.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

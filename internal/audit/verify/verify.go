// Package verify checks an audit bucket: every gateway's hash chains of
// batches (internal/audit/s3sink) and everything else under the prefix.
// It is what `frontdoor audit verify` runs.
//
// What is checked, and what each finding means:
//
//   - every object under PREFIX is a batch key: PREFIX/GATEWAY/… (chained)
//     or PREFIX/yyyy/mm/dd/GATEWAY-SEQ.jsonl.gz (from before chaining);
//     anything else is foreign: written outside any gateway's prefix;
//   - every object parses as a batch (audit.ParseBatch): gzip, a header
//     first for a chained key, every line a record; its header agrees with
//     its key (gateway, chain, seq, day of the first event) and with its
//     content (event count, time span); no event names another gateway;
//   - per chain: seq runs from 1 without a gap or a duplicate; seq 1 says
//     why the chain began and links to nothing; every later batch links to
//     the hash of the one before (a break: that object was changed after
//     the next was written, or the next was not written after it);
//   - an object from before chaining that was written after its gateway's
//     first chained batch (an old IAM policy still attached?) is a problem.
//
// What it cannot see: batches removed from the end of a chain (only Object
// Lock on the bucket prevents that), and a stolen gateway's lies about the
// logins it handled itself. A gateway may start several chains (each time
// it lost its chain state); each start is listed with its reason, not
// counted as a problem.
//
// The checks are pure over what the Source returns; the Source for a real
// bucket is S3 (s3.go).
package verify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Object is one object of the bucket as a listing shows it.
type Object struct {
	Key      string
	Size     int64
	Modified time.Time
}

// Source is where Verify reads a bucket.
type Source interface {
	// List returns every object whose key starts with prefix.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Get returns an object's bytes, at most limit of them (more: an
	// error wrapping ErrTooLarge).
	Get(ctx context.Context, key string, limit int64) ([]byte, error)
}

// ErrTooLarge is returned by Source.Get for an object over the limit.
var ErrTooLarge = errors.New("object too large")

// Options say what to verify.
type Options struct {
	// Prefix is the key prefix (audit.s3.prefix).
	Prefix string
	// Gateway, if set, verifies only that gateway's prefix.
	Gateway string
	// Concurrency is how many objects are read at once. Default 8.
	Concurrency int
	// MaxObjectBytes: a larger object is a problem and not read. Default
	// 256 MiB (a batch is at most batch_max_events lines).
	MaxObjectBytes int64
	// RetentionDays is when the bucket's lifecycle expires objects (0:
	// never). The oldest batches of a chain may then be gone: a chain whose
	// first batch found is not seq 1 is not a gap if that batch is itself
	// within two days of expiring; younger, it is.
	RetentionDays int
	// Now is the clock for RetentionDays. Default time.Now.
	Now func() time.Time
}

// Problem kinds: stable strings, for scripts reading -o json.
const (
	KindForeign      = "foreign"       // an object outside any gateway's prefix, or not a batch name
	KindUnreadable   = "unreadable"    // not a batch: not gzip, a bad line, no header, too large
	KindMismatch     = "mismatch"      // header and key (or header and content) disagree
	KindOtherGateway = "other-gateway" // a record names a gateway other than the one that wrote it
	KindDuplicate    = "duplicate"     // a sequence number twice in one chain
	KindGap          = "gap"           // sequence numbers missing
	KindBreak        = "break"         // a batch does not link to the one before it
	KindBadStart     = "bad-start"     // a chain start that links somewhere or gives no reason; a later batch that links nowhere
	KindLate         = "late-unchained"
)

// Problem is one finding, with the keys it concerns.
type Problem struct {
	Kind    string `json:"kind"`
	Gateway string `json:"gateway,omitempty"`
	Chain   string `json:"chain,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
	// Key is the object the problem is found at; Other the neighbour it
	// concerns (the batch before a break or a gap, the first of a
	// duplicate).
	Key    string `json:"key,omitempty"`
	Other  string `json:"other_key,omitempty"`
	Detail string `json:"detail"`
}

// Chain summarises one chain as found.
type Chain struct {
	Gateway string `json:"gateway"`
	Name    string `json:"chain"`
	Batches int    `json:"batches"`
	Events  int    `json:"events"`
	// FirstSeq and LastSeq are the lowest and highest seq found.
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	// From and To span the events' times.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Started is why the chain began (seq 1's header), if seq 1 is there.
	Started string `json:"started,omitempty"`
	// Expired is the last seq of the chain's head that is gone as the
	// bucket's lifecycle expires it (Options.RetentionDays); 0: none.
	Expired  uint64 `json:"expired_through_seq,omitempty"`
	FirstKey string `json:"first_key"`
	LastKey  string `json:"last_key"`
	// Dropped sums what the gateway's spool said it dropped, by class.
	Dropped  map[string]int64 `json:"dropped,omitempty"`
	Problems int              `json:"problems"`
}

// Unchained summarises one gateway's objects from before chaining.
type Unchained struct {
	Gateway  string `json:"gateway"`
	Objects  int    `json:"objects"`
	Events   int    `json:"events"`
	FirstKey string `json:"first_key"`
	LastKey  string `json:"last_key"`
}

// Report is what Verify found. OK is true when there is no problem.
type Report struct {
	Bucket    string      `json:"bucket,omitempty"`
	Prefix    string      `json:"prefix"`
	Objects   int         `json:"objects"`
	Chains    []Chain     `json:"chains"`
	Unchained []Unchained `json:"unchained,omitempty"`
	Problems  []Problem   `json:"problems"`
	OK        bool        `json:"ok"`
}

// Verify lists and reads the bucket through src and checks it. The error
// is for a bucket that could not be read (listing, a GET failing); what is
// wrong with its contents is in the Report.
func Verify(ctx context.Context, src Source, opts Options) (*Report, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.MaxObjectBytes <= 0 {
		opts.MaxObjectBytes = 256 << 20
	}
	listPrefix := opts.Prefix + "/"
	if opts.Gateway != "" {
		if !names.Gateway.Valid(opts.Gateway) {
			return nil, fmt.Errorf("%q is not a gateway name", opts.Gateway)
		}
		listPrefix += opts.Gateway + "/"
	}
	objs, err := src.List(ctx, listPrefix)
	if err != nil {
		return nil, err
	}
	found, err := readAll(ctx, src, opts, objs)
	if err != nil {
		return nil, err
	}
	var expiring time.Time // objects written before it are about to expire
	if opts.RetentionDays > 0 {
		if opts.Now == nil {
			opts.Now = time.Now
		}
		expiring = opts.Now().Add(-time.Duration(opts.RetentionDays-2) * 24 * time.Hour)
	}
	r := check(opts.Prefix, found, expiring)
	r.Objects = len(objs)
	return r, nil
}

// readAll reads and checks every object that has a batch key, opts.Concurrency at a time.
func readAll(ctx context.Context, src Source, opts Options, objs []Object) ([]found, error) {
	out := make([]found, len(objs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f, err := readOne(ctx, src, opts, objs[i])
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				out[i] = f
			}
		}()
	}
	for i := range objs {
		select {
		case work <- i:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, ctx.Err()
}

// readOne reads one object (unless its key is foreign) and checks it on
// its own.
func readOne(ctx context.Context, src Source, opts Options, o Object) (found, error) {
	k, kerr := s3sink.ParseKey(opts.Prefix, o.Key)
	if kerr != nil {
		return found{obj: o, keyErr: kerr}, nil
	}
	if o.Size > opts.MaxObjectBytes {
		return inspect(o, k, nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, o.Size)), nil
	}
	body, err := src.Get(ctx, o.Key, opts.MaxObjectBytes)
	if errors.Is(err, ErrTooLarge) {
		return inspect(o, k, nil, err), nil
	}
	if err != nil {
		return found{}, err
	}
	return inspect(o, k, body, nil), nil
}

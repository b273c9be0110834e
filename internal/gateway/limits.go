package gateway

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// Limits on what strangers can make the gateway (and the login nodes and
// the directory) do before they prove anything:
//
//   - admission (admission.go) bounds unauthenticated connections, in all
//     and per source;
//   - kexBudget (below) bounds the key exchanges one connection gets
//     before it authenticates: each costs the gateway a key agreement and
//     a host-key signature, and x/crypto would run as many as a client
//     asks for;
//   - the lookup gate (lookupgate.go) bounds directory lookups, per source
//     and in all, served fairly between sources;
//   - specBudget (below) bounds node connections opened ahead of a proof,
//     in all, per node and per source, and a preconnection waits for the
//     client's SSH hello (hello.go);
//   - the password gates (throttle.go) bound directory binds.

// SourceKey is the key under which a client address is limited and
// throttled: the IPv4 address, or the /64 of an IPv6 address (one
// subscriber usually holds a whole /64, so per-address limits on IPv6 would
// be per-attempt limits). addr is "host:port" or a bare address.
func SourceKey(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}

// bucket is a token bucket: rate tokens per second, at most burst. The
// caller holds whatever lock protects it.
type bucket struct {
	tokens float64
	at     time.Time // when tokens was computed
}

func newBucket(burst int, now time.Time) bucket { return bucket{tokens: float64(burst), at: now} }

// take spends one token if there is one.
func (b *bucket) take(now time.Time, rate float64, burst int) bool {
	b.tokens = min(float64(burst), b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// full reports whether the bucket has refilled (a new one would be the
// same, so it need not be kept).
func (b *bucket) full(now time.Time, rate float64, burst int) bool {
	return b.tokens+now.Sub(b.at).Seconds()*rate >= float64(burst)
}

// maxSources bounds a per-source table; idle entries are dropped first.
const maxSources = 100000

// pruneSources drops the entries of a per-source table that are idle and
// whose bucket has refilled (they would start afresh anyway); if the table
// is still full, any one idle entry.
func pruneSources[S any](m map[string]S, idle, refilled func(S) bool) {
	for k, s := range m {
		if idle(s) && refilled(s) {
			delete(m, k)
		}
	}
	if len(m) < maxSources {
		return
	}
	for k, s := range m {
		if idle(s) {
			delete(m, k)
			return
		}
	}
}

// specBudget bounds node connections opened before a client proved
// anything, in all, per node and per source (an exempt source, "", only
// meets the first two).
type specBudget struct {
	max, perNode, perSource int

	mu       sync.Mutex // mu protects the following
	total    int
	perNodeN map[string]int
	perSrcN  map[string]int
}

func newSpecBudget(max, perNode, perSource int) *specBudget {
	return &specBudget{max: max, perNode: perNode, perSource: perSource, perNodeN: map[string]int{}, perSrcN: map[string]int{}}
}

// acquire takes a place for a speculative connection to node for a client
// from src; the release func returns it (once; extra calls are ignored).
func (b *specBudget) acquire(node, src string) (release func(), ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total >= b.max || b.perNodeN[node] >= b.perNode || src != "" && b.perSrcN[src] >= b.perSource {
		return nil, false
	}
	b.total++
	b.perNodeN[node]++
	if src != "" {
		b.perSrcN[src]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.total--
			if b.perNodeN[node]--; b.perNodeN[node] <= 0 {
				delete(b.perNodeN, node)
			}
			if src == "" {
				return
			}
			if b.perSrcN[src]--; b.perSrcN[src] <= 0 {
				delete(b.perSrcN, src)
			}
		})
	}, true
}

// maxPreAuthKex is how many key exchanges a connection gets before it
// authenticates: the first, and three re-exchanges (no honest client
// re-keys during authentication more than that; OpenSSH does not at all).
// After authentication re-keying is the client's business (it is how long
// sessions renew their keys).
const maxPreAuthKex = 4

// errKexBudget ends a connection that asked for one key exchange too many
// before authenticating.
var errKexBudget = errors.New("too many key exchanges before authentication")

// kexBudget counts the key exchanges of one connection. x/crypto has no
// setting for this, but every key exchange a server runs ends in one
// signature by its host key: host keys wrapped by wrap count them, and the
// one over budget fails, which fails the exchange and ends the connection
// before anything else of it is done. Safe for concurrent use (x/crypto
// signs on its key exchange goroutine).
type kexBudget struct {
	n      atomic.Int32
	authed atomic.Bool // set once the client authenticated
	over   func()      // called once when the budget is exceeded (metrics)
}

// allow counts one key exchange and reports whether it may go on.
func (k *kexBudget) allow() bool {
	if k.authed.Load() {
		return true
	}
	n := k.n.Add(1)
	if n <= maxPreAuthKex {
		return true
	}
	if n == maxPreAuthKex+1 && k.over != nil {
		k.over()
	}
	return false
}

// wrap returns s counting its signatures against k, with the same
// signer interfaces as s (x/crypto chooses the host key algorithms it
// offers by them).
func (k *kexBudget) wrap(s ssh.Signer) ssh.Signer {
	base := &kexSigner{s, k}
	switch s := s.(type) {
	case ssh.MultiAlgorithmSigner:
		return &kexMultiSigner{&kexAlgSigner{base, s}, s}
	case ssh.AlgorithmSigner:
		return &kexAlgSigner{base, s}
	default:
		return base
	}
}

type kexSigner struct {
	ssh.Signer
	k *kexBudget
}

func (s *kexSigner) Sign(rand io.Reader, data []byte) (*ssh.Signature, error) {
	if !s.k.allow() {
		return nil, errKexBudget
	}
	return s.Signer.Sign(rand, data)
}

type kexAlgSigner struct {
	*kexSigner
	as ssh.AlgorithmSigner
}

func (s *kexAlgSigner) SignWithAlgorithm(rand io.Reader, data []byte, algorithm string) (*ssh.Signature, error) {
	if !s.k.allow() {
		return nil, errKexBudget
	}
	return s.as.SignWithAlgorithm(rand, data, algorithm)
}

type kexMultiSigner struct {
	*kexAlgSigner
	m ssh.MultiAlgorithmSigner
}

func (s *kexMultiSigner) Algorithms() []string { return s.m.Algorithms() }

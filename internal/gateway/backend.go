package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Target is one login node a session may be sent to.
type Target struct {
	Name string
	Addr string
	Pool string
}

// Backend failure stages, for audit reasons and retry decisions.
const (
	StageConnect   = "connect"   // TCP connect or timeout
	StageHandshake = "handshake" // SSH version exchange / key exchange
	StageHostKey   = "hostkey"   // the node's host key could not be verified
	StageAuth      = "auth"      // the node refused the certificate
)

// BackendError says which node failed at which stage.
type BackendError struct {
	Node  string
	Stage string
	Err   error
}

func (e *BackendError) Error() string {
	return fmt.Sprintf("node %s: %s: %v", e.Node, e.Stage, e.Err)
}

func (e *BackendError) Unwrap() error { return e.Err }

// errHostKey wraps host key verification failures so they can be told apart
// from other handshake errors.
var errHostKey = errors.New("host key verification failed")

// backend is an authenticated SSH connection to a login node.
type backend struct {
	target Target
	conn   ssh.Conn
	chans  <-chan ssh.NewChannel
	reqs   <-chan *ssh.Request
}

func (b *backend) close() {
	b.conn.Close()
	go ssh.DiscardRequests(b.reqs)
	go func() {
		for nc := range b.chans {
			nc.Reject(ssh.ConnectionFailed, "closing")
		}
	}()
}

// hostKeys verifies login node host keys.
type hostKeys struct {
	cb       ssh.HostKeyCallback
	insecure bool

	mu    sync.Mutex // mu protects the following
	algos map[string][]string
}

func newHostKeys(files []string, insecure bool) (*hostKeys, error) {
	h := &hostKeys{insecure: insecure, algos: map[string][]string{}}
	if insecure {
		h.cb = ssh.InsecureIgnoreHostKey()
		return h, nil
	}
	cb, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("backend known_hosts: %w", err)
	}
	h.cb = cb
	return h, nil
}

// Host keys are bound to node NAMES, not addresses: the gateway checks a
// node's key as an SSH client checks "NAME:22" (known_hosts lines
// "login1 ssh-ed25519 …", or a host certificate whose principal is the
// name), whatever address the node is dialled at. A node cannot pass as
// another even if an address is wrong or reused, and the same check
// decides whose health a gossiped signature speaks for (CheckHostKey).

// hostKeyName is the known_hosts name a node's key is checked under.
func hostKeyName(node string) string { return net.JoinHostPort(node, "22") }

// anyRemote stands in for the remote address, which a check by name does
// not use (knownhosts wants a TCP address).
var anyRemote = &net.TCPAddr{IP: net.IPv4zero}

// check verifies key as the host key of node.
func (h *hostKeys) check(node string, key ssh.PublicKey) error {
	if err := h.cb(hostKeyName(node), anyRemote, key); err != nil {
		return fmt.Errorf("%w: %w", errHostKey, err)
	}
	return nil
}

// callbackFor is the HostKeyCallback of a login to node.
func (h *hostKeys) callbackFor(node string) ssh.HostKeyCallback {
	return func(_ string, _ net.Addr, key ssh.PublicKey) error { return h.check(node, key) }
}

// algorithmsFor returns the host key algorithms to negotiate with node:
// those of the keys known_hosts has for it (plus certificates if a host CA
// is trusted). Without this, the node might present a key type the file has
// no line for, and a good node would fail verification.
func (h *hostKeys) algorithmsFor(node string) []string {
	if h.insecure {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.algos[node]; ok {
		return a
	}
	// knownhosts answers a key it does not know for a host it knows with a
	// *KeyError listing the keys it wants.
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	probe, _ := ssh.NewSignerFromKey(priv)
	var algos []string
	var kerr *knownhosts.KeyError
	if err := h.cb(hostKeyName(node), anyRemote, probe.PublicKey()); errors.As(err, &kerr) && len(kerr.Want) > 0 {
		for _, k := range kerr.Want {
			for _, a := range algorithmsForKeyType(k.Key.Type()) {
				if !slices.Contains(algos, a) {
					algos = append(algos, a)
				}
			}
		}
	}
	// Known keys or not, a node may present a certificate from a trusted
	// host CA; keep those algorithms available (preferred last).
	if len(algos) > 0 {
		algos = append(algos, ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01,
			ssh.CertAlgoECDSA521v01, ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01)
	}
	h.algos[node] = algos
	return algos
}

func algorithmsForKeyType(t string) []string {
	switch t {
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	default:
		return []string{t}
	}
}

// pendingDial is a backend connection being set up ahead of the client's
// authentication: TCP connect and key exchange run while the client is still
// proving its key, and the node login waits for the certificate.
type pendingDial struct {
	target Target
	cancel context.CancelFunc
	signer chan ssh.Signer // receives the certificate signer, once
	done   chan struct{}
	b      *backend
	err    error
}

// dialParams is what a backend dial needs besides the target.
type dialParams struct {
	principal string
	timeout   time.Duration
	hostKeys  *hostKeys
	version   string
}

// startDial begins connecting to t in the background, over pre if it is a
// preconnection to t (pre may be nil).
func startDial(ctx context.Context, t Target, p dialParams, pre *preconn) *pendingDial {
	ctx, cancel := context.WithCancel(ctx)
	pd := &pendingDial{target: t, cancel: cancel, signer: make(chan ssh.Signer, 1), done: make(chan struct{})}
	go func() {
		defer close(pd.done)
		pd.b, pd.err = dialBackend(ctx, t, p, pd.signer, pre)
	}()
	return pd
}

// preconn is a TCP connection to the node a login will most likely use,
// opened when the client connects, before its user name is known: sshd
// forks and re-executes itself for every connection (tens of milliseconds),
// and that now overlaps the client's key exchange with the gateway.
type preconn struct {
	target Target
	done   chan struct{}
	conn   net.Conn
	err    error
	budget func() // returns the speculative budget, once
}

// startPreconn dials t in the background; budget is called once the
// connection is taken or released.
func startPreconn(ctx context.Context, t Target, timeout time.Duration, budget func()) *preconn {
	pc := &preconn{target: t, done: make(chan struct{}), budget: budget}
	go func() {
		defer close(pc.done)
		d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
		pc.conn, pc.err = d.DialContext(ctx, "tcp", t.Addr)
	}()
	return pc
}

// take returns the connection for use; the preconn no longer owns it.
func (pc *preconn) take(ctx context.Context) (net.Conn, error) {
	select {
	case <-pc.done:
	case <-ctx.Done():
		go pc.release() // closes the connection once the dial ends
		return nil, ctx.Err()
	}
	c, err := pc.conn, pc.err
	pc.conn = nil
	pc.budget()
	return c, err
}

// release closes the connection if nobody took it.
func (pc *preconn) release() {
	<-pc.done
	if pc.conn != nil {
		pc.conn.Close()
		pc.conn = nil
	}
	pc.budget()
}

// finish hands the certificate to the dial and waits for the login.
func (pd *pendingDial) finish(ctx context.Context, s ssh.Signer) (*backend, error) {
	pd.signer <- s
	select {
	case <-pd.done:
		return pd.b, pd.err
	case <-ctx.Done():
		pd.abort()
		return nil, ctx.Err()
	}
}

// abort cancels the dial and releases whatever it built.
func (pd *pendingDial) abort() {
	pd.cancel()
	<-pd.done
	if pd.b != nil {
		pd.b.close()
		pd.b = nil
	}
}

func dialBackend(ctx context.Context, t Target, p dialParams, signerCh <-chan ssh.Signer, pre *preconn) (*backend, error) {
	var nc net.Conn
	var err error
	if pre != nil {
		nc, err = pre.take(ctx)
	} else {
		d := net.Dialer{Timeout: p.timeout, KeepAlive: 30 * time.Second}
		nc, err = d.DialContext(ctx, "tcp", t.Addr)
	}
	if err != nil {
		return nil, &BackendError{Node: t.Name, Stage: StageConnect, Err: err}
	}
	// Close the socket if the context ends at any point of the login.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	nc.SetDeadline(time.Now().Add(p.timeout))

	var signer ssh.Signer
	getSigner := func() ([]ssh.Signer, error) {
		if signer == nil {
			// Key exchange is done; wait (without a socket deadline)
			// for the client's authentication to finish.
			nc.SetDeadline(time.Time{})
			select {
			case signer = <-signerCh:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			nc.SetDeadline(time.Now().Add(p.timeout))
		}
		return []ssh.Signer{signer}, nil
	}
	cfg := &ssh.ClientConfig{
		User:              p.principal,
		Auth:              []ssh.AuthMethod{ssh.PublicKeysCallback(getSigner)},
		HostKeyCallback:   p.hostKeys.callbackFor(t.Name),
		HostKeyAlgorithms: p.hostKeys.algorithmsFor(t.Name),
		ClientVersion:     p.version,
		Config: ssh.Config{
			// AES-GCM first: with AES-NI it is the cheapest per byte, and
			// per-byte CPU is what limits a relay.
			Ciphers: []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com", "aes128-ctr", "aes256-ctr"},
		},
	}
	conn, chans, reqs, err := ssh.NewClientConn(nc, t.Addr, cfg)
	if err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, &BackendError{Node: t.Name, Stage: StageConnect, Err: ctx.Err()}
		}
		stage := StageHandshake
		switch {
		case errors.Is(err, errHostKey):
			stage = StageHostKey
		case signer != nil:
			stage = StageAuth
		}
		return nil, &BackendError{Node: t.Name, Stage: stage, Err: err}
	}
	nc.SetDeadline(time.Time{})
	return &backend{target: t, conn: conn, chans: chans, reqs: reqs}, nil
}

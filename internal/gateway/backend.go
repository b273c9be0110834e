package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// Backend failure stages, for audit reasons and retry decisions.
const (
	StageConnect   = "connect"   // TCP connect or timeout
	StageHandshake = "handshake" // SSH version exchange / key exchange
	StageHostKey   = "hostkey"   // the node's host key could not be verified
	StageAuth      = "auth"      // the node refused the certificate
	// StageCert: the user CA did not sign the certificate (a KMS outage):
	// nothing about the node, and no other node would do better.
	StageCert = "certificate"
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

// backend is an authenticated SSH connection to a login node.
type backend struct {
	target   node.Node
	nodeConn ssh.Conn
	chans    <-chan ssh.NewChannel
	reqs     <-chan *ssh.Request
}

func (b *backend) close() {
	b.nodeConn.Close()
	go ssh.DiscardRequests(b.reqs)
	go func() {
		for nc := range b.chans {
			nc.Reject(ssh.ConnectionFailed, "closing")
		}
	}()
}

// pendingDial is a backend connection being set up ahead of the client's
// authentication: TCP connect and key exchange run while the client is still
// proving its key, and the node login waits for the certificate.
type pendingDial struct {
	target node.Node
	cancel context.CancelFunc
	mint   chan minter // receives the proven login's certificate minter, once
	done   chan struct{}
	b      *backend
	err    error
}

// minter signs the certificate of one proven login for a node connection
// whose local address — the client address the node sees, the
// certificate's source-address — is local.
type minter func(ctx context.Context, local netip.Addr) (ssh.Signer, error)

// dialParams is what a backend dial needs besides the target.
type dialParams struct {
	principal string
	timeout   time.Duration
	hostKeys  *node.HostKeys
	version   string
}

// startDial begins connecting to t in the background, over pre if it is a
// preconnection to t (pre may be nil).
func startDial(ctx context.Context, t node.Node, p dialParams, pre *preconn) *pendingDial {
	ctx, cancel := context.WithCancel(ctx)
	pd := &pendingDial{target: t, cancel: cancel, mint: make(chan minter, 1), done: make(chan struct{})}
	go func() {
		defer close(pd.done)
		pd.b, pd.err = dialBackend(ctx, t, p, pd.mint, pre)
	}()
	return pd
}

// preconn is a TCP connection to the node a login will most likely use,
// opened when the client connects, before its user name is known: sshd
// forks and re-executes itself for every connection (tens of milliseconds),
// and that now overlaps the client's key exchange with the gateway.
type preconn struct {
	target node.Node
	done   chan struct{}
	tcp    net.Conn
	err    error
	budget func() // returns the speculative budget, once
}

// startPreconn dials t in the background; budget is called once the
// connection is taken or released.
func startPreconn(ctx context.Context, t node.Node, timeout time.Duration, budget func()) *preconn {
	pc := &preconn{target: t, done: make(chan struct{}), budget: budget}
	go func() {
		defer close(pc.done)
		d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
		pc.tcp, pc.err = d.DialContext(ctx, "tcp", t.Addr)
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
	c, err := pc.tcp, pc.err
	pc.tcp = nil
	pc.budget()
	return c, err
}

// release closes the connection if nobody took it.
func (pc *preconn) release() {
	<-pc.done
	if pc.tcp != nil {
		pc.tcp.Close()
		pc.tcp = nil
	}
	pc.budget()
}

// finish hands the proven login's minter to the dial and waits for the
// login.
func (pd *pendingDial) finish(ctx context.Context, m minter) (*backend, error) {
	pd.mint <- m
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

// signed is a minted certificate, or why there is none.
type signed struct {
	s   ssh.Signer
	err error
}

func dialBackend(ctx context.Context, t node.Node, p dialParams, mintCh <-chan minter, pre *preconn) (*backend, error) {
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

	// The certificate is signed as soon as the user is proven and this
	// connection's local address is known (now), while the key exchange
	// runs: a remote CA key's round trip overlaps it.
	local := localAddr(nc)
	certs := make(chan signed, 1)
	signCtx, stopSigning := context.WithCancel(ctx)
	defer stopSigning()
	go func() {
		select {
		case m := <-mintCh:
			s, err := m(signCtx, local)
			certs <- signed{s, err}
		case <-signCtx.Done():
		}
	}()
	var signer ssh.Signer
	var signErr error
	getSigner := func() ([]ssh.Signer, error) {
		if signer == nil {
			// Key exchange is done; wait (without a socket deadline)
			// for the client's authentication to finish.
			nc.SetDeadline(time.Time{})
			select {
			case c := <-certs:
				if c.err != nil {
					signErr = c.err
					return nil, c.err
				}
				signer = c.s
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
		HostKeyCallback:   p.hostKeys.CallbackFor(t.Name),
		HostKeyAlgorithms: p.hostKeys.AlgorithmsFor(t.Name),
		ClientVersion:     p.version,
		Config: ssh.Config{
			// AES-GCM first: with AES-NI it is the cheapest per byte, and
			// per-byte CPU is what limits a relay.
			Ciphers: []string{"aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com", "aes128-ctr", "aes256-ctr"},
		},
	}
	sc, chans, reqs, err := ssh.NewClientConn(nc, t.Addr, cfg)
	if err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, &BackendError{Node: t.Name, Stage: StageConnect, Err: ctx.Err()}
		}
		stage := StageHandshake
		switch {
		case errors.Is(err, node.ErrHostKey):
			stage = StageHostKey
		case signErr != nil:
			stage, err = StageCert, signErr
		case signer != nil:
			stage = StageAuth
		}
		return nil, &BackendError{Node: t.Name, Stage: stage, Err: err}
	}
	nc.SetDeadline(time.Time{})
	return &backend{target: t, nodeConn: sc, chans: chans, reqs: reqs}, nil
}

// localAddr is the connection's own IP address (the zero Addr if it is not
// TCP).
func localAddr(c net.Conn) netip.Addr {
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

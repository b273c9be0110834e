// Package proxy relays one SSH connection between a client (the "down" side,
// where the gateway is the server) and a login node (the "up" side, where the
// gateway is the client): every channel and every request, both ways, with
// EOF and close ordering preserved, filtered by the user's forwarding rights.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

// Side is one SSH connection with its incoming channels and global requests,
// exactly as x/crypto/ssh hands them out.
type Side struct {
	Conn  ssh.Conn
	Chans <-chan ssh.NewChannel
	Reqs  <-chan *ssh.Request
}

// Stats counts what one connection relayed. Safe for concurrent use.
type Stats struct {
	BytesUp   atomic.Int64 // client → node
	BytesDown atomic.Int64 // node → client
	Channels  atomic.Int64 // channels opened (both directions)
}

// Relay is one proxied connection.
type Relay struct {
	Down   Side
	Up     Side
	Rights policy.Rights
	Log    *slog.Logger
	Stats  *Stats
	// KeepaliveInterval, if positive, probes the node connection; a node
	// that does not answer within two intervals is treated as dead.
	KeepaliveInterval time.Duration

	// Session additions (see session.go). Env is sent to the node before
	// each session starts; Banner (may be nil) is shown to interactive
	// sessions; AllowDirect (nil: anything) filters -L/-D destinations;
	// IdleTimeout (0: off) closes a connection relaying no data, with a
	// warning IdleWarning before.
	Env         map[string]string
	Banner      func() string
	AllowDirect func(host string, port uint32) bool
	IdleTimeout time.Duration
	IdleWarning time.Duration
	// MaxChannels (0: no cap) caps the channels open at once, both ways:
	// one more is refused (resource shortage) until one closes. Each open
	// channel costs goroutines, a node-side channel or TCP connection,
	// and up to a window (2 MiB) of what the node sent and the client has
	// not taken yet.
	MaxChannels int

	idle *idleWatch // nil without IdleTimeout

	mu          sync.Mutex // mu protects the following (notice.go)
	interactive map[ssh.Channel]struct{}
	stop        func() // closes both sides; set by Run
	stopped     bool   // Close was called
}

// Channel types, and the forwarding right each needs.
const (
	chanSession          = "session"
	chanDirectTCPIP      = "direct-tcpip"
	chanDirectStream     = "direct-streamlocal@openssh.com"
	chanForwardedTCPIP   = "forwarded-tcpip"
	chanForwardedStream  = "forwarded-streamlocal@openssh.com"
	chanX11              = "x11"
	chanAgent            = "auth-agent@openssh.com"
	reqTCPIPForward      = "tcpip-forward"
	reqCancelTCPIP       = "cancel-tcpip-forward"
	reqStreamForward     = "streamlocal-forward@openssh.com"
	reqCancelStream      = "cancel-streamlocal-forward@openssh.com"
	reqNoMoreSessions    = "no-more-sessions@openssh.com"
	reqAgentForward      = "auth-agent-req@openssh.com"
	reqX11               = "x11-req"
	reqKeepalive         = "keepalive@openssh.com"
	reqExitStatus        = "exit-status"
	reqExitSignal        = "exit-signal"
	errProhibitedMessage = "administratively prohibited by frontdoor policy"
)

// Run relays until either side goes away, then closes both and returns once
// every goroutine it started has finished. It returns the error that ended
// the connection on the node side, if any.
func (r *Relay) Run(ctx context.Context) error {
	if r.Stats == nil {
		r.Stats = &Stats{}
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	closeBoth := sync.OnceFunc(func() {
		r.Down.Conn.Close()
		r.Up.Conn.Close()
	})
	if !r.setStop(closeBoth) {
		closeBoth() // Close came first
	}
	// No goroutine per idle session for these: a side's death shows as its
	// channel stream closing (x/crypto closes it when the connection
	// ends), cancellation is a context callback, and keepalives are a
	// timer whose callback runs only when a probe is due.
	stopOnCancel := context.AfterFunc(ctx, closeBoth)
	defer stopOnCancel()
	var ka *keepalive
	if r.KeepaliveInterval > 0 {
		ka = r.startKeepalive(closeBoth)
		defer ka.Stop()
	}
	r.startIdle()
	defer r.idle.stop()

	// One goroutine serves both sides' new channels and global requests;
	// anything that waits on the other side gets its own goroutine, so a
	// slow peer never stalls the dispatch of the rest.
	downChans, upChans, downReqs, upReqs := r.Down.Chans, r.Up.Chans, r.Down.Reqs, r.Up.Reqs
	lim := channelLimit{max: r.MaxChannels, log: r.Log}
	for downChans != nil || upChans != nil || downReqs != nil || upReqs != nil {
		select {
		case nc, ok := <-downChans:
			if !ok { // the client connection ended
				downChans = nil
				closeBoth()
				continue
			}
			if !lim.take(nc) {
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer lim.release(); r.openFromClient(nc) }()
		case nc, ok := <-upChans:
			if !ok { // the node connection ended
				upChans = nil
				closeBoth()
				continue
			}
			if !lim.take(nc) {
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer lim.release(); r.openFromNode(nc) }()
		case req, ok := <-downReqs:
			if !ok {
				downReqs = nil
				continue
			}
			r.globalFromClient(req, &wg)
		case req, ok := <-upReqs:
			if !ok {
				upReqs = nil
				continue
			}
			// The node's global requests are for the gateway, which is
			// its client: hostkeys-00@openssh.com announcements must not
			// reach the user (they are the node's keys, not the
			// gateway's), and keepalives are answered here.
			if req.WantReply {
				req.Reply(false, nil)
			}
		}
	}
	cancel()
	wg.Wait()
	if ka != nil && ka.expired() {
		return ErrKeepaliveTimeout
	}
	return nil
}

// channelLimit counts a connection's open channels against MaxChannels.
// take runs on Run's goroutine only; release on the channels' own.
type channelLimit struct {
	max     int
	log     *slog.Logger
	open    atomic.Int64
	refused int // refusals so far; the first is logged
}

// take counts nc as open, or refuses it when max are.
func (l *channelLimit) take(nc ssh.NewChannel) bool {
	if l.max > 0 && l.open.Load() >= int64(l.max) {
		if l.refused++; l.refused == 1 {
			l.log.Warn("channel refused: too many open on this connection (further refusals not logged)",
				"channel", nc.ChannelType(), "max", l.max, "reason", "max_channels")
		}
		nc.Reject(ssh.ResourceShortage, fmt.Sprintf("frontdoor: at most %d channels at once on one connection", l.max))
		return false
	}
	l.open.Add(1)
	return true
}

func (l *channelLimit) release() { l.open.Add(-1) }

// ErrKeepaliveTimeout: the login node stopped answering keepalives.
var ErrKeepaliveTimeout = errors.New("login node stopped answering keepalives")

// keepalive probes the node connection every KeepaliveInterval; a probe
// unanswered for two intervals closes the session.
type keepalive struct {
	mu       sync.Mutex // mu protects the following
	t        *time.Timer
	stopped  bool
	timedOut bool
}

func (ka *keepalive) expired() bool {
	ka.mu.Lock()
	defer ka.mu.Unlock()
	return ka.timedOut
}

func (r *Relay) startKeepalive(closeBoth func()) *keepalive {
	ka := &keepalive{}
	var probe func()
	probe = func() {
		reply := make(chan error, 1)
		go func() {
			_, _, err := r.Up.Conn.SendRequest(reqKeepalive, true, nil)
			reply <- err
		}()
		select {
		case err := <-reply:
			if err != nil {
				return // the connection is gone; Wait reports it
			}
		case <-time.After(2 * r.KeepaliveInterval):
			r.Log.Warn("login node stopped answering keepalives, closing", "reason", "keepalive timeout")
			ka.mu.Lock()
			ka.timedOut = true
			ka.mu.Unlock()
			closeBoth()
			return
		}
		ka.mu.Lock()
		if !ka.stopped {
			ka.t.Reset(r.KeepaliveInterval)
		}
		ka.mu.Unlock()
	}
	ka.mu.Lock()
	ka.t = time.AfterFunc(r.KeepaliveInterval, probe)
	ka.mu.Unlock()
	return ka
}

func (ka *keepalive) Stop() {
	ka.mu.Lock()
	ka.stopped = true
	ka.t.Stop()
	ka.mu.Unlock()
}

func (r *Relay) globalFromClient(req *ssh.Request, wg *sync.WaitGroup) {
	allowed := false
	switch req.Type {
	case reqTCPIPForward, reqCancelTCPIP:
		allowed = r.Rights.Remote
	case reqStreamForward, reqCancelStream:
		allowed = r.Rights.StreamLocal
	case reqNoMoreSessions:
		allowed = true
	default:
		// keepalive@openssh.com and anything unknown: answered here, as
		// sshd answers requests it does not implement.
	}
	if !allowed {
		if req.Type != reqKeepalive && req.Type != reqNoMoreSessions {
			r.Log.Info("global request refused", "request", req.Type)
		}
		if req.WantReply {
			req.Reply(false, nil)
		}
		return
	}
	if err := checkGlobal(req.Type, req.Payload); err != nil {
		r.Log.Info("global request refused", "request", req.Type, "reason", err.Error())
		if req.WantReply {
			req.Reply(false, nil)
		}
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ok, payload, err := r.Up.Conn.SendRequest(req.Type, req.WantReply, req.Payload)
		if err != nil {
			ok, payload = false, nil
		}
		if req.WantReply {
			// tcpip-forward with port 0 returns the allocated port.
			req.Reply(ok, payload)
		}
	}()
}

// mayOpen reports whether a channel of type t may be opened in the given
// direction.
func (r *Relay) mayOpen(t string, fromClient bool) bool {
	if fromClient {
		switch t {
		case chanSession:
			return true
		case chanDirectTCPIP:
			return r.Rights.Local
		case chanDirectStream:
			return r.Rights.StreamLocal
		}
		return false
	}
	switch t {
	case chanForwardedTCPIP:
		return r.Rights.Remote
	case chanForwardedStream:
		return r.Rights.StreamLocal
	case chanX11:
		return r.Rights.X11
	case chanAgent:
		return r.Rights.Agent
	}
	return false
}

func (r *Relay) openFromClient(nc ssh.NewChannel) {
	r.open(nc, r.Up.Conn, true)
}

func (r *Relay) openFromNode(nc ssh.NewChannel) {
	r.open(nc, r.Down.Conn, false)
}

// open opens on the other side the channel nc asks for, answers nc the way
// the other side answered, and relays the pair until both are closed.
func (r *Relay) open(nc ssh.NewChannel, other ssh.Conn, fromClient bool) {
	t := nc.ChannelType()
	if !r.mayOpen(t, fromClient) {
		r.Log.Info("channel refused", "channel", t, "from_client", fromClient)
		nc.Reject(ssh.Prohibited, errProhibitedMessage)
		return
	}
	if err := checkChannel(t, nc.ExtraData()); err != nil {
		r.Log.Info("channel refused", "channel", t, "from_client", fromClient, "reason", err.Error())
		nc.Reject(ssh.Prohibited, "frontdoor: malformed forwarding destination")
		return
	}
	if fromClient && t == chanDirectTCPIP {
		if dest, ok := r.mayDirect(nc.ExtraData()); !ok {
			r.Log.Info("forwarding destination refused", "channel", t, "dest", dest)
			nc.Reject(ssh.Prohibited, "forwarding to that destination is not allowed by frontdoor policy")
			return
		}
	}
	och, oreqs, err := other.OpenChannel(t, nc.ExtraData())
	if err != nil {
		var oerr *ssh.OpenChannelError
		if errors.As(err, &oerr) {
			nc.Reject(oerr.Reason, oerr.Message)
		} else {
			nc.Reject(ssh.ConnectionFailed, "connection lost")
		}
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		och.Close()
		go ssh.DiscardRequests(oreqs)
		return
	}
	r.Stats.Channels.Add(1)
	if fromClient {
		r.pipe(ch, reqs, och, oreqs, t == chanSession)
	} else {
		r.pipe(och, oreqs, ch, reqs, false)
	}
}

// pipe relays a channel pair: down is the client's end, up the node's.
//
// Ordering: each direction's data is copied in order and followed by EOF
// when the source sends EOF. A side's close is passed on only after
// everything that side sent before it (data, stderr, requests such as
// exit-status) has been passed on, so exit codes and trailing output survive.
func (r *Relay) pipe(down ssh.Channel, downReqs <-chan *ssh.Request, up ssh.Channel, upReqs <-chan *ssh.Request, session bool) {
	// replyMu is held from forwarding a client request to the node until
	// its reply reached the client: a command can finish (and the node
	// close the channel) before the client has its "exec ok"; closing the
	// client's end then must wait for that reply, or the client sees the
	// channel end with its request unanswered.
	var replyMu sync.Mutex
	closeBoth := sync.OnceFunc(func() {
		replyMu.Lock()
		defer replyMu.Unlock()
		down.Close()
		up.Close()
	})

	// One goroutine per direction copies data (toward the client both
	// stdout and stderr, see relayChannel); requests from both sides are
	// dispatched by this goroutine to one ordered queue per direction (see
	// serial), whose worker exists only while requests are pending: an
	// idle channel costs three goroutines.
	var workers sync.WaitGroup
	toNode, toClient := &serial{wg: &workers}, &serial{wg: &workers}

	// Client → node: data then EOF.
	bdown, bup, zeroCopy := buffered(down, up)
	var input sync.WaitGroup
	input.Add(1)
	go func() {
		defer input.Done()
		if zeroCopy {
			relayChannel(bup, bdown, false, &r.Stats.BytesUp)
		} else {
			copyData(up, down, &r.Stats.BytesUp)
		}
		up.CloseWrite()
	}()
	var st *sessionState
	if session {
		st = &sessionState{down: down}
	}

	// Node → client: stdout and stderr, then one EOF. In SSH a single EOF
	// ends both streams, and x/crypto may report EOF on stdout while
	// stderr is still buffered: EOF must wait for both copies.
	//
	// For sessions EOF also waits for the exit status. sshd sends EOF,
	// exit-status, close back to back; relayed by separate goroutines, a
	// client could see the EOF alone, close (VS Code, ControlMaster clients
	// and libraries do) and lose the exit status. Sending the status first
	// is allowed by RFC 4254 and what clients handle best.
	var stderr, output sync.WaitGroup
	exited := make(chan struct{})
	markExited := sync.OnceFunc(func() { close(exited) })
	switch {
	case !session:
		// Only session channels carry stderr (extended data); forwarded
		// connections do not, and need no goroutine for it.
		markExited()
	case zeroCopy:
		// Both streams from one goroutine: stdout below reads stderr too.
	default:
		stderr.Add(1)
		go func() {
			defer stderr.Done()
			copyData(down.Stderr(), up.Stderr(), &r.Stats.BytesDown)
		}()
	}
	output.Add(1)
	go func() {
		defer output.Done()
		if zeroCopy {
			relayChannel(bdown, bup, session, &r.Stats.BytesDown)
		} else {
			copyData(down, up, &r.Stats.BytesDown)
		}
		stderr.Wait()
		<-exited
		down.CloseWrite()
	}()

	// Requests, each side's in its order, until both sides have closed.
	// The node's: exit-status and exit-signal come before its close; after
	// the close the client's end is closed once the output is through.
	// The client's: filtered and completed by the session additions; after
	// its close the node's end is closed once the input is through.
	for downReqs != nil || upReqs != nil {
		select {
		case req, ok := <-downReqs:
			if !ok {
				downReqs = nil
				toNode.do(func() {
					input.Wait()
					closeBoth()
				})
				continue
			}
			toNode.do(func() { r.forwardRequest(req, up, st, &replyMu) })
		case req, ok := <-upReqs:
			if !ok {
				upReqs = nil
				toClient.do(func() {
					markExited()
					output.Wait()
					closeBoth()
				})
				continue
			}
			toClient.do(func() {
				r.forwardRequest(req, down, nil, nil)
				if req.Type == reqExitStatus || req.Type == reqExitSignal {
					markExited()
				}
			})
		}
	}
	workers.Wait()
	if st != nil {
		r.removeInteractive(down)
	}
}

// serial runs functions one after another in the order given, on a
// goroutine that exists only while some are pending. Each relayed
// channel has one per direction: requests keep their order, a request
// waiting for the other side's reply holds back only later requests in
// its own direction, and an idle channel holds no goroutine for them.
type serial struct {
	wg      *sync.WaitGroup // counts running workers
	mu      sync.Mutex      // mu protects the following
	queue   []func()
	running bool
}

func (s *serial) do(f func()) {
	s.mu.Lock()
	s.queue = append(s.queue, f)
	if s.running {
		s.mu.Unlock()
		return
	}
	s.running = true
	s.mu.Unlock()
	s.wg.Add(1)
	go s.drain()
}

func (s *serial) drain() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.running = false
			s.queue = nil
			s.mu.Unlock()
			return
		}
		f := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.mu.Unlock()
		f()
	}
}

// forwardRequest passes a channel request from one side to the other, with
// the other side's answer. st is set for a client's session requests,
// which are filtered by forwarding rights and get the session additions;
// replyMu, if set, is held from sending the request to delivering its
// reply.
func (r *Relay) forwardRequest(req *ssh.Request, to ssh.Channel, st *sessionState, replyMu *sync.Mutex) {
	if st != nil && !r.clientSessionRequest(st, req, to) {
		r.Log.Info("session request refused", "request", req.Type)
		if req.WantReply {
			req.Reply(false, nil)
		}
		return
	}
	if replyMu != nil {
		replyMu.Lock()
		defer replyMu.Unlock()
	}
	ok, err := to.SendRequest(req.Type, req.WantReply, req.Payload)
	if req.WantReply {
		req.Reply(ok && err == nil, nil)
	}
}

func (r *Relay) maySessionRequest(t string) bool {
	switch t {
	case reqAgentForward:
		return r.Rights.Agent
	case reqX11:
		return r.Rights.X11
	}
	return true
}

package soak

// The load: a client written with x/crypto/ssh (the OpenSSH client costs
// too much CPU for a thousand sessions on two cores) that holds sessions
// through the gateways to the real sshd nodes and logs new users in at a
// given rate, recording everything in a Recorder.
//
// Held sessions are of three kinds, as at a university on a Monday
// morning: most are idle terminals (a pty and a login shell, poked now and
// then to see that they still answer); some stream checksummed data both
// ways through `cat`; some forward TCP connections to a service on the
// node (ssh -L) and check what comes back. A held session that ends is
// reconnected after a few seconds, as its user would: through the next
// gateway if the first does not answer.
//
// Clients connect from many loopback source addresses (127.3.0.0/16): a
// campus has many, and the gateways' per-source admission limits are for
// one client, not a whole university.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// User is a load user: a directory account with a key and a password.
type User struct {
	Name     string
	Password string
	Signer   ssh.Signer
}

// Target is a gateway's SSH address.
type Target struct {
	Name string
	Addr string
}

// Load drives sessions and logins against the gateways.
type Load struct {
	Gateways []Target
	HostKey  ssh.PublicKey
	Users    []*User
	// Nodes maps a login node's address (as SSH_CONNECTION shows it) to
	// its name.
	Nodes map[string]string
	// EchoAddr is a TCP echo service the nodes reach (forwarding sessions
	// open direct-tcpip channels to it).
	EchoAddr string
	Rec      *Recorder

	// LoginTimeout bounds one login (default 30s): one that takes longer
	// failed ("hang").
	LoginTimeout time.Duration
	// StreamBytes is what a streaming session sends (and gets back) per
	// round, every StreamEvery; ForwardBytes and ForwardEvery the same
	// for a forwarding session's channels; PingEvery how often an idle
	// terminal is asked to echo.
	StreamBytes, ForwardBytes            int
	StreamEvery, ForwardEvery, PingEvery time.Duration
	ReconnectMin, ReconnectMax           time.Duration

	// keyOnly are users who no longer log in with a password (an account
	// a fault left banned): their new logins use the key.
	keyOnly sync.Map
	nextSrc atomic.Uint64
	nextGW  atomic.Uint64
}

func (l *Load) defaults() {
	if l.LoginTimeout == 0 {
		l.LoginTimeout = 30 * time.Second
	}
	if l.StreamBytes == 0 {
		l.StreamBytes = 256 << 10
	}
	if l.ForwardBytes == 0 {
		l.ForwardBytes = 64 << 10
	}
	if l.StreamEvery == 0 {
		l.StreamEvery = 5 * time.Second
	}
	if l.ForwardEvery == 0 {
		l.ForwardEvery = 10 * time.Second
	}
	if l.PingEvery == 0 {
		l.PingEvery = 90 * time.Second
	}
	if l.ReconnectMin == 0 {
		l.ReconnectMin, l.ReconnectMax = 500*time.Millisecond, 5*time.Second
	}
}

// source is the next client source address, 127.3.0.1 … 127.3.3.254.
func (l *Load) source() *net.TCPAddr {
	i := l.nextSrc.Add(1) % 1016
	return &net.TCPAddr{IP: net.IPv4(127, 3, byte(i/254), byte(i%254+1))}
}

// order is the gateways in the order a client tries them, starting at
// first.
func (l *Load) order(first int) []Target {
	n := len(l.Gateways)
	out := make([]Target, n)
	for i := range n {
		out[i] = l.Gateways[(first+i)%n]
	}
	return out
}

// connected is an authenticated connection and how it came about.
type connected struct {
	client     *ssh.Client
	gateway    string
	failedOver bool
	banner     string
}

// loginError is a failed login with its stage.
type loginError struct {
	stage   string
	gateway string // the gateway that answered the TCP connect, if any
	err     error
	banner  string
}

func (e *loginError) Error() string { return e.stage + ": " + e.err.Error() }

// connect logs u in through the first gateway of order that accepts the
// TCP connection, with a key or a password.
func (l *Load) connect(ctx context.Context, order []Target, u *User, method string) (*connected, error) {
	var auth ssh.AuthMethod
	switch method {
	case "password":
		auth = ssh.Password(u.Password)
	default:
		auth = ssh.PublicKeys(u.Signer)
	}
	var lastErr error
	for i, gw := range order {
		d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: l.source()}
		nc, err := d.DialContext(ctx, "tcp", gw.Addr)
		if err != nil {
			lastErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		var banner strings.Builder
		var bmu sync.Mutex
		cfg := &ssh.ClientConfig{User: u.Name, Auth: []ssh.AuthMethod{auth}, HostKeyCallback: ssh.FixedHostKey(l.HostKey),
			BannerCallback: func(m string) error {
				bmu.Lock()
				banner.WriteString(m)
				bmu.Unlock()
				return nil
			}}
		stop := context.AfterFunc(ctx, func() { nc.Close() })
		cc, chans, reqs, err := ssh.NewClientConn(nc, gw.Addr, cfg)
		stop()
		bmu.Lock()
		b := strings.TrimSpace(banner.String())
		bmu.Unlock()
		if err != nil {
			nc.Close()
			if ctx.Err() != nil {
				err = fmt.Errorf("hang: %w", ctx.Err())
			}
			return nil, &loginError{stage: "auth", gateway: gw.Name, err: err, banner: b}
		}
		return &connected{client: ssh.NewClient(cc, chans, reqs), gateway: gw.Name, failedOver: i > 0, banner: b}, nil
	}
	return nil, &loginError{stage: "connect", err: lastErr}
}

// nodeOf maps SSH_CONNECTION ("CLIENT CPORT SERVER SPORT") to a node name.
func (l *Load) nodeOf(sshConnection string) string {
	f := strings.Fields(sshConnection)
	if len(f) < 4 {
		return ""
	}
	return l.Nodes[f[2]]
}

// Churn logs new users in until ctx ends: arrivals at rate() per second
// (Poisson, so bursts come as they do), each a login with a key or, with
// probability pwFrac, a password, that runs one command and logs out. At
// most maxInFlight run at once; an arrival beyond that is counted as shed
// (the client, not the gateway, gave up on it). inFlight says how many run
// now.
func (l *Load) Churn(ctx context.Context, rate func() float64, pwFrac float64, maxInFlight int) (shed *atomic.Int64, inFlight func() int) {
	l.defaults()
	shed = new(atomic.Int64)
	sem := make(chan struct{}, maxInFlight)
	inFlight = func() int { return len(sem) }
	go func() {
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			r := rate()
			wait := time.Second
			if r > 0 {
				wait = time.Duration(mrand.ExpFloat64() / r * float64(time.Second))
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if r <= 0 {
				continue
			}
			select {
			case sem <- struct{}{}:
			default:
				shed.Add(1)
				continue
			}
			u := l.Users[mrand.IntN(len(l.Users))]
			method := "publickey"
			if _, no := l.keyOnly.Load(u.Name); !no && mrand.Float64() < pwFrac {
				method = "password"
			}
			first := int(l.nextGW.Add(1)) % len(l.Gateways)
			wg.Go(func() {
				defer func() { <-sem }()
				l.Rec.login(l.LoginOnce(ctx, KindChurn, first, u, method))
			})
		}
	}()
	return shed, inFlight
}

// KeyOnly makes user's new logins use the key from now on.
func (l *Load) KeyOnly(user string) { l.keyOnly.Store(user, true) }

// LoginOnce logs u in through the gateways (first first), runs `echo
// $SSH_CONNECTION` and logs out.
func (l *Load) LoginOnce(ctx context.Context, kind string, first int, u *User, method string) Login {
	l.defaults()
	rec := Login{Start: time.Now(), Kind: kind, User: u.Name, Method: method}
	ctx, cancel := context.WithTimeout(ctx, l.LoginTimeout)
	defer cancel()
	c, err := l.connect(ctx, l.order(first), u, method)
	if err != nil {
		return failLogin(rec, err)
	}
	defer c.client.Close()
	rec.Gateway, rec.FailedOver, rec.Banner = c.gateway, c.failedOver, c.banner
	stop := context.AfterFunc(ctx, func() { c.client.Close() })
	defer stop()
	s, err := c.client.NewSession()
	if err != nil {
		return failLogin(rec, &loginError{stage: "session", err: err})
	}
	defer s.Close()
	out, err := s.Output(`echo "$SSH_CONNECTION"`)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("hang: %w", ctx.Err())
		}
		return failLogin(rec, &loginError{stage: "output", err: err})
	}
	rec.Node = l.nodeOf(string(out))
	if rec.Node == "" {
		return failLogin(rec, &loginError{stage: "output", err: fmt.Errorf("no node in %q", out)})
	}
	rec.OK, rec.Took = true, time.Since(rec.Start)
	return rec
}

func failLogin(rec Login, err error) Login {
	rec.Took = time.Since(rec.Start)
	var le *loginError
	if errors.As(err, &le) {
		rec.Stage, rec.Banner = le.stage, le.banner
		if le.gateway != "" {
			rec.Gateway = le.gateway
		}
		err = le.err
	}
	rec.Err = err.Error()
	return rec
}

// Session kinds of held sessions.
const (
	SessIdle    = "idle"
	SessStream  = "stream"
	SessForward = "forward"
)

// Holds are the held sessions.
type Holds struct {
	l      *Load
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex // mu protects sessions
	all    []*held
}

// held is one held session slot: a user's terminal (or stream, or
// tunnel) that is reconnected whenever it ends.
type held struct {
	id   int
	kind string
	user *User

	mu      sync.Mutex // mu protects the following
	up      bool
	node    string
	gateway string
	since   time.Time
}

// HeldState is a held session as it is now.
type HeldState struct {
	ID      int
	Kind    string
	User    string
	Up      bool
	Node    string
	Gateway string
}

// Hold opens n held sessions, at most perSecond new ones per second (a
// ramp), and keeps them open until Stop: every streamEvery-th is a
// streaming session, every forwardEvery-th (offset by one) a forwarding
// one, the others idle terminals. Session i belongs to user i mod
// len(Users), through gateway i mod len(Gateways) first.
func (l *Load) Hold(ctx context.Context, n int, perSecond float64, streamEvery, forwardEvery int) *Holds {
	l.defaults()
	ctx, cancel := context.WithCancel(ctx)
	h := &Holds{l: l, cancel: cancel}
	tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer tick.Stop()
	for i := range n {
		kind := SessIdle
		switch {
		case streamEvery > 0 && i%streamEvery == 0:
			kind = SessStream
		case forwardEvery > 0 && i%forwardEvery == 1:
			kind = SessForward
		}
		s := &held{id: i, kind: kind, user: l.Users[i%len(l.Users)]}
		h.mu.Lock()
		h.all = append(h.all, s)
		h.mu.Unlock()
		h.wg.Go(func() { l.runHeld(ctx, s, i%len(l.Gateways)) })
		select {
		case <-ctx.Done():
			return h
		case <-tick.C:
		}
	}
	return h
}

// Stop closes every held session and waits for them.
func (h *Holds) Stop() {
	h.cancel()
	h.wg.Wait()
}

// States lists the held sessions now.
func (h *Holds) States() []HeldState {
	h.mu.Lock()
	all := append([]*held(nil), h.all...)
	h.mu.Unlock()
	out := make([]HeldState, 0, len(all))
	for _, s := range all {
		s.mu.Lock()
		out = append(out, HeldState{ID: s.id, Kind: s.kind, User: s.user.Name, Up: s.up, Node: s.node, Gateway: s.gateway})
		s.mu.Unlock()
	}
	return out
}

// Up counts the held sessions that are open now.
func (h *Holds) Up() int {
	n := 0
	for _, s := range h.States() {
		if s.Up {
			n++
		}
	}
	return n
}

func (s *held) set(up bool, node, gateway string) {
	s.mu.Lock()
	s.up, s.node, s.gateway = up, node, gateway
	if up {
		s.since = time.Now()
	}
	s.mu.Unlock()
}

// runHeld keeps session s open until ctx ends.
func (l *Load) runHeld(ctx context.Context, s *held, first int) {
	prevNode, reconnect := "", false
	for ctx.Err() == nil {
		if reconnect {
			// Users notice at different moments and come back through
			// whichever gateway their client picks.
			d := l.ReconnectMin + time.Duration(mrand.Int64N(int64(l.ReconnectMax-l.ReconnectMin)))
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
			first = mrand.IntN(len(l.Gateways))
		}
		rec := Login{Start: time.Now(), Kind: KindHold, User: s.user.Name, Method: "publickey", Session: s.kind,
			Reconnect: reconnect, PrevNode: prevNode}
		run, err := l.startHeld(ctx, s, first, &rec)
		if ctx.Err() != nil && err != nil {
			return // stopped while logging in: not a failure of the gateway
		}
		reconnect = true
		if err != nil {
			l.Rec.login(failLogin(rec, err))
			continue
		}
		rec.OK, rec.Took = true, time.Since(rec.Start)
		l.Rec.login(rec)
		s.set(true, rec.Node, rec.Gateway)
		err = run()
		s.set(false, rec.Node, rec.Gateway)
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		lived := time.Since(s.since)
		s.mu.Unlock()
		l.Rec.end(SessionEnd{At: time.Now(), Kind: s.kind, Gateway: rec.Gateway, Node: rec.Node, User: s.user.Name,
			Lived: lived, Err: errString(err)})
		prevNode = rec.Node
	}
}

func errString(err error) string {
	if err == nil {
		return "ended"
	}
	return err.Error()
}

// startHeld logs s in and starts its session; run then keeps it going
// until it fails or ctx ends (and closes the connection).
func (l *Load) startHeld(ctx context.Context, s *held, first int, rec *Login) (func() error, error) {
	lctx, cancel := context.WithTimeout(ctx, l.LoginTimeout)
	defer cancel()
	c, err := l.connect(lctx, l.order(first), s.user, "publickey")
	if err != nil {
		return nil, err
	}
	rec.Gateway, rec.FailedOver = c.gateway, c.failedOver
	// While logging in, lctx bounds the connection; afterwards ctx does.
	stop := context.AfterFunc(lctx, func() { c.client.Close() })
	defer stop()
	fail := func(stage string, err error) (func() error, error) {
		c.client.Close()
		if lctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("hang: %w", err)
		}
		return nil, &loginError{stage: stage, err: err}
	}
	// gone is closed when the connection has ended, for whatever reason.
	gone := make(chan struct{})
	go func() { c.client.Wait(); close(gone) }()
	var node string
	var run func() error
	switch s.kind {
	case SessIdle:
		run, node, err = l.startIdle(c.client, s, gone)
	case SessStream:
		run, node, err = l.startStream(c.client, s, gone)
	case SessForward:
		run, node, err = l.startForward(c.client, s, gone)
	}
	if err != nil {
		return fail("session", err)
	}
	if !stop() {
		c.client.Close()
		return fail("session", lctx.Err())
	}
	rec.Node = node
	// ctx's end closes the connection, which ends run.
	closeOnDone := context.AfterFunc(ctx, func() { c.client.Close() })
	return func() error {
		defer closeOnDone()
		defer c.client.Close()
		return run()
	}, nil
}

// output collects a session's output and lets the caller wait for a
// string in it.
type output struct {
	mu   sync.Mutex // mu protects the following
	buf  []byte
	head []byte // the first 8 KiB, kept

	closed error
	notify chan struct{}
}

func newOutput(r io.Reader) *output {
	o := &output{notify: make(chan struct{})}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			o.mu.Lock()
			o.buf = append(o.buf, b[:n]...)
			if room := 8<<10 - len(o.head); room > 0 {
				o.head = append(o.head, b[:min(n, room)]...)
			}
			if len(o.buf) > 64<<10 {
				o.buf = append([]byte(nil), o.buf[len(o.buf)-32<<10:]...)
			}
			if err != nil {
				o.closed = err
			}
			close(o.notify)
			o.notify = make(chan struct{})
			o.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return o
}

// waitFor waits until the output contains s (and drops what came before
// it), the output ends or timeout passes.
func (o *output) waitFor(s string, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		if i := bytes.Index(o.buf, []byte(s)); i >= 0 {
			o.buf = o.buf[i+len(s):]
			o.mu.Unlock()
			return nil
		}
		closed, notify := o.closed, o.notify
		o.mu.Unlock()
		if closed != nil {
			return fmt.Errorf("session ended before %q: %w", s, closed)
		}
		select {
		case <-notify:
		case <-deadline.C:
			return fmt.Errorf("no %q within %s", s, timeout)
		}
	}
}

// text is what the output holds now.
func (o *output) text() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.buf)
}

// bannerNode reads the node from the gateway's interactive banner,
// "frontdoor: USER on NODE (pool …".
func bannerNode(text string) string {
	_, rest, ok := strings.Cut(text, "frontdoor: ")
	if !ok {
		return ""
	}
	_, rest, ok = strings.Cut(rest, " on ")
	if !ok {
		return ""
	}
	node, _, _ := strings.Cut(rest, " ")
	return node
}

// startIdle opens a terminal: a pty and a login shell. It is ready when
// the shell has run a command (the shell's echo of what was typed cannot
// match: the marker is computed).
func (l *Load) startIdle(c *ssh.Client, s *held, gone <-chan struct{}) (func() error, string, error) {
	_, stdin, out, err := terminal(c, strconv.Itoa(s.id))
	if err != nil {
		return nil, "", err
	}
	node := bannerNode(out.first())
	if node == "" {
		node = "?"
	}
	seq := 1
	ping := func() error {
		seq++
		if _, err := fmt.Fprintf(stdin, "echo soak-$((%d+1))-%d\n", seq, s.id); err != nil {
			return err
		}
		return out.waitFor(fmt.Sprintf("soak-%d-%d", seq+1, s.id), 30*time.Second)
	}
	run := func() error {
		for {
			if err := pause(l.PingEvery, gone); err != nil {
				return fmt.Errorf("%w (%s)", err, out.err())
			}
			if err := ping(); err != nil {
				return fmt.Errorf("terminal stopped answering: %w", err)
			}
		}
	}
	return run, node, nil
}

func (o *output) err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed == nil || o.closed == io.EOF {
		return errors.New("session closed by the far end")
	}
	return o.closed
}

// startStream runs `cat` on the node and, every StreamEvery, sends
// StreamBytes of random data and checks that exactly the same bytes come
// back.
func (l *Load) startStream(c *ssh.Client, s *held, gone <-chan struct{}) (func() error, string, error) {
	sess, err := c.NewSession()
	if err != nil {
		return nil, "", err
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := sess.Start(`echo "$SSH_CONNECTION"; exec cat`); err != nil {
		return nil, "", err
	}
	br := bufio.NewReaderSize(stdout, 64<<10)
	first := make(chan string, 1)
	go func() {
		line, _ := br.ReadString('\n')
		first <- line
	}()
	var line string
	select {
	case line = <-first:
	case <-time.After(20 * time.Second):
		return nil, "", errors.New("no SSH_CONNECTION line")
	}
	node := l.nodeOf(line)
	if node == "" {
		return nil, "", fmt.Errorf("no node in %q", line)
	}
	run := func() error {
		for {
			if err := pause(l.StreamEvery, gone); err != nil {
				return err
			}
			if err := l.roundTrip(SessStream, stdin, br, l.StreamBytes); err != nil {
				return err
			}
		}
	}
	return run, node, nil
}

// pause waits between rounds, d on average (uniform in [d/2, 3d/2), so
// sessions do not march in step); it fails when the connection is gone.
func pause(d time.Duration, gone <-chan struct{}) error {
	t := time.NewTimer(d/2 + time.Duration(mrand.Int64N(int64(d))))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-gone:
		return errors.New("connection closed")
	}
}

// roundTrip sends n random bytes to w and reads n bytes from r, which
// must be the same; it records the transfer.
func (l *Load) roundTrip(kind string, w io.Writer, r io.Reader, n int) error {
	data := make([]byte, n)
	rand.Read(data)
	want := sha256.Sum256(data)
	got := make(chan error, 1)
	var sum [32]byte
	go func() {
		h := sha256.New()
		_, err := io.CopyN(h, r, int64(n))
		copy(sum[:], h.Sum(nil))
		got <- err
	}()
	_, werr := w.Write(data)
	var rerr error
	select {
	case rerr = <-got:
	case <-time.After(60 * time.Second):
		rerr = errors.New("stalled: the echo did not come back within 60s")
	}
	t := Transfer{At: time.Now(), Kind: kind, Bytes: n}
	switch {
	case werr != nil:
		t.Err = werr.Error()
	case rerr != nil:
		t.Err = rerr.Error()
	case sum != want:
		t.Corrupt = true
		t.Err = "corrupt: the bytes that came back differ"
	}
	l.Rec.transfer(t)
	if t.Err != "" {
		return errors.New(t.Err)
	}
	return nil
}

// startForward learns its node with one command, then, every
// ForwardEvery, opens a direct-tcpip channel (ssh -L) to the echo service
// through the node and checks a round trip of ForwardBytes.
func (l *Load) startForward(c *ssh.Client, s *held, gone <-chan struct{}) (func() error, string, error) {
	sess, err := c.NewSession()
	if err != nil {
		return nil, "", err
	}
	out, err := sess.Output(`echo "$SSH_CONNECTION"`)
	sess.Close()
	if err != nil {
		return nil, "", err
	}
	node := l.nodeOf(string(out))
	if node == "" {
		return nil, "", fmt.Errorf("no node in %q", out)
	}
	// The tunnel works at once, or the session is no good.
	if err := l.forwardOnce(c); err != nil {
		return nil, "", err
	}
	run := func() error {
		for {
			if err := pause(l.ForwardEvery, gone); err != nil {
				return err
			}
			if err := l.forwardOnce(c); err != nil {
				return err
			}
		}
	}
	return run, node, nil
}

func (l *Load) forwardOnce(c *ssh.Client) error {
	ch, err := c.Dial("tcp", l.EchoAddr)
	if err != nil {
		l.Rec.transfer(Transfer{At: time.Now(), Kind: SessForward, Err: "open: " + err.Error()})
		return fmt.Errorf("forward to %s: %w", l.EchoAddr, err)
	}
	defer ch.Close()
	return l.roundTrip(SessForward, ch, ch, l.ForwardBytes)
}

// Echo is a TCP echo service on 127.0.0.1 (what forwarding sessions reach
// through their node). Close stops it.
type Echo struct {
	ln net.Listener
	wg sync.WaitGroup
}

// StartEcho starts an echo service on a free port of 127.0.0.1.
func StartEcho() (*Echo, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &Echo{ln: ln}
	e.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	})
	return e, nil
}

// Addr is the service's address.
func (e *Echo) Addr() string { return e.ln.Addr().String() }

// Close stops accepting (open connections end with their clients).
func (e *Echo) Close() {
	e.ln.Close()
	e.wg.Wait()
}

// first is the first 8 KiB of the output.
func (o *output) first() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.head)
}

// terminal opens a pty and a login shell on c and waits until the shell
// has run a command; it returns the session's output so far.
func terminal(c *ssh.Client, tag string) (*ssh.Session, io.Writer, *output, error) {
	sess, err := c.NewSession()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := sess.RequestPty("xterm", 40, 120, ssh.TerminalModes{ssh.ECHO: 1}); err != nil {
		return nil, nil, nil, fmt.Errorf("pty: %w", err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out := newOutput(stdout)
	if err := sess.Shell(); err != nil {
		return nil, nil, nil, fmt.Errorf("shell: %w", err)
	}
	if err := out.waitFor("frontdoor: ", 20*time.Second); err != nil {
		return nil, nil, nil, fmt.Errorf("banner: %w", err)
	}
	if _, err := fmt.Fprintf(stdin, "echo soak-$((1+1))-%s\n", tag); err != nil {
		return nil, nil, nil, err
	}
	if err := out.waitFor("soak-2-"+tag, 30*time.Second); err != nil {
		return nil, nil, nil, err
	}
	return sess, stdin, out, nil
}

// BannerOnce logs u in with a terminal, as an interactive user, and
// returns the login and the banner the gateway showed.
func (l *Load) BannerOnce(ctx context.Context, first int, u *User) (Login, string) {
	l.defaults()
	rec := Login{Start: time.Now(), Kind: KindProbe, User: u.Name, Method: "publickey", Session: SessIdle}
	ctx, cancel := context.WithTimeout(ctx, l.LoginTimeout)
	defer cancel()
	c, err := l.connect(ctx, l.order(first), u, "publickey")
	if err != nil {
		return failLogin(rec, err), ""
	}
	defer c.client.Close()
	stop := context.AfterFunc(ctx, func() { c.client.Close() })
	defer stop()
	rec.Gateway = c.gateway
	_, _, out, err := terminal(c.client, "banner")
	if err != nil {
		return failLogin(rec, &loginError{stage: "session", err: err}), ""
	}
	text := out.first()
	if i := strings.Index(text, "echo soak-"); i >= 0 {
		text = text[:i]
	}
	rec.Node = bannerNode(text)
	rec.OK, rec.Took = true, time.Since(rec.Start)
	return rec, strings.ReplaceAll(text, "\r", "")
}

// HoldOne logs u in as login (such as "alice+login3") with a terminal and
// keeps it open until stop is called or ctx ends.
func (l *Load) HoldOne(ctx context.Context, first int, u *User, login string) (stop func(), err error) {
	l.defaults()
	lctx, cancel := context.WithTimeout(ctx, l.LoginTimeout)
	defer cancel()
	c, err := l.connect(lctx, l.order(first), &User{Name: login, Signer: u.Signer}, "publickey")
	if err != nil {
		return nil, err
	}
	if _, _, _, err := terminal(c.client, "hold"); err != nil {
		c.client.Close()
		return nil, err
	}
	done := context.AfterFunc(ctx, func() { c.client.Close() })
	return func() { done(); c.client.Close() }, nil
}

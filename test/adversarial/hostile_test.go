package adversarial_test

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// The hostile-client drill (issue 20, "bad input"): every way a client can
// misbehave at once, from many sources, against one real gateway, the
// suite's Samba DC and sshd nodes, while another user logs in. Each attack
// must be ended or bounded by the gateway itself, and the other user's
// logins must stay within a bound of a baseline taken in the same test.
//
// Before authentication, from 127.0.0.100–199 (many sources, a few
// connections each, below every per-source limit):
//   - noise: random bytes instead of a version line, and random bytes
//     after a good one;
//   - half-open: TCP then nothing; a version line then nothing; a key
//     exchange then nothing (no userauth); bare SYNs that never complete
//     the TCP handshake (a raw socket; the kernel answers those, the
//     gateway never sees them);
//   - slowloris: the version line and then garbage, one byte every two
//     seconds.
//
// After authentication (alice, key login, on login1):
//   - a channel flood: 1000 direct-tcpip channels on one connection to a
//     service on the node (a listener of this test at login1's address);
//   - clients that never read while the node streams into their channels:
//     one that stops granting window (the SSH window fills), one that stops
//     reading its socket (the TCP window fills).
//
// Bounds checked: handshake_timeout ends every connection that has not
// finished its key exchange, auth_timeout every one that has not
// authenticated; gateway.max_channels caps the channels of one connection;
// a stalled channel holds at most its window (the relay never buffers
// more), and the rule's idle_timeout closes a connection whose data stopped
// moving. Afterwards the gateway's goroutines return to where they were.
func TestHostileClients(t *testing.T) {
	const (
		handshakeTimeout = 6 * time.Second
		authTimeout      = 10 * time.Second
		idleTimeout      = 15 * time.Second
		maxChannels      = 64
		logins           = 5
	)
	g := newGateway(t, gwOptions{
		Rules: []policy.Rule{{Name: ruleName, Groups: []string{group}, Pools: []string{pool}, IdleTimeout: idleTimeout}},
		Edit: func(c *config.Config) {
			gc := &c.Gateway
			gc.HandshakeTimeout, gc.AuthTimeout, gc.LoginGraceTime = handshakeTimeout, authTimeout, 30*time.Second
			gc.MaxChannels = maxChannels
		},
	})
	node := nodes[0] // login1: alice's sessions go there (alice+login1)
	nodeHost, _, err := net.SplitHostPort(node.Addr)
	if err != nil {
		t.Fatal(err)
	}

	// The baseline: bob's logins with nothing else going on.
	baseline := timeLogins(t, g, "127.0.0.3", logins)
	goroutinesBefore := runtime.NumGoroutine()

	// Services on login1 that alice's channels lead to: one holds its
	// connections, one streams into them until they stop taking data.
	hold := listenOn(t, nodeHost, func(c net.Conn) { io.Copy(io.Discard, c) })
	stream := listenOn(t, nodeHost, func(c net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	})

	// Unauthenticated attacks, all at once, each attacker starting over
	// as soon as the gateway closed its connection, until stop.
	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var pre sync.WaitGroup
	results := map[string]*closeTimes{}
	// again runs one attacker's connections one after another, at most
	// one a second (the drill's pace: what the gateway closes at once
	// would otherwise come back thousands of times a second).
	again := func(attempt func()) {
		defer pre.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for !stopped() {
			attempt()
			select {
			case <-stop:
			case <-tick.C:
			}
		}
	}
	attack := func(kind string, n int, firstSrc int, run func(nc net.Conn) error) {
		ct := &closeTimes{}
		results[kind] = ct
		for i := range n {
			src := fmt.Sprintf("127.0.0.%d", firstSrc+i%20)
			pre.Add(1)
			go again(func() { ct.add(t, g, src, authTimeout+15*time.Second, run) })
		}
	}
	version := []byte("SSH-2.0-hostile\r\n")
	attack("noise instead of a version", 10, 100, func(nc net.Conn) error {
		return writeRandom(nc, 64<<10)
	})
	attack("noise after the version", 10, 100, func(nc net.Conn) error {
		if _, err := nc.Write(version); err != nil {
			return err
		}
		return writeRandom(nc, 64<<10)
	})
	attack("TCP then nothing", 40, 120, func(net.Conn) error { return nil })
	attack("version then nothing", 40, 140, func(nc net.Conn) error {
		_, err := nc.Write(version)
		return err
	})
	attack("slowloris, a byte every 2s", 40, 160, func(nc net.Conn) error {
		tick := time.NewTicker(2 * time.Second) // the attack's pace
		defer tick.Stop()
		for _, b := range append(version, make([]byte, 64)...) {
			if _, err := nc.Write([]byte{b}); err != nil {
				return err
			}
			<-tick.C
		}
		return nil
	})
	kexOnly := &closeTimes{}
	results["key exchange then nothing"] = kexOnly
	for i := range 10 {
		src := fmt.Sprintf("127.0.0.%d", 180+i)
		pre.Add(1)
		go again(func() { kexOnly.addKex(t, g, src, authTimeout+15*time.Second) })
	}
	var syns atomic.Int64
	synDone := make(chan error, 1)
	go func() { synDone <- synFlood(stop, g.Addr(), 190, 10, &syns) }()

	// Authenticated: a channel flood and two clients that never read.
	flood := loginRaw(t, g, "127.0.0.200", alice, aliceName+"+login1")
	floodClient, err := flood.Client()
	if err != nil {
		t.Fatal(err)
	}
	opened, refused := openChannels(floodClient, hold.Addr().String(), 1000)
	t.Logf("channel flood: 1000 direct-tcpip opens on one connection: %d opened, %d refused %v; the node's service accepted %d",
		len(opened), refused.total(), refused.byReason, hold.accepted())
	if len(opened) > maxChannels {
		t.Errorf("%d channels open on one connection, gateway.max_channels is %d", len(opened), maxChannels)
	}

	const stalled = 16
	slowWindow := loginRaw(t, g, "127.0.0.201", alice, aliceName+"+login1")
	swClient, err := slowWindow.Client()
	if err != nil {
		t.Fatal(err)
	}
	swConns, swRefused := openChannels(swClient, stream.Addr().String(), stalled)
	slowSocket := loginRaw(t, g, "127.0.0.202", alice, aliceName+"+login1")
	host, port := stream.hostPort()
	for i := range stalled {
		if err := slowSocket.WritePacket(rawssh.Marshal(&directTCPIPOpen{Type: "direct-tcpip", PeersID: uint32(i),
			PeersWindow: math.MaxUint32 >> 1, MaxPacket: 32 << 10, Host: host, Port: port, OrigHost: "127.0.0.202", OrigPort: 4242})); err != nil {
			t.Fatal(err)
		}
	}
	if len(swConns) != stalled || swRefused.total() != 0 {
		t.Fatalf("window-full client: %d of %d channels opened (%v)", len(swConns), stalled, swRefused.byReason)
	}

	// Under all of it, bob logs in again.
	during := timeLogins(t, g, "127.0.0.3", logins)

	// The stalled sessions stop moving: what the gateway sent each client
	// stays put once the windows (SSH, then TCP) are full.
	var heap runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heap)
	stalledBytes := waitStalled(t, g)
	var heapStalled runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heapStalled)
	goroutinesPeak := runtime.NumGoroutine()

	close(stop)
	pre.Wait()
	if err := <-synDone; err != nil {
		t.Errorf("SYN flood: %v", err)
	}
	for _, kind := range slices.Sorted(maps.Keys(results)) {
		ct := results[kind]
		shortest, longest := ct.extent()
		t.Logf("%-28s %4d connections: closed by the gateway after %v (min) – %v (max); %d outlived the bound; %d not admitted",
			kind+":", ct.n(), shortest.Round(time.Millisecond), longest.Round(time.Millisecond), ct.survivors, ct.failed)
		bound := handshakeTimeout
		if kind == "key exchange then nothing" {
			bound = authTimeout
		}
		if ct.survivors > 0 || longest > bound+3*time.Second {
			t.Errorf("%s: held up to %v (%d never closed by the gateway), the bound is %v", kind, longest, ct.survivors, bound)
		}
	}
	t.Logf("SYN flood: %d SYNs from 10 sources, none completing a TCP handshake", syns.Load())

	// The idle timeout ends the stalled connections and the channel flood.
	err = harness.WaitFor(t.Context(), idleTimeout+20*time.Second, func() error {
		if n := len(g.Server().Sessions()); n != 0 {
			return fmt.Errorf("%d sessions still open", n)
		}
		return nil
	})
	if err != nil {
		t.Errorf("stalled and flooding sessions not closed within idle_timeout (%v): %v", idleTimeout, err)
	}
	goroutinesAfter := waitGoroutines(t, goroutinesBefore+30)

	// The figures.
	t.Logf("stalled clients: %d channels each with the node streaming: the gateway sent the window-full client %s and the socket-full one %s, then nothing; heap %s before, %s stalled (the window-full client's own %d×2 MiB included)",
		stalled, mib(stalledBytes["127.0.0.201"]), mib(stalledBytes["127.0.0.202"]), mib(int64(heap.HeapInuse)), mib(int64(heapStalled.HeapInuse)), stalled)
	t.Logf("goroutines: %d before, %d under attack, %d after", goroutinesBefore, goroutinesPeak, goroutinesAfter)
	if w := stalledBytes["127.0.0.201"]; w > stalled*2<<20+1<<20 {
		t.Errorf("the window-full client was sent %s, more than its %d windows of 2 MiB", mib(w), stalled)
	}
	// Each stalled channel may hold its window (2 MiB) at the gateway and,
	// for the window-full client, 2 MiB more in its own buffers here.
	if grown := int64(heapStalled.HeapInuse) - int64(heap.HeapInuse); grown > 4*stalled*2<<20+64<<20 {
		t.Errorf("the heap grew by %s with %d stalled channels", mib(grown), 2*stalled)
	}
	bm, dm := median(baseline), median(during)
	bound := 3*bm + 2*time.Second
	t.Logf("bob's logins (dial, key exchange, key auth, a session running id -un): baseline median %v (%v); under attack median %v (%v); bound %v",
		bm.Round(time.Millisecond), rounded(baseline), dm.Round(time.Millisecond), rounded(during), bound.Round(time.Millisecond))
	if dm > bound {
		t.Errorf("bob's median login took %v under attack, bound %v (baseline %v)", dm, bound, bm)
	}
	for _, c := range []interface{ Close() error }{flood, slowWindow, slowSocket} {
		c.Close()
	}
}

// timeLogins times n logins of bob from src.
func timeLogins(t *testing.T, g *harness.Gateway, src string, n int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for range n {
		start := time.Now()
		loginAs(t, g, src, bob)
		out = append(out, time.Since(start))
	}
	return out
}

// loginRaw logs in as a with a's key under the name typed, from src.
func loginRaw(t *testing.T, g *harness.Gateway, src string, a *actor, typed string) *rawssh.RawConn {
	t.Helper()
	rc := dialRaw(t, g, src)
	userauth(t, rc)
	expect(t, "sign "+typed, send(t, rc, "sign", signed(t, rc, typed, a)), rawssh.ReplySuccess)
	return rc
}

// directTCPIPOpen is SSH_MSG_CHANNEL_OPEN for direct-tcpip (RFC 4254 7.2).
type directTCPIPOpen struct {
	Type        string `sshtype:"90"`
	PeersID     uint32
	PeersWindow uint32
	MaxPacket   uint32
	Host        string
	Port        uint32
	OrigHost    string
	OrigPort    uint32
}

// openRefusals counts refused channel opens by reason.
type openRefusals struct {
	mu       sync.Mutex
	byReason map[string]int
}

func (r *openRefusals) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byReason == nil {
		r.byReason = map[string]int{}
	}
	r.byReason[reason]++
}

func (r *openRefusals) total() int {
	n := 0
	for _, v := range r.byReason {
		n += v
	}
	return n
}

// openChannels opens n direct-tcpip channels to addr at once.
func openChannels(c *rawssh.Client, addr string, n int) ([]net.Conn, *openRefusals) {
	var mu sync.Mutex
	var opened []net.Conn
	ref := &openRefusals{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := c.Dial("tcp", addr)
			if err != nil {
				var oe *rawssh.OpenChannelError
				if errors.As(err, &oe) {
					ref.add(oe.Reason.String())
				} else {
					ref.add(err.Error())
				}
				return
			}
			mu.Lock()
			opened = append(opened, conn)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return opened, ref
}

// service is a TCP listener of the test on a node's address.
type service struct {
	net.Listener
	n atomic.Int64
}

func (s *service) accepted() int64 { return s.n.Load() }

func (s *service) hostPort() (string, uint32) {
	a := s.Addr().(*net.TCPAddr)
	return a.IP.String(), uint32(a.Port)
}

// listenOn serves each connection to host:0 with serve until the test ends.
func listenOn(t *testing.T, host string, serve func(net.Conn)) *service {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := &service{Listener: ln}
	var conns sync.Map
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.n.Add(1)
			conns.Store(c, true)
			go serve(c)
		}
	}()
	return s
}

// closeTimes records how long the gateway kept attack connections open.
type closeTimes struct {
	mu        sync.Mutex
	held      []time.Duration
	survivors int // still open at the backstop: the gateway never closed them
	failed    int // could not connect (or finish a key exchange)
}

func (ct *closeTimes) dialFailed() { ct.mu.Lock(); ct.failed++; ct.mu.Unlock() }

// add connects from src, runs the attack and waits for the gateway to
// close the connection (reading and discarding what it sends), at most
// backstop.
func (ct *closeTimes) add(t *testing.T, g *harness.Gateway, src string, backstop time.Duration, run func(net.Conn) error) {
	nc, err := dialTCP(t.Context(), g, src)
	if err != nil {
		ct.dialFailed()
		return
	}
	defer nc.Close()
	start := time.Now()
	nc.SetReadDeadline(start.Add(backstop))
	closed := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, nc)
		closed <- err
	}()
	go run(nc) // ends with an error once the gateway closed the connection
	ct.record(<-closed, time.Since(start))
}

// addKex completes the key exchange from src, then sends nothing.
func (ct *closeTimes) addKex(t *testing.T, g *harness.Gateway, src string, backstop time.Duration) {
	start := time.Now()
	rc, err := tryDialRaw(t.Context(), g, src)
	if err != nil {
		ct.dialFailed() // refused at admission, or the key exchange cut short
		return
	}
	defer rc.Close()
	var err2 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err2 = rc.ReadPacket(); err2 != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(backstop):
		err2 = errBackstop
	}
	ct.record(err2, time.Since(start))
}

var errBackstop = errors.New("still open at the test's backstop")

func (ct *closeTimes) record(err error, held time.Duration) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	var ne net.Error
	if errors.Is(err, errBackstop) || (errors.As(err, &ne) && ne.Timeout()) {
		ct.survivors++
		return
	}
	ct.held = append(ct.held, held)
}

func (ct *closeTimes) n() int { ct.mu.Lock(); defer ct.mu.Unlock(); return len(ct.held) + ct.survivors }

// extent is the shortest and the longest time a connection was held.
func (ct *closeTimes) extent() (shortest, longest time.Duration) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if len(ct.held) == 0 {
		return 0, 0
	}
	return slices.Min(ct.held), slices.Max(ct.held)
}

// writeRandom writes n random bytes.
func writeRandom(nc net.Conn, n int) error {
	b := make([]byte, n)
	rand.Read(b)
	_, err := nc.Write(b)
	return err
}

// waitStalled waits until the bytes the gateway sent each of alice's
// stalled sessions stop growing (two readings two seconds apart agree)
// and returns them by source address.
func waitStalled(t *testing.T, g *harness.Gateway) map[string]int64 {
	t.Helper()
	read := func() map[string]int64 {
		out := map[string]int64{}
		for _, s := range g.Server().Sessions() {
			host, _, _ := net.SplitHostPort(s.Src)
			out[host] = s.BytesDown
		}
		return out
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	deadline := time.Now().Add(40 * time.Second)
	prev := read()
	for {
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-tick.C:
		}
		cur := read()
		moving := ""
		for _, src := range []string{"127.0.0.201", "127.0.0.202"} {
			if cur[src] == 0 || cur[src] != prev[src] {
				moving = fmt.Sprintf("%s: %d bytes sent, %d two seconds before", src, cur[src], prev[src])
			}
		}
		if moving == "" {
			return cur
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stalled clients' sessions never stopped moving: %s", moving)
		}
		prev = cur
	}
}

// waitGoroutines waits until at most want goroutines run and returns how
// many do.
func waitGoroutines(t *testing.T, want int) int {
	t.Helper()
	n := runtime.NumGoroutine()
	err := harness.WaitFor(t.Context(), 20*time.Second, func() error {
		if n = runtime.NumGoroutine(); n > want {
			return fmt.Errorf("%d goroutines, want at most %d", n, want)
		}
		return nil
	})
	if err != nil {
		t.Errorf("after the attacks: %v", err)
	}
	return n
}

// synFlood sends TCP SYNs to addr from n sources starting at
// 127.0.0.first, through raw sockets, until stop: connections that never
// complete (the kernel answers them, resets follow; the gateway never
// sees one).
func synFlood(stop <-chan struct{}, addr string, first, n int, sent *atomic.Int64) error {
	dst, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return err
	}
	fds := make([]int, n)
	for i := range fds {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_TCP)
		if err != nil {
			return fmt.Errorf("raw socket (needs root): %w", err)
		}
		defer syscall.Close(fd)
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, byte(first + i)}}); err != nil {
			return err
		}
		fds[i] = fd
	}
	to := &syscall.SockaddrInet4{Addr: [4]byte(dst.IP.To4())}
	tick := time.NewTicker(100 * time.Millisecond) // the flood's pace: 1000 SYNs a second
	defer tick.Stop()
	for i := 0; ; i++ {
		src := [4]byte{127, 0, 0, byte(first + i%n)}
		seg := synSegment(src, [4]byte(dst.IP.To4()), uint16(20000+i%40000), uint16(dst.Port), uint32(i))
		if err := syscall.Sendto(fds[i%n], seg, 0, to); err != nil {
			return err
		}
		sent.Add(1)
		if i%100 == 99 {
			select {
			case <-stop:
				return nil
			case <-tick.C:
			}
		}
	}
}

// synSegment is a TCP SYN header (no options) with its checksum.
func synSegment(src, dst [4]byte, sport, dport uint16, seq uint32) []byte {
	h := make([]byte, 20)
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint32(h[4:], seq)
	h[12] = 5 << 4 // data offset: 5 words
	h[13] = 0x02   // SYN
	binary.BigEndian.PutUint16(h[14:], 65535)
	pseudo := append(append(append([]byte{}, src[:]...), dst[:]...), 0, syscall.IPPROTO_TCP, 0, byte(len(h)))
	var sum uint32
	for _, b := range [][]byte{pseudo, h} {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(h[16:], ^uint16(sum))
	return h
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func rounded(d []time.Duration) []time.Duration {
	out := make([]time.Duration, len(d))
	for i, x := range d {
		out[i] = x.Round(time.Millisecond)
	}
	return out
}

func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB" }

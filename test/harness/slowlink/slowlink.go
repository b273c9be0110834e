// Package slowlink is a TCP relay on loopback that makes a server slow or
// makes it vanish: every byte the server sends reaches the client Delay
// later (a directory under load, a DC far away), and Down refuses and cuts
// connections (a DC that died). It has no dependency on frontdoor's
// packages, so any package's tests may put it in front of a real server
// (the Samba DC in test/adversarial, internal/directory/ad and authbench).
package slowlink

import (
	"io"
	"net"
	"sync"
	"time"
)

// Link relays connections from Addr to a target.
type Link struct {
	target string
	ln     net.Listener

	mu    sync.Mutex // mu protects the following
	delay time.Duration
	down  bool
	conns map[net.Conn]struct{}

	wg sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and relays to target
// (host:port), adding delay to what target sends.
func Start(target string, delay time.Duration) (*Link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &Link{target: target, ln: ln, delay: delay, conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

// Addr is the relay's address, host:port.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// SetDelay changes the delay of what the target sends from now on.
func (l *Link) SetDelay(d time.Duration) {
	l.mu.Lock()
	l.delay = d
	l.mu.Unlock()
}

// SetDown, when down, cuts every open connection and refuses new ones
// (accepted and closed at once: a refused connection, as from a DC that
// died); up relays again.
func (l *Link) SetDown(down bool) {
	l.mu.Lock()
	l.down = down
	var cut []net.Conn
	if down {
		for c := range l.conns {
			cut = append(cut, c)
		}
	}
	l.mu.Unlock()
	for _, c := range cut {
		c.Close()
	}
}

// Close stops the relay and closes every connection.
func (l *Link) Close() error {
	err := l.ln.Close()
	l.SetDown(true)
	l.wg.Wait()
	return err
}

func (l *Link) serve() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		down := l.down
		l.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.relay(c)
		}()
	}
}

// track adds c to the connections SetDown cuts; false when the link is
// down.
func (l *Link) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *Link) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	c.Close()
}

func (l *Link) relay(client net.Conn) {
	server, err := net.DialTimeout("tcp", l.target, 10*time.Second)
	if err != nil {
		client.Close()
		return
	}
	if !l.track(client) || !l.track(server) {
		l.untrack(client)
		l.untrack(server)
		return
	}
	defer l.untrack(client)
	defer l.untrack(server)
	done := make(chan struct{}, 2)
	go func() { // client → server as it comes
		io.Copy(server, client)
		done <- struct{}{}
	}()
	go func() { // server → client, each chunk delay late, in order
		l.delayed(client, server)
		done <- struct{}{}
	}()
	<-done
	client.Close()
	server.Close()
	<-done
}

// chunk is bytes read from the server and when they are due at the client.
type chunk struct {
	b   []byte
	due time.Time
}

// delayed copies src to dst, holding each chunk back until its due time.
func (l *Link) delayed(dst, src net.Conn) {
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				l.mu.Lock()
				d := l.delay
				l.mu.Unlock()
				q <- chunk{buf[:n], time.Now().Add(d)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		if wait := time.Until(c.due); wait > 0 {
			t := time.NewTimer(wait)
			<-t.C
		}
		if _, err := dst.Write(c.b); err != nil {
			src.Close()
			for range q { // let the reader end
			}
			return
		}
	}
}

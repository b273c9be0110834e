package gateway

import (
	"sync"
)

// Draining: a gateway process that stops taking logins (an upgrade handed
// its listening socket to a new process, or SIGTERM) keeps relaying its
// sessions, tells their users what is happening (a notice on every
// interactive terminal, proxy.Relay.Notify), and at the end of its time
// closes those left, saying why.

// StopAccepting closes the listeners: Serve returns, connections being set
// up finish their login here, sessions go on. It cannot be undone.
func (g *Gateway) StopAccepting() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.draining = true
	for ln := range g.listeners {
		ln.Close()
	}
}

// Idle is closed once StopAccepting was called and every connection has
// ended.
func (g *Gateway) Idle() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		g.mu.Lock()
		draining := g.draining
		g.mu.Unlock()
		if draining {
			g.serving.Wait() // no Serve loop can start a handler any more
			g.wg.Wait()
			g.bg.Wait() // their lookups and password checks
			close(done)
		}
	}()
	return done
}

// SessionCount is the number of live sessions.
func (g *Gateway) SessionCount() int { return len(g.sessions.all()) }

// Notify writes line to the terminal of every interactive session and
// returns how many it wrote to.
func (g *Gateway) Notify(line string) int {
	n := 0
	for _, s := range g.sessions.all() {
		n += s.relay.Notify(line)
	}
	return n
}

// CloseSessions closes every live session, telling interactive ones why,
// and returns once each was told and closed.
func (g *Gateway) CloseSessions(reason string) {
	var wg sync.WaitGroup
	for _, s := range g.sessions.all() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.relay.Close(reason)
		}()
	}
	wg.Wait()
}

package proxy

import (
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Notices: a line the gateway writes to the terminal of every interactive
// session of a relayed connection (a shell with a pty), on its stderr, for
// things the user must know before they happen to them: the idle timeout
// coming, the gateway being upgraded or shut down, the node being drained.
// Commands, scp, sftp, rsync and VS Code's channels never get one: a line
// in their streams would corrupt their protocols.
//
// A notice never blocks the gateway: each line is written by a goroutine
// of its own, since a client that stopped reading holds a write until its
// window opens. Close waits for its last notice a moment (noticeWait) so
// that the reason arrives before the connection ends.

// noticeWait bounds how long Close waits for its notice to be written.
const noticeWait = 2 * time.Second

// addInteractive records an interactive session's client end.
func (r *Relay) addInteractive(ch ssh.Channel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.interactive == nil {
		r.interactive = map[ssh.Channel]struct{}{}
	}
	r.interactive[ch] = struct{}{}
}

func (r *Relay) removeInteractive(ch ssh.Channel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.interactive, ch)
}

// Notify writes "frontdoor: line" on a line of its own to every interactive
// session of the connection, and returns how many it writes to. It does
// not wait for the writes.
func (r *Relay) Notify(line string) int {
	n, _ := r.notify(line)
	return n
}

// notify starts the writes; done is closed when all of them returned.
func (r *Relay) notify(line string) (int, <-chan struct{}) {
	msg := []byte("\r\nfrontdoor: " + strings.ReplaceAll(strings.TrimSpace(line), "\n", " ") + "\r\n")
	r.mu.Lock()
	chans := make([]ssh.Channel, 0, len(r.interactive))
	for ch := range r.interactive {
		chans = append(chans, ch)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, ch := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch.Stderr().Write(msg)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return len(chans), done
}

// Close tells the interactive sessions why ("closing this session:
// reason") and closes the connection; Run returns. It may be called
// before Run, from any goroutine, more than once.
func (r *Relay) Close(reason string) {
	_, done := r.notify("closing this session: " + reason)
	select {
	case <-done:
	case <-time.After(noticeWait):
	}
	r.mu.Lock()
	stop := r.stop
	r.stopped = true
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// setStop records how Run closes both sides; false if Close came first.
func (r *Relay) setStop(stop func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop = stop
	return !r.stopped
}

package proxy

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// What the gateway adds to a relayed session, beyond passing bytes on:
//
//   - Env: variables sent to the node as "env" requests before a session
//     channel's shell, command or subsystem starts (the node's sshd must
//     AcceptEnv them). A client's own env requests for names the gateway
//     sets, or any FRONTDOOR_* name, are refused: a user cannot pose as
//     another account or partition.
//   - Banner: text written to an interactive session (a pty and a shell)
//     before the shell starts. Commands (ssh host cmd, scp, sftp, rsync,
//     VS Code's exec) never see it: it would corrupt their protocols.
//   - AllowDirect: which destinations `ssh -L`/`-D` (direct-tcpip) may
//     reach through the node.
//   - IdleTimeout: a connection that relays no data for that long is
//     closed, after a warning to its interactive sessions IdleWarning
//     before (a notice, notice.go).

// reqEnv is the session request that sets an environment variable.
const reqEnv = "env"

// envReserved reports whether a client may not set name itself.
func (r *Relay) envReserved(name string) bool {
	if strings.HasPrefix(name, "FRONTDOOR_") {
		return true
	}
	_, ok := r.Env[name]
	return ok
}

// sessionState follows one session channel's requests.
type sessionState struct {
	down    ssh.Channel // the client's end
	pty     bool        // a pty was requested
	started bool        // shell, exec or subsystem sent
}

// beforeStart runs before a session's shell/exec/subsystem request goes to
// the node: the gateway's environment first, then, for an interactive
// shell, the banner to the client.
func (r *Relay) beforeStart(st *sessionState, reqType string, up ssh.Channel) {
	if st.started {
		return
	}
	st.started = true
	for _, k := range slices.Sorted(maps.Keys(r.Env)) {
		up.SendRequest(reqEnv, false, ssh.Marshal(struct{ Name, Value string }{k, r.Env[k]}))
	}
	if reqType == "shell" && st.pty {
		if r.Banner != nil {
			if b := r.Banner(); b != "" {
				st.down.Write([]byte(strings.ReplaceAll(strings.TrimRight(b, "\n"), "\n", "\r\n") + "\r\n"))
			}
		}
		r.addInteractive(st.down)
	}
}

// clientSessionRequest decides a client's session request before it is
// forwarded; false refuses it.
func (r *Relay) clientSessionRequest(st *sessionState, req *ssh.Request, up ssh.Channel) bool {
	switch req.Type {
	case "pty-req":
		st.pty = true
	case reqEnv:
		var e struct{ Name, Value string }
		if ssh.Unmarshal(req.Payload, &e) != nil || r.envReserved(e.Name) {
			return false
		}
	case "shell", "exec", "subsystem":
		r.beforeStart(st, req.Type, up)
	}
	return r.maySessionRequest(req.Type)
}

// mayDirect reports whether a direct-tcpip open may reach its destination.
func (r *Relay) mayDirect(extra []byte) (string, bool) {
	if r.AllowDirect == nil {
		return "", true
	}
	var d tcpipOpen
	if err := ssh.Unmarshal(extra, &d); err != nil {
		return "malformed", false
	}
	dest := fmt.Sprintf("%s:%d", d.Host, d.Port)
	return dest, r.AllowDirect(d.Host, d.Port)
}

// LocalDestinations allows what a login node's own services are reached
// as: localhost, loopback addresses, and the names given (the node's own
// name and addresses). It is the default forwarding-destination policy.
func LocalDestinations(own ...string) func(host string, port uint32) bool {
	return func(host string, _ uint32) bool {
		h := strings.ToLower(strings.TrimSuffix(host, "."))
		if h == "localhost" || strings.HasSuffix(h, ".localhost") {
			return true
		}
		if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil && a.Unmap().IsLoopback() {
			return true
		}
		for _, o := range own {
			if strings.EqualFold(o, h) {
				return true
			}
		}
		return false
	}
}

// idleWatch closes a connection that relayed nothing for IdleTimeout,
// warning its interactive sessions IdleWarning before. It checks the byte
// counters on a timer rather than timing every read, so the data path
// pays nothing.
type idleWatch struct {
	r *Relay

	mu         sync.Mutex // mu protects the following
	t          *time.Timer
	last       int64     // bytes relayed at the last check
	lastActive time.Time // when bytes last changed (as checks saw it)
	warned     bool
	stopped    bool
}

// idleCheckEvery is how often the counters are looked at, at most.
const idleCheckEvery = 30 * time.Second

func (r *Relay) startIdle() {
	if r.IdleTimeout <= 0 {
		return
	}
	w := &idleWatch{r: r, lastActive: time.Now()}
	r.idle = w
	w.mu.Lock()
	w.t = time.AfterFunc(w.interval(), w.check)
	w.mu.Unlock()
}

func (w *idleWatch) interval() time.Duration {
	d := min(idleCheckEvery, w.r.IdleTimeout/4)
	if w.r.IdleWarning > 0 {
		d = min(d, w.r.IdleWarning/2)
	}
	return max(d, 10*time.Millisecond)
}

func (w *idleWatch) check() {
	now := time.Now()
	total := w.r.Stats.BytesUp.Load() + w.r.Stats.BytesDown.Load() + w.r.Stats.Channels.Load()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if total != w.last {
		w.last, w.lastActive, w.warned = total, now, false
	}
	idle := now.Sub(w.lastActive)
	switch {
	case idle >= w.r.IdleTimeout:
		w.r.Log.Info("closing idle session", "reason", "idle timeout", "idle", idle.Round(time.Second))
		w.stopped = true
		go w.r.Close(fmt.Sprintf("idle for %s", idle.Round(time.Second)))
		return
	case w.r.IdleWarning > 0 && !w.warned && idle >= w.r.IdleTimeout-w.r.IdleWarning:
		w.warned = true
		left := (w.r.IdleTimeout - idle).Round(time.Second)
		w.r.Notify(fmt.Sprintf("this session has been idle for %s and will be closed in %s unless there is activity",
			idle.Round(time.Second), left))
	}
	w.t.Reset(w.interval())
}

func (w *idleWatch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.stopped = true
	w.t.Stop()
	w.mu.Unlock()
}

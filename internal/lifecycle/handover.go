package lifecycle

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/assembly"
	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
)

// The handover channel between the old process and the new one: a Unix
// socket pair the old process makes before it starts the new one, whose
// end tableflip passes on as the file handoverFile. One JSON object per
// line:
//
//	new → old  {"t":"takeover","v":1,"pid":N,"member":"gw1"}
//	           the new process is about to start what one process holds
//	           (its gossip member, the audit spool): give them up
//	old → new  {"t":"identities","identities":{…}}
//	           the directory's cached identities (assembly.ExportIdentities;
//	           at most ad.MaxHandover bytes), just before "sessions"; absent
//	           when the directory keeps none or the old process predates it
//	old → new  {"t":"sessions","pid":N,"started":T,"sessions":[{"user":…,"node":…,"n":…}],"nodes":[…]}
//	           given up (assembly.HandOver); the sessions it relays now, and
//	           the nodes it routes to, which the new one waits to see up
//	           before it takes logins
//	old → new  {"t":"set","user":…,"node":…,"n":…}   one of those counts changed
//	old → new  {"t":"audit","event":{…}}             an event for the S3 sink
//	old → new  {"t":"drain","deadline":T}            the new process is ready;
//	           the old one relays its sessions until T at most
//	new → old  {"t":"maintenance","maintenance":[{"node":…,"deadline":T,"message":…}]}
//	           the nodes' maintenance drains as the gateways' shared state
//	           has them now, whenever they change (drainhandover.go)
//
// End of file, on either side, is that process gone (or the upgrade given
// up). The two ends are different versions of the binary, so fields are
// only ever added and a message of a type a reader does not know is
// skipped. The old process never waits on the channel: what it sends is
// queued (counts coalesce per user and node; audit events are bounded,
// and are in its audit file anyway).

// handoverFile is the name of the channel's end among the files tableflip
// passes to the new process.
const handoverFile = "frontdoor-handover"

// protocolVersion is the takeover's "v".
const protocolVersion = 1

// maxLine bounds one message: a sessions snapshot of 100,000 sessions.
const maxLine = 16 << 20

// maxQueuedEvents bounds the audit events waiting for the new process.
const maxQueuedEvents = 10000

// message is every message; T says which fields it uses.
type message struct {
	T        string         `json:"t"`
	V        int            `json:"v,omitempty"`
	PID      int            `json:"pid,omitempty"`
	Member   string         `json:"member,omitempty"`
	Sessions []sessionCount `json:"sessions,omitempty"`
	sessionCount
	Event    *audit.Event `json:"event,omitempty"`
	Deadline time.Time    `json:"deadline,omitzero"`
	Started  time.Time    `json:"started,omitzero"`
	Nodes    []string     `json:"nodes,omitempty"`
	// Maintenance: drainhandover.go.
	Maintenance []maintenanceDrain `json:"maintenance,omitempty"`
	// Identities: the "identities" message.
	Identities json.RawMessage `json:"identities,omitempty"`
}

type sessionCount struct {
	User string `json:"user,omitempty"`
	Node string `json:"node,omitempty"`
	N    int    `json:"n,omitempty"`
}

// decodeMessage parses one line. A count is never negative; an unknown
// type is returned for the caller to skip.
func decodeMessage(line []byte) (message, error) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return message{}, fmt.Errorf("handover: %w", err)
	}
	if m.T == "" {
		return message{}, errors.New("handover: message without a type")
	}
	if m.N < 0 {
		return message{}, fmt.Errorf("handover: negative count %d", m.N)
	}
	for _, s := range m.Sessions {
		if s.N < 0 || s.User == "" || s.Node == "" {
			return message{}, fmt.Errorf("handover: bad session count %+v", s)
		}
	}
	return m, nil
}

// socketPair makes the channel: ours stays here, theirs goes to the new
// process.
func socketPair() (ours net.Conn, theirs *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("handover: socketpair: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "handover")
	ours, err = net.FileConn(f)
	f.Close()
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("handover: %w", err)
	}
	return ours, os.NewFile(uintptr(fds[1]), handoverFile), nil
}

// lineReader reads messages.
type lineReader struct{ r *bufio.Reader }

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next message of a known type (unknown ones are
// skipped).
func (lr *lineReader) next(known ...string) (message, error) {
	for {
		line, err := lr.line()
		if err != nil {
			return message{}, err
		}
		m, err := decodeMessage(line)
		if err != nil {
			return message{}, err
		}
		for _, k := range known {
			if m.T == k {
				return m, nil
			}
		}
	}
}

func (lr *lineReader) line() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := lr.r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, errors.New("handover: message too long")
		}
		switch {
		case err == nil:
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// successor is the old process's end: it serves the new process's
// takeover and then sends it what changes. It is the assembly's
// Successor.
type successor struct {
	conn net.Conn
	log  *slog.Logger
	done chan struct{} // closed when run returns

	mu       sync.Mutex // mu protects the following
	wake     chan struct{}
	counts   map[sessionCount]int // latest count per user and node (N unused in the key)
	events   []audit.Event
	dropped  int
	deadline time.Time // to send
	pid      int       // the new process's, from its takeover
	took     bool      // it took the place over
	closed   bool
}

var _ assembly.Successor = (*successor)(nil)

func newSuccessor(conn net.Conn, log *slog.Logger) *successor {
	return &successor{conn: conn, log: log, done: make(chan struct{}), wake: make(chan struct{}, 1), counts: map[sessionCount]int{}}
}

// Sessions queues a count (called with the router's lock held).
func (s *successor) Sessions(user, node string, n int) {
	s.mu.Lock()
	s.counts[sessionCount{User: user, Node: node}] = n
	s.mu.Unlock()
	s.poke()
}

// Audit queues an event.
func (s *successor) Audit(e audit.Event) {
	s.mu.Lock()
	if len(s.events) < maxQueuedEvents {
		s.events = append(s.events, e)
	} else {
		s.dropped++
	}
	s.mu.Unlock()
	s.poke()
}

// drain queues the drain deadline.
func (s *successor) drain(deadline time.Time) {
	s.mu.Lock()
	s.deadline = deadline
	s.mu.Unlock()
	s.poke()
}

func (s *successor) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// tookOver reports whether the new process took the place over, and its
// pid.
func (s *successor) tookOver() (bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.took, s.pid
}

// close ends the channel: the new process sees the old one gone.
func (s *successor) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.conn.Close()
	s.poke()
}

// run waits for the takeover, hands the place over (a.HandOver) and
// answers, then sends what changes until the channel closes.
func (s *successor) run(a *assembly.Gateway, started time.Time) {
	defer close(s.done)
	defer s.conn.Close()
	lr := newLineReader(s.conn)
	m, err := lr.next("takeover")
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			s.log.Warn("upgrade: the new process's takeover", "err", err)
		}
		return
	}
	if m.V > protocolVersion {
		s.log.Info("upgrade: the new process speaks a later handover protocol", "version", m.V)
	}
	s.mu.Lock()
	if s.closed { // the upgrade was given up meanwhile
		s.mu.Unlock()
		return
	}
	s.took, s.pid = true, m.PID
	s.mu.Unlock()
	ids := a.ExportIdentities()
	snap := a.HandOver(m.Member, s)
	reply := message{T: "sessions", PID: os.Getpid(), Started: started, Nodes: a.NodesUp()}
	for _, c := range snap {
		reply.Sessions = append(reply.Sessions, sessionCount{User: c.User, Node: c.Node, N: c.N})
	}
	w := bufio.NewWriter(s.conn)
	enc := json.NewEncoder(w)
	if len(ids) > 0 {
		if err := enc.Encode(message{T: "identities", Identities: ids}); err != nil {
			s.log.Warn("upgrade: cached identities not handed to the new process", "err", err)
		}
	}
	if err := enc.Encode(reply); err != nil || w.Flush() != nil {
		s.log.Warn("upgrade: answering the new process's takeover", "err", err)
		return
	}
	s.log.Info("upgrade: handed the gossip member, the audit spool, the session counts and the cached identities to the new process",
		"pid", m.PID, "sessions", len(snap), "identity_bytes", len(ids))
	go s.followMaintenance(lr, a)
	for range s.wake {
		s.mu.Lock()
		counts, events, dropped, deadline, closed := s.counts, s.events, s.dropped, s.deadline, s.closed
		s.counts, s.events, s.dropped, s.deadline = map[sessionCount]int{}, nil, 0, time.Time{}
		s.mu.Unlock()
		if closed {
			return
		}
		if dropped > 0 {
			s.log.Warn("upgrade: audit events not passed on to the new process (its S3 sink); the audit file has them", "dropped", dropped)
		}
		for k, n := range counts {
			k.N = n
			err = errors.Join(err, enc.Encode(message{T: "set", sessionCount: k}))
		}
		for i := range events {
			err = errors.Join(err, enc.Encode(message{T: "audit", Event: &events[i]}))
		}
		if !deadline.IsZero() {
			err = errors.Join(err, enc.Encode(message{T: "drain", Deadline: deadline}))
		}
		if err = errors.Join(err, w.Flush()); err != nil {
			s.log.Warn("upgrade: the new process is gone; its successor counts only its own sessions", "err", err)
			return
		}
	}
}

// predecessor is the new process's end.
type predecessor struct {
	conn net.Conn
	r    *lineReader
	log  *slog.Logger

	mu       sync.Mutex // mu protects the following
	pid      int
	nodes    []string // up in the old process's view at the takeover
	ids      []byte   // the old process's cached identities, if it sent them
	started  time.Time
	deadline time.Time
	gone     bool
}

func newPredecessor(f *os.File, log *slog.Logger) (*predecessor, error) {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("handover: %w", err)
	}
	return &predecessor{conn: c, r: newLineReader(c), log: log}, nil
}

// takeover asks the old process to give its place up and returns its
// sessions (assembly.Options.Takeover).
func (p *predecessor) takeover(ctx context.Context, member string) ([]cluster.Session, error) {
	if d, ok := ctx.Deadline(); ok {
		p.conn.SetDeadline(d)
		defer p.conn.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { p.conn.SetDeadline(time.Now()) })
	defer stop()
	b, _ := json.Marshal(message{T: "takeover", V: protocolVersion, PID: os.Getpid(), Member: member})
	if _, err := p.conn.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("handover: %w", err)
	}
	var ids []byte
	m, err := p.r.next("identities", "sessions")
	for err == nil && m.T == "identities" {
		if ids == nil {
			ids = m.Identities
		}
		m, err = p.r.next("identities", "sessions")
	}
	if err != nil {
		return nil, fmt.Errorf("handover: waiting for the old process: %w", err)
	}
	p.mu.Lock()
	p.pid, p.started, p.nodes, p.ids = m.PID, m.Started, m.Nodes, ids
	p.mu.Unlock()
	out := make([]cluster.Session, 0, len(m.Sessions))
	for _, s := range m.Sessions {
		out = append(out, cluster.Session{User: s.User, Node: s.Node, N: s.N})
	}
	return out, nil
}

// identities are the old process's cached identities (nil if it sent
// none), for assembly.InheritIdentities.
func (p *predecessor) identities() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids
}

// nodesUp are the nodes the old process routed to at the takeover.
func (p *predecessor) nodesUp() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nodes
}

// follow applies what the old process sends until it is gone; then gone
// is called.
func (p *predecessor) follow(a *assembly.Gateway, gone func()) {
	defer gone()
	defer p.conn.Close()
	for {
		m, err := p.r.next("set", "audit", "drain")
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.log.Warn("upgrade: reading from the previous process", "err", err)
			}
			p.mu.Lock()
			p.gone = true
			p.mu.Unlock()
			a.PredecessorGone()
			p.log.Info("upgrade: the previous process has exited")
			return
		}
		switch m.T {
		case "set":
			a.Inherit(m.User, m.Node, m.N)
		case "audit":
			if m.Event != nil {
				a.RecordFor(*m.Event)
			}
		case "drain":
			p.mu.Lock()
			p.deadline = m.Deadline
			p.mu.Unlock()
		}
	}
}

// status is the old process as the new one knows it; ok false once gone.
func (p *predecessor) status() (pid int, started, deadline time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid, p.started, p.deadline, !p.gone && p.pid != 0
}

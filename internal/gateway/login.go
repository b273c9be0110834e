package gateway

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// Turning a decision into a backend connection: the effects around Decide.
// A proven identity is decided (decide.go), takes a session slot, gets a
// certificate for exactly its own account and is logged in to the first
// target that works; each failed node is audited and the next one tried.

// loginResult is a proven identity logged in to a node, waiting for the
// SSH handshake with the client to finish.
type loginResult struct {
	typed   string // user name as the client sent it
	ident   directory.Identity
	policy  policy.Decision
	method  string
	backend *backend
	slot    func() // releases the session slot
}

func (r *loginResult) close() {
	r.backend.close()
	r.slot()
}

// decide runs Decide over the gateway's current view. prefer is a node a
// connection is already open to.
func (g *Gateway) decide(id directory.Identity, explicit, prefer string) (Input, Outcome) {
	in := Input{Ident: id, Explicit: explicit, Policy: g.cfg.Policy, Principals: g.principals, Route: g.cfg.Route,
		View: g.router.View(id.Name), MaxAttempts: g.cfg.Backend.MaxAttempts, Prefer: prefer, Now: time.Now()}
	in.View.UserSessions = g.userSessions(id.Name)
	g.rndMu.Lock()
	defer g.rndMu.Unlock()
	in.Rand = g.rnd
	return in, Decide(in)
}

// guess is the node a login will most likely use, before its user is
// known: the least-loaded pick among every pool.
func (g *Gateway) guess() (Target, bool) {
	v := g.router.View("")
	rr := route.Request{Pools: allPools(v.Nodes), Now: time.Now()}
	g.rndMu.Lock()
	d, err := route.Decide(rr, v.Nodes, g.cfg.Route, g.rnd)
	g.rndMu.Unlock()
	if err != nil || len(d.Order) == 0 {
		return Target{}, false
	}
	for _, n := range v.Nodes {
		if n.Name == d.Order[0] {
			return Target{Name: n.Name, Addr: n.Addr, Pool: n.Pool}, true
		}
	}
	return Target{}, false
}

// preferred is the node the preconnection goes to, or "".
func (c *conn) preferred() string {
	if pc := c.preconn(); pc != nil {
		return pc.target.Name
	}
	return ""
}

// speculate starts the backend dial for a key the user may use, before the
// client proved it holds it, if the speculative budget allows. Nothing is
// revealed to the client: a refusal waits for the proof.
func (c *conn) speculate(a attempt) {
	if c.spec != nil {
		return // already dialling for this user (newRequest aborts others)
	}
	_, out := c.g.decide(a.ident, a.node, c.preferred())
	if out.Refusal != nil || len(out.Targets) == 0 {
		return
	}
	t := out.Targets[0]
	release, ok := c.g.spec.acquire(t.Name)
	if !ok {
		return
	}
	c.spec = &speculation{typed: a.typed, principal: a.ident.Name, release: release,
		dial: startDial(c.ctx, t, c.dialParams(a.ident.Name), c.takePreconn(t))}
}

func (c *conn) dialParams(principal string) dialParams {
	return dialParams{
		principal: principal,
		timeout:   c.g.cfg.Backend.ConnectTimeout,
		hostKeys:  c.g.nodeKeys,
		version:   "SSH-2.0-frontdoor",
	}
}

// login turns a verified attempt into a backend login, or a refusal the
// user is told about. On success the returned Permissions name the
// account; handle checks them against the result once the handshake ends.
func (c *conn) login(a attempt) (*ssh.Permissions, error) {
	g := c.g
	prefer := c.preferred()
	if s := c.spec; s != nil && s.typed == a.typed && s.principal == a.ident.Name {
		prefer = s.dial.target.Name // its key exchange is under way
	}
	_, out := g.decide(a.ident, a.node, prefer)
	a.rule = out.Policy.Rule
	if r := out.Refusal; r != nil {
		c.auditAuth(a, "denied", r.Reason)
		return nil, c.fatalf(r.UserMsg)
	}
	slot, ok := g.reserveSession(a.ident.Name, out.Policy.MaxSessions)
	if !ok {
		c.auditAuth(a, "denied", "session limit reached")
		return nil, c.fatalf(fmt.Sprintf("you already have %d sessions open, the most your access allows; close one and try again", out.Policy.MaxSessions))
	}
	var errs []string
	for i, t := range out.Targets {
		signer, err := g.ca.Sign(ca.Login{Principal: a.ident.Name, User: a.ident.Name, Session: c.id, Rights: out.Policy.Rights})
		if err != nil {
			slot()
			c.auditAuth(a, "fail", "certificate: "+err.Error())
			return nil, c.fatalf("internal error; the administrators have the details")
		}
		b, err := c.dial(a, t).finish(c.ctx, signer)
		if err == nil {
			c.result = &loginResult{typed: a.typed, ident: a.ident, policy: out.Policy, method: a.method, backend: b, slot: slot}
			c.auditAuth(a, "ok", "")
			return &ssh.Permissions{Extensions: map[string]string{
				extPrincipal: a.ident.Name, extTyped: a.typed, extSession: c.id}}, nil
		}
		g.router.NodeFailed(t.Name, err)
		g.metrics.backendFailures.WithLabelValues(t.Name, stageOf(err)).Inc()
		reason := backendReason(err)
		errs = append(errs, reason)
		g.audit.Record(audit.Event{Type: audit.TypeBackend, Gateway: g.cfg.Gateway.Name, Session: c.id,
			User: a.ident.Name, Src: c.src, Node: t.Name, Result: "fail", Reason: reason})
		g.log.Warn("login node failed", "session", c.id, "user", a.ident.Name, "node", t.Name, "attempt", i+1, "err", err)
	}
	slot()
	c.auditAuth(a, "fail", "no login node: "+strings.Join(errs, "; "))
	if a.node != "" {
		return nil, c.fatalf(fmt.Sprintf("login node %s is not available right now; try again shortly, or log in without +%s", a.node, a.node))
	}
	return nil, c.fatalf("no login node is available right now; try again shortly")
}

// dial returns a backend dial to t for a's account: the one started ahead
// if it was started for this very user name, account and node, else a new
// one (over the preconnection when it goes to t).
func (c *conn) dial(a attempt, t Target) *pendingDial {
	if s := c.spec; s != nil {
		c.spec = nil
		if s.typed == a.typed && s.principal == a.ident.Name && s.dial.target == t {
			s.release() // no longer speculative: the user is proven
			return s.dial
		}
		s.abort()
	}
	return startDial(c.ctx, t, c.dialParams(a.ident.Name), c.takePreconn(t))
}

func stageOf(err error) string {
	var be *BackendError
	if errors.As(err, &be) {
		return be.Stage
	}
	return "other"
}

// backendReason is the audit reason of a backend failure.
func backendReason(err error) string {
	var be *BackendError
	if !errors.As(err, &be) {
		return err.Error()
	}
	switch be.Stage {
	case StageHostKey:
		return fmt.Sprintf("node %s: host key verification failed: %v", be.Node, errors.Unwrap(be.Err))
	case StageAuth:
		return fmt.Sprintf("node %s: refused the login certificate (is the user CA in TrustedUserCAKeys and the user known there?): %v", be.Node, be.Err)
	}
	return be.Error()
}

// reserveSession takes one of the user's session slots (max 0: no cap).
// Sessions being set up count like live ones, so two logins racing for the
// last slot cannot both get it. The returned func releases the slot; a
// session that starts hands it over to the live count (see relay).
func (g *Gateway) reserveSession(user string, max int) (release func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if max > 0 && g.userSessionsLocked(user) >= max {
		return nil, false
	}
	g.settingUp[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.settingUp[user]--; g.settingUp[user] <= 0 {
				delete(g.settingUp, user)
			}
		})
	}, true
}

// userSessions counts the user's sessions: live and being set up through
// this gateway, live through the other gateways of the cluster.
func (g *Gateway) userSessions(user string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.userSessionsLocked(user)
}

func (g *Gateway) userSessionsLocked(user string) int {
	n := g.settingUp[user]
	if g.cluster != nil {
		n += g.cluster.SessionsElsewhere(user)
	}
	for _, s := range g.sessions {
		if s.User == user {
			n++
		}
	}
	return n
}

// specBudget bounds node connections opened before a client proved
// anything, in all and per node.
type specBudget struct {
	max, perNode int

	mu       sync.Mutex // mu protects the following
	total    int
	perNodeN map[string]int
}

func newSpecBudget(max, perNode int) *specBudget {
	return &specBudget{max: max, perNode: perNode, perNodeN: map[string]int{}}
}

// acquire takes a place for a speculative connection to node; the release
// func returns it (once; extra calls are ignored).
func (b *specBudget) acquire(node string) (release func(), ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total >= b.max || b.perNodeN[node] >= b.perNode {
		return nil, false
	}
	b.total++
	b.perNodeN[node]++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.total--
			if b.perNodeN[node]--; b.perNodeN[node] <= 0 {
				delete(b.perNodeN, node)
			}
		})
	}, true
}

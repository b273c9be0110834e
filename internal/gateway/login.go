package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// Turning a decision into a backend connection: the effects around
// login.Decide. A proven identity is decided, takes a session slot, gets a
// certificate for exactly its own account and is logged in to the first
// target that works; each failed node is audited and the next one tried.

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
		return // already dialling for this user (a request for another name aborts it)
	}
	_, out := c.srv.decide(a.ident, a.node, c.preferred())
	if out.Refusal != nil || len(out.Targets) == 0 {
		return
	}
	t := out.Targets[0]
	release, ok := c.srv.speculative(t.Name)
	if !ok {
		return
	}
	c.spec = &speculation{typed: a.typed, principal: a.ident.Name, release: release,
		dial: startDial(c.ctx, t, c.dialParams(a.ident.Name), c.takePreconn(t))}
}

func (c *conn) dialParams(principal string) dialParams {
	return dialParams{
		principal: principal,
		timeout:   c.set.cfg.Backend.ConnectTimeout,
		hostKeys:  c.set.nodeKeys,
		version:   ServerVersion,
	}
}

// login turns a verified attempt into a backend login, or a refusal the
// user is told about. On success the returned Permissions name the
// account; handle checks them against the result once the handshake ends.
func (c *conn) login(a attempt) (*ssh.Permissions, error) {
	prefer := c.preferred()
	if s := c.spec; s != nil && s.typed == a.typed && s.principal == a.ident.Name {
		prefer = s.dial.target.Name // its key exchange is under way
	}
	_, out := c.srv.decide(a.ident, a.node, prefer)
	a.rule = out.Policy.Rule
	if r := out.Refusal; r != nil {
		c.auditAuth(a, audit.ResultDenied, r.Reason)
		return nil, c.fatalf(r.UserMsg)
	}
	slot, ok := c.srv.reserveSession(a.ident.Name, out.Policy.MaxSessions)
	if !ok {
		// Another login took the last slot since the decision.
		r := login.CheckSessionCap(out.Policy.MaxSessions, out.Policy.MaxSessions)
		c.auditAuth(a, audit.ResultDenied, r.Reason)
		return nil, c.fatalf(r.UserMsg)
	}
	// Each node connection gets its own certificate, signed when the
	// connection's local address is known: its source-address.
	mint := func(ctx context.Context, local netip.Addr) (ssh.Signer, error) {
		return c.set.ca.Sign(ctx, ca.Login{Principal: a.ident.Name, User: a.ident.Name, Session: c.id,
			Rights: out.Policy.Rights, Source: local})
	}
	var errs []string
	for _, t := range out.Targets {
		b, err := c.dial(a, t).finish(c.ctx, mint)
		if stageOf(err) == StageCert {
			// No certificate: no node would do better.
			slot()
			c.auditAuth(a, audit.ResultError, backendReason(err))
			return nil, c.fatalf(certMessage(err))
		}
		if err == nil {
			c.result = &loginResult{typed: a.typed, ident: a.ident, policy: out.Policy, method: a.method, backend: b, slot: slot}
			c.auditAuth(a, audit.ResultOK, "")
			return &ssh.Permissions{Extensions: map[string]string{
				extPrincipal: a.ident.Name, extTyped: a.typed, extSession: c.id}}, nil
		}
		c.srv.nodeFailed(t, a.ident.Name, err)
		reason := backendReason(err)
		errs = append(errs, reason)
		c.srv.record(audit.Event{Type: audit.TypeBackend, Session: c.id,
			User: a.ident.Name, Src: c.src, Node: t.Name, Result: "fail", Reason: reason})
	}
	slot()
	c.auditAuth(a, audit.ResultError, "no login node: "+strings.Join(errs, "; "))
	return nil, c.fatalf(login.NoNodeMessage(a.node))
}

// dial returns a backend dial to t for a's account: the one started ahead
// if it was started for this very user name, account and node, else a new
// one (over the preconnection when it goes to t).
func (c *conn) dial(a attempt, t node.Node) *pendingDial {
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

// nodeLevel reports whether a backend failure says something about the
// node for every user: it did not answer, or failed the key exchange or
// its host key check. A refused certificate concerns the user it named (an
// account the node does not know, say) until proven otherwise; a
// certificate the user CA did not sign concerns no node.
func nodeLevel(err error) bool {
	s := stageOf(err)
	return s != StageAuth && s != StageCert
}

// msgCAUnavailable is what a user is told when the user CA does not sign
// (a KMS outage): nothing they can fix but retrying.
const msgCAUnavailable = "cannot sign your login right now; please try again in a minute"

// certMessage is the user's message for a certificate that was not
// minted.
func certMessage(err error) string {
	if errors.Is(err, ca.ErrUnavailable) {
		return msgCAUnavailable
	}
	return login.MsgInternal
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
		return fmt.Sprintf("node %s: refused the login certificate (is this gateway's user CA in its TrustedUserCAKeys and not "+
			"revoked, the user known there, and this gateway's address as the node sees it the certificate's source-address?): %v", be.Node, be.Err)
	case StageCert:
		return fmt.Sprintf("certificate for node %s: %v", be.Node, be.Err)
	}
	return be.Error()
}

package assembly

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
)

// Handing the gateway's place to the process that replaces it (an
// upgrade), and taking it back if that process fails before it is ready.
// Three things have exactly one holder at a time:
//
//   - the gossip member, its port and its name. The old process stops its
//     member without a goodbye (cluster.Crash): the peers keep the
//     gateway alive, and the new process, binding the same port under the
//     same name, answers their probes and refutes any suspicion. It starts
//     with the old process's sessions (cluster.Options.Sessions), so its
//     first exchange re-asserts them rather than clearing them as a
//     crashed run's: another gateway counts them toward the user's cap and
//     the node's load all along. (Handing the sockets over to a custom
//     memberlist transport was the alternative; the member would still
//     have to stop in one process and start in the other, for the same
//     effect and a transport of our own to keep.)
//   - the session counts. From the handover the old process sends every
//     change of its counts to the new one (inventory.Router.HandOver),
//     which publishes them with its own as the gateway's (Inherit) until
//     the old process exits (ForgetInherited).
//   - the audit spool of the S3 sink, which two processes would corrupt.
//     The old process closes its sink first (its sealed batches wait in
//     the spool for the new one) and sends the events it still records —
//     its sessions' ends — to the new one, which ships them (RecordFor);
//     its audit file goes on getting them as before.
//
// The new process learns the nodes' health from their agents' next
// heartbeats (the gateways' pool does not carry it): it waits until it sees
// up the nodes the old process routed to (NodesUp, WaitNodesUp) before it
// takes logins, while the old process serves on.
//
// A successor that fails after it took the place over (it died, or never
// became ready) leaves the old process to take it back (Resume): a new
// gossip member with the counts as they are, the sink reopened. That
// member, too, has no node health until the next heartbeat: for about
// heartbeat_interval a login there may find no node.

// identityCache is a directory with a cache an upgrade hands over (AD:
// internal/directory/ad/handover.go).
type identityCache interface {
	ExportCache() []byte
	ImportCache(blob []byte) (int, error)
}

// ExportIdentities returns the directory's cached identities for the
// process taking this one's place (nil when the directory keeps none).
func (a *Gateway) ExportIdentities() []byte {
	if c, ok := a.Directory().(identityCache); ok {
		return c.ExportCache()
	}
	return nil
}

// InheritIdentities adds the identities the process this one took over
// from had cached (ExportIdentities there) to the directory's cache, so
// its users' first logins here need no lookup. A blob that does not
// validate changes nothing and is logged.
func (a *Gateway) InheritIdentities(blob []byte) {
	if len(blob) == 0 {
		return
	}
	c, ok := a.Directory().(identityCache)
	if !ok {
		a.log.Info("upgrade: the previous process handed over cached identities; this directory keeps none")
		return
	}
	n, err := c.ImportCache(blob)
	if err != nil {
		a.log.Warn("upgrade: cached identities from the previous process not taken", "err", err)
		return
	}
	a.log.Info("upgrade: took over the previous process's cached identities", "identities", n, "bytes", len(blob))
}

// Successor is the process taking this one's place, as HandOver talks to
// it. Its methods are called with locks held: they queue, never block.
type Successor interface {
	// Sessions says this process relays n sessions of user on node now.
	Sessions(user, node string, n int)
	// Audit passes on an audit event for the successor's S3 sink.
	Audit(e audit.Event)
}

// forward is the audit sink of a process that handed its place over.
type forward struct{ to Successor }

func (f forward) Record(e audit.Event) { f.to.Audit(e) }

// HandOver gives the gateway's place to to, whose gossip member is called
// member ("" without gossip), and returns the session counts as they are:
// from now on every change of them, and every audit event, goes to it.
func (a *Gateway) HandOver(member string, to Successor) []cluster.Session {
	a.change.Lock()
	defer a.change.Unlock()
	snap := a.Router.HandOver(to.Sessions)
	a.Audit.SetSinks(forward{to})
	if s := a.auditS3.Swap(nil); s != nil {
		if err := a.closeAuditS3(s, 5*time.Second); err != nil {
			a.log.Info("audit s3: batches left in the spool for the new process", "err", err)
		}
	}
	if cl := a.cluster.Load(); cl != nil {
		if member == cl.Name() {
			cl.Crash() // the successor answers in its name
		} else {
			cl.Close()
		}
	}
	a.handedOver = true
	return snap
}

// Resume takes the gateway's place back after a HandOver whose successor
// failed: a new gossip member publishing the counts as they are now, the
// S3 sink reopened on the spool.
func (a *Gateway) Resume(ctx context.Context) error {
	a.change.Lock()
	defer a.change.Unlock()
	if !a.handedOver {
		return nil
	}
	a.handedOver = false
	cfg := a.Config()
	var errs []error
	a.Audit.SetSinks()
	if cfg.Audit.S3 != nil {
		s, err := a.newAuditS3(ctx, cfg)
		if err != nil {
			errs = append(errs, err)
		} else {
			a.auditS3.Store(s)
			a.Audit.SetSinks(s)
		}
	}
	if cfg.Cluster == nil {
		a.Router.Resume(nil, nil)
		return errors.Join(errs...)
	}
	counts := a.Router.Counts()
	cl, err := a.startCluster(ctx, *cfg.Cluster, counts)
	if err != nil {
		a.Router.Resume(nil, nil) // stop sending to the successor, at least
		return errors.Join(append(errs, err)...)
	}
	a.cluster.Store(cl)
	a.Router.Resume(cl, counts)
	return errors.Join(errs...)
}

// Inherit records that the process this one took over from relays n
// sessions of user on node now.
func (a *Gateway) Inherit(user, node string, n int) { a.Router.Inherit(user, node, n) }

// PredecessorGone forgets the sessions of the process this one took over
// from: it has exited, and they with it.
func (a *Gateway) PredecessorGone() { a.Router.ForgetInherited() }

// RecordFor ships an audit event of the process this one took over from
// (its audit file has it already).
func (a *Gateway) RecordFor(e audit.Event) {
	if s := a.auditS3.Load(); s != nil {
		s.Record(e)
	}
}

// NodesUp names the login nodes this gateway would route to now (alive,
// sshd up): what a process taking over should see before it takes logins.
func (a *Gateway) NodesUp() []string {
	var out []string
	for _, n := range a.Router.Nodes() {
		if n.Alive && n.SSHDUp {
			out = append(out, n.Name)
		}
	}
	return out
}

// WaitNodesUp waits until every node of names is up in this gateway's view
// (NodesUp), or ctx ends: a process that took over starts with no node
// health until the agents' next heartbeat, and must not take logins
// before it sees the nodes its predecessor routed to.
func (a *Gateway) WaitNodesUp(ctx context.Context, names []string) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		up := map[string]bool{}
		for _, n := range a.NodesUp() {
			up[n] = true
		}
		var missing []string
		for _, n := range names {
			if !up[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes not up yet: %v: %w", missing, ctx.Err())
		case <-t.C:
		}
	}
}

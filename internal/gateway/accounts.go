package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/login"
)

// What admins do to accounts, as it reaches this gateway's sessions and
// logins: locks (lock.go) enforced on live sessions, second-factor
// unlocks (mfa.go) revoked. Nothing in the gateway calls these; the
// assembly and the connections' server interface do.

// EnforceLocks closes the live sessions of accounts locked with
// EndSessions, until ctx ends: at once for a lock made on any gateway
// (within lockCheckEvery of its arrival), and for a session that began
// while the lock was on its way.
func (g *Gateway) EnforceLocks(ctx context.Context) {
	if g.locks == nil {
		return
	}
	t := time.NewTicker(lockCheckEvery)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	closing := map[string]bool{} // session IDs being closed
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		live := map[string]bool{}
		for _, s := range g.sessions.all() {
			live[s.ID] = true
			if closing[s.ID] {
				continue
			}
			l, ok := g.locks.Locked(s.User)
			if !ok || !l.EndSessions {
				continue
			}
			closing[s.ID] = true
			g.log.Info("closing session: account locked", "session", s.ID, "user", s.User, "node", s.Node,
				"src", s.Src, "reason", lockReason(l))
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.relay.Close(login.LockedClosing(l.Message))
			}()
		}
		for id := range closing {
			if !live[id] {
				delete(closing, id)
			}
		}
	}
}

// The server interface's second-factor part (conn.go).

func (g *Gateway) mfaUnlocked(account, fp string) (login.Unlock, bool) {
	return g.unlocks.MFAUnlocked(account, fp)
}

func (g *Gateway) mfaUnlock(account, fp string, u login.Unlock) error {
	return g.unlocks.MFAUnlock(account, fp, u)
}

func (g *Gateway) mfaGate(ctx context.Context, srcKey, account string, verify func(context.Context) (bool, error)) (string, error) {
	return g.pw.Load().mfaGate(ctx, srcKey, account, verify)
}

// MFARevoke ends every second-factor unlock of user's account (on every
// gateway with a cluster): its next login is asked again. The name is
// looked up, so any form of it (AD: HPC\alice) names the account; a name
// the directory does not know is revoked as given.
func (g *Gateway) MFARevoke(user string) error {
	ctx, cancel := context.WithTimeout(g.closing, 10*time.Second)
	defer cancel()
	account := user
	if id, err := g.set.Load().dir.Lookup(ctx, user); err == nil {
		account = id.Name
	}
	return g.unlocks.MFARevoke(account)
}

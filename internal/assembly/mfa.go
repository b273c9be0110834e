package assembly

import (
	"errors"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
)

// unlocks are the second-factor unlocks through the current gossip
// member: shared by every gateway (internal/cluster/mfa.go).
type unlocks struct{ a *Gateway }

var (
	_ gateway.Unlocks  = unlocks{}
	_ admin.MFARevoker = (*Gateway)(nil)
)

var errNoMember = errors.New("no gossip member")

func (u unlocks) MFAUnlocked(account, fp string) (login.Unlock, bool) {
	cl := u.a.cluster.Load()
	if cl == nil {
		return login.Unlock{}, false
	}
	x, ok := cl.MFAUnlocked(account, fp)
	return login.Unlock(x), ok
}

func (u unlocks) MFAUnlock(account, fp string, x login.Unlock) error {
	cl := u.a.cluster.Load()
	if cl == nil {
		return errNoMember
	}
	return cl.MFAUnlock(account, fp, cluster.Unlock(x))
}

func (u unlocks) MFARevoke(account string) error {
	cl := u.a.cluster.Load()
	if cl == nil {
		return errNoMember
	}
	return cl.MFARevoke(account)
}

// MFARevoke ends user's second-factor unlocks on every gateway (`frontdoor
// mfa revoke USER`). The name is resolved in the directory, so any form
// the user may type (AD: HPC\alice, alice@realm) revokes the account.
func (a *Gateway) MFARevoke(user string) error {
	return a.SSH.MFARevoke(user)
}

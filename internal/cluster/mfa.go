package cluster

import (
	"maps"
	"slices"
	"time"
)

// Second-factor unlocks, shared by every gateway: a user who answered the
// second factor through one gateway is not asked again through another
// while the unlock lasts.
//
// One entry per account, m/USER, holds the unlocks of its keys by
// fingerprint. Keeping them together makes `frontdoor mfa revoke USER` one
// write (a tombstone) that no unlock of another key can outlive. The entry
// is gateway state: sealed among the gateways like bans, never written by
// an agent. Two gateways unlocking two keys of one account at the same
// moment keep one of the two (last writer wins); the other key is asked
// again next time, which is the safe side.
//
// The entry expires when its last unlock does. Whether an unlock still
// counts (its rule, the window as configured now) is the login decision's
// business (login.SecondFactor); this package only keeps and expires them.
// The value (mfaVal) and its expiry sit with the other kinds' in state.go.

// Unlock is one key's unlock.
type Unlock struct {
	At    time.Time // when the second factor was proven
	Until time.Time // when the unlock ends
	Rule  string    // the policy rule that asked for it
}

// maxUnlockKeys bounds the keys one account holds unlocks for; the ones
// ending first make room.
const maxUnlockKeys = 16

// MFAUnlocked returns the unlock of account's key fp, if one is live.
func (c *Cluster) MFAUnlocked(account, fp string) (Unlock, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.st.live(kindMFA + "/" + account)
	if e == nil {
		return Unlock{}, false
	}
	v, ok := decode[mfaVal](e)
	if !ok {
		return Unlock{}, false
	}
	u, ok := v.Keys[fp]
	if !ok || !now.Before(u.Until) {
		return Unlock{}, false
	}
	return Unlock(u), true
}

// MFAUnlock records account's key fp as unlocked, cluster-wide.
func (c *Cluster) MFAUnlock(account, fp string, u Unlock) error {
	now := c.now()
	c.mu.Lock()
	keys := map[string]unlockVal{}
	if e := c.st.live(kindMFA + "/" + account); e != nil {
		if v, ok := decode[mfaVal](e); ok {
			for k, x := range v.Keys {
				if now.Before(x.Until) {
					keys[k] = x
				}
			}
		}
	}
	c.mu.Unlock()
	keys[fp] = unlockVal(u)
	for len(keys) > maxUnlockKeys {
		first := slices.MinFunc(slices.Collect(maps.Keys(keys)), func(a, b string) int { return keys[a].Until.Compare(keys[b].Until) })
		delete(keys, first)
	}
	return c.write(kindMFA+"/"+account, mfaVal{Keys: keys})
}

// MFARevoke ends every unlock of account, cluster-wide.
func (c *Cluster) MFARevoke(account string) error {
	return c.write(kindMFA+"/"+account, nil)
}

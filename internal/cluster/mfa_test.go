package cluster

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// An unlock written by one gateway is seen by the other; a revoke through
// either ends every unlock of the account; an agent cannot write one.
func TestMFAUnlocksShared(t *testing.T) {
	gw1 := start(t, gatewayConfig("gw1"), RoleGateway)
	gw2 := start(t, gatewayConfig("gw2", gw1), RoleGateway)
	now := time.Now()
	u := Unlock{At: now, Until: now.Add(time.Hour), Rule: "staff"}
	if err := gw1.MFAUnlock("alice", "SHA256:k1", u); err != nil {
		t.Fatal(err)
	}
	if err := gw1.MFAUnlock("alice", "SHA256:k2/with+slash", u); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		for _, fp := range []string{"SHA256:k1", "SHA256:k2/with+slash"} {
			got, ok := gw2.MFAUnlocked("alice", fp)
			if !ok || got.Rule != "staff" || !got.Until.Equal(u.Until) {
				return fmt.Errorf("gw2 sees %s: %+v %v", fp, got, ok)
			}
		}
		return nil
	})
	if _, ok := gw2.MFAUnlocked("alice", "SHA256:other"); ok {
		t.Error("a key never unlocked is unlocked")
	}
	if _, ok := gw2.MFAUnlocked("bob", "SHA256:k1"); ok {
		t.Error("another account's unlock counts")
	}
	if err := gw2.MFARevoke("alice"); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() error {
		if _, ok := gw1.MFAUnlocked("alice", "SHA256:k1"); ok {
			return errors.New("gw1 still unlocked after revoke")
		}
		return nil
	})
}

func TestMFAUnlockEnds(t *testing.T) {
	gw := start(t, gatewayConfig("gw1"), RoleGateway)
	now := time.Now()
	gw.MFAUnlock("alice", "SHA256:old", Unlock{At: now.Add(-2 * time.Hour), Until: now.Add(-time.Hour), Rule: "r"})
	if _, ok := gw.MFAUnlocked("alice", "SHA256:old"); ok {
		t.Error("an ended unlock counts")
	}
	for i := range maxUnlockKeys + 4 {
		gw.MFAUnlock("alice", fmt.Sprintf("SHA256:k%d", i), Unlock{At: now, Until: now.Add(time.Duration(i+1) * time.Minute), Rule: "r"})
	}
	if _, ok := gw.MFAUnlocked("alice", "SHA256:k0"); ok {
		t.Error("more than maxUnlockKeys keys kept: the one ending first should have made room")
	}
	if _, ok := gw.MFAUnlocked("alice", fmt.Sprintf("SHA256:k%d", maxUnlockKeys+3)); !ok {
		t.Error("the newest unlock was dropped")
	}
}

package forge

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// TestDeadIsTaken: a forged "dead" is taken by a real memberlist pool of
// the key and label, which then drops a live member. (The attack the
// cluster's tests replay against frontdoor; if memberlist stopped taking
// it, those tests would prove nothing.)
func TestDeadIsTaken(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	const label = "forge-test"
	start := func(name string) *memberlist.Memberlist {
		ml, err := NewMember(name, label, key)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ml.Shutdown() })
		return ml
	}
	a, b := start("a"), start("b")
	if _, err := b.Join([]string{a.LocalNode().Address()}); err != nil {
		t.Fatal(err)
	}
	pkt, err := Dead(key, label, "b", "rogue", math.MaxUint32)
	if err != nil {
		t.Fatal(err)
	}
	wrongKey, _ := Dead([]byte("fedcba9876543210fedcba9876543210"), label, "b", "rogue", math.MaxUint32)
	deadline := time.Now().Add(20 * time.Second)
	for {
		alive := false
		for _, n := range a.Members() {
			alive = alive || n.Name == "b"
		}
		if !alive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a still lists b after forged dead messages")
		}
		// Under the wrong key nothing happens; under the pool's key a
		// lists b dead.
		for _, p := range [][]byte{wrongKey, pkt} {
			if err := Send(a.LocalNode().Address(), p); err != nil {
				t.Fatal(fmt.Errorf("send: %w", err))
			}
		}
		time.Sleep(100 * time.Millisecond) // re-send pace, not a wait for an event: the loop polls
	}
}

package adversarial_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
)

// A session cap holds against logins racing for the last slot (issue 8,
// part 6: the cap was checked before the session was registered). With
// max_sessions 1, racers connections for bob, each from its own source,
// send their signed request at the same moment and stay open: exactly one
// logs in, every other is told about the cap.
func TestSessionCapRace(t *testing.T) {
	const racers = 10
	g := newGateway(t, gwOptions{Rules: []policy.Rule{{Name: "capped", Groups: []string{group}, Pools: []string{pool}, MaxSessions: 1}}})
	conns := make([]*rawssh.RawConn, racers)
	reqs := make([]rawssh.AuthRequest, racers)
	for i := range conns {
		conns[i] = dialRaw(t, g, fmt.Sprintf("127.0.0.%d", 140+i))
		userauth(t, conns[i])
		expect(t, "query", send(t, conns[i], "query", rawssh.PublicKeyQuery(bobName, bob.pub, "")), rawssh.ReplyPKOK)
		reqs[i] = signed(t, conns[i], bobName, bob)
	}
	start := make(chan struct{})
	replies := make([]*rawssh.AuthReply, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i, rc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i], errs[i] = rc.Auth(reqs[i])
		}()
	}
	close(start)
	wg.Wait()
	var ok, capped int
	for i, r := range replies {
		switch {
		case errs[i] != nil:
			t.Errorf("racer %d: %v", i, errs[i])
		case r.Kind == rawssh.ReplySuccess:
			ok++
		case r.Kind == rawssh.ReplyFailure && len(r.Banners) == 1 && strings.Contains(r.Banners[0], "sessions open"):
			capped++
		default:
			t.Errorf("racer %d: %s %q", i, r.Kind, r.Banners)
		}
	}
	t.Logf("session cap 1: %d logins raced, %d got in, %d told about the cap", racers, ok, capped)
	if ok != 1 {
		t.Errorf("%d of %d racing logins got in under max_sessions 1", ok, racers)
	}
}

package ade2e_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// hangingDC is a "domain controller" that accepts TCP connections and never
// says a word, like a DC whose LDAP service hangs. It does not touch the
// package's real DC, so this test runs in parallel with the others.
func hangingDC(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "ldaps://" + ln.Addr().String()
}

// TestFailoverFromHangingDC: the first configured DC hangs and the second
// is the real one. The first login pays at most one DC timeout before the
// real DC answers; later logins, key and password, go straight to the DC
// that answered. A refused (dead) first DC costs nothing noticeable.
//
// The first login is of a user the gateway has never seen, so its key is
// accepted only if the answer comes within gateway.key_refusal_delay (a
// later answer would tell strangers which names exist): this gateway sets
// it above the DC timeout, as an operator who wants first logins to ride
// out a hanging DC does. With the default (500ms) that first key is refused
// while the lookup goes on, and the user's next login finds it cached.
func TestFailoverFromHangingDC(t *testing.T) {
	t.Parallel()
	dcs := func(first string) gwOptions {
		return gwOptions{Edit: func(c *config.Config) {
			c.Directory.AD.URLs, c.Directory.AD.Timeout = []string{first, dc.URL()}, adTimeout
			c.Gateway.KeyRefusalDelay = adTimeout + slack
		}}
	}
	hung := newGateway(t, dcs(hangingDC(t)))
	dead := newGateway(t, dcs("ldaps://127.0.2.254:636"))
	u := users[aliceName]

	// The reference: the slower of two logins on a gateway whose first DC
	// is merely refused.
	ref := max(timedLogin(t, dead.keyClient(u), aliceName), timedLogin(t, dead.keyClient(u), aliceName))
	first := timedLogin(t, hung.keyClient(u), aliceName)
	if bound := ref + adTimeout + slack; first > bound {
		t.Errorf("first login with a hanging first DC took %v, want < %v (one %v timeout)", first.Round(time.Millisecond), bound, adTimeout)
	}
	mustLogin(t, hung.passwordClient(t, "password", pw(aliceName)), aliceName, aliceName)
	later := timedLogin(t, hung.keyClient(u), aliceName)
	// Later AD requests go straight to the DC that answered: a lookup of a
	// user this gateway never fetched (timed in-process) costs no timeout.
	lstart := time.Now()
	if _, err := hung.dir.Lookup(t.Context(), bobName); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(lstart); took >= adTimeout {
		t.Errorf("a later lookup still waited for the hanging DC: %v, want < %v", took.Round(time.Millisecond), adTimeout)
	}
	mustLogin(t, dead.passwordClient(t, "password", pw(aliceName)), aliceName, aliceName)
	t.Logf("refused first DC: %v; hanging first DC: first login %v, later %v", ref.Round(time.Millisecond), first.Round(time.Millisecond), later.Round(time.Millisecond))
	if hung.dir.Offline() || dead.dir.Offline() {
		t.Error("a gateway went offline although a DC answered")
	}
}

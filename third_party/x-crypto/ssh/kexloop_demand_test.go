// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// kexLoops counts the goroutines running kexLoop.
func kexLoops() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "ssh.(*handshakeTransport).kexLoop(")
}

// waitKexLoops polls until at most n kexLoop goroutines run.
func waitKexLoops(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for kexLoops() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d kexLoop goroutines, want at most %d", what, kexLoops(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestKexLoopOnDemand checks that an idle connection holds no kexLoop
// goroutine, that a key exchange either side starts runs one until it is
// done, and that Close returns for a transport with no kexLoop running.
func TestKexLoopOnDemand(t *testing.T) {
	// Other tests may leave transports behind, in a key exchange.
	base := kexLoops()
	checker := &syncChecker{waitCall: make(chan int, 10), called: make(chan int, 10)}
	checker.waitCall <- 1
	trC, trS, err := handshakePair(&ClientConfig{HostKeyCallback: checker.Check}, "addr", false)
	if err != nil {
		t.Fatalf("handshakePair: %v", err)
	}
	<-checker.called
	readC, readS := readUntilError(trC), readUntilError(trS)
	waitKexLoops(t, base, "after the first key exchange")

	for i, tr := range []*handshakeTransport{trC, trS, trC} {
		checker.waitCall <- 1
		tr.requestKeyExchange()
		select {
		case <-checker.called: // the host key check runs inside the exchange
		case <-time.After(10 * time.Second):
			t.Fatalf("key exchange %d did not run", i+2)
		}
		// Data still flows both ways after it.
		if err := trC.writePacket([]byte{msgRequestSuccess}); err != nil {
			t.Fatal(err)
		}
		if err := trS.writePacket([]byte{msgRequestSuccess}); err != nil {
			t.Fatal(err)
		}
		waitKexLoops(t, base, "after a key exchange")
	}
	if trC.getSessionID() == nil || string(trC.getSessionID()) != string(trS.getSessionID()) {
		t.Fatal("session IDs differ after rekeying")
	}

	closed := make(chan struct{})
	go func() {
		trC.Close()
		trS.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with no kexLoop running")
	}
	<-readC
	<-readS
	waitKexLoops(t, base, "after Close")
}

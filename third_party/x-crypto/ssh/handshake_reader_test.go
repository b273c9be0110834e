// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestFailedHandshakeStopsKexLoop checks that a connection whose
// authentication fails leaves no goroutine behind on either side: with no
// read loop, nothing reads after the failure, and the key exchange loop
// must be stopped by the failing call itself. The client gives up first
// (the server would allow more attempts), or the server does (one attempt).
func TestFailedHandshakeStopsKexLoop(t *testing.T) {
	for _, tries := range []int{0, 1} {
		testFailedHandshakeStopsKexLoop(t, tries)
	}
}

func testFailedHandshakeStopsKexLoop(t *testing.T, maxAuthTries int) {
	serverConf := &ServerConfig{
		PasswordCallback: func(ConnMetadata, []byte) (*Permissions, error) {
			return nil, errors.New("wrong password")
		},
		MaxAuthTries: maxAuthTries,
	}
	serverConf.AddHostKey(testSigners["ecdsa"])
	clientConf := &ClientConfig{
		User:            "u",
		Auth:            []AuthMethod{Password("wrong")},
		HostKeyCallback: InsecureIgnoreHostKey(),
	}
	before := runtime.NumGoroutine()
	for i := 0; i < 5; i++ {
		c1, c2, err := netPipe()
		if err != nil {
			t.Fatalf("netPipe: %v", err)
		}
		serverErr := make(chan error, 1)
		go func() {
			_, _, _, err := NewServerConn(c1, serverConf)
			serverErr <- err
		}()
		if _, _, _, err := NewClientConn(c2, "", clientConf); err == nil {
			t.Fatal("client: authentication succeeded with a wrong password")
		}
		if err := <-serverErr; err == nil {
			t.Fatal("server: authentication succeeded with a wrong password")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("MaxAuthTries %d: %d goroutines before, %d after failed handshakes:\n%s", maxAuthTries, before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"runtime"
	"testing"
	"time"
)

// TestMuxYieldsToWaitingReader checks that data reaches a reader waiting
// for it packet by packet, even when the connection has many packets
// buffered and there is one P: the mux loop yields to the reader after
// each packet instead of reading all that is buffered first.
func TestMuxYieldsToWaitingReader(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	w, r, mux := channelPair(t)
	defer w.Close()
	defer r.Close()
	defer mux.Close()

	const packets = 10
	counts := make(chan []int, 1)
	go func() {
		var c []int
		buf := make([]byte, packets*channelMaxPacket)
		for n := 0; n < len(buf); {
			m, err := r.Read(buf)
			if err != nil {
				t.Errorf("Read: %v", err)
				break
			}
			c = append(c, m/channelMaxPacket)
			n += m
		}
		counts <- c
	}()
	// The reader is waiting before the packets arrive.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.pending.Cond.L.Lock()
		waiting := *r.pending.waiting
		r.pending.Cond.L.Unlock()
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reader did not start waiting")
		}
		runtime.Gosched()
	}
	// All packets queued in the transport at once: the writer does not
	// yield while it writes them.
	for i := 0; i < packets; i++ {
		if _, err := w.Write(make([]byte, channelMaxPacket)); err != nil {
			t.Fatal(err)
		}
	}
	c := <-counts
	for _, n := range c {
		if n > 2 {
			t.Fatalf("the reader got the packets in batches of %v packets; want them one by one", c)
		}
	}
}

// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"io"
	"runtime"
	"testing"
	"time"
)

// TestWindowAdjustCadence checks how often a reader that keeps up gives
// the window back: once per windowAdjustStep read. The writer sends a
// packet once the reader has read the one before, so the reader never
// falls behind (then it would give back all it reads at once).
func TestWindowAdjustCadence(t *testing.T) {
	w, r, mux := channelPair(t)
	defer w.Close()
	defer r.Close()
	defer mux.Close()
	rTransport := mux.conn.(*memTransport)

	const packets = 8 * channelWindowSize / channelMaxPacket
	read := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, channelMaxPacket)
		for i := 0; i < packets; i++ {
			if _, err := w.Write(buf); err != nil {
				done <- err
				return
			}
			<-read
		}
		done <- nil
	}()
	before := rTransport.getWriteCount()
	buf := make([]byte, channelMaxPacket)
	for i := 0; i < packets; i++ {
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		read <- struct{}{}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The reader's side wrote only window adjustments, one each time
	// windowAdjustStep had been read.
	adjusts := int(rTransport.getWriteCount() - before)
	if want := packets / (windowAdjustStep / channelMaxPacket); adjusts != want {
		t.Errorf("%d window adjustments for %d packets, want %d", adjusts, packets, want)
	}
}

// TestWindowAdjustBehind checks the cadence of a reader that has fallen
// behind: the writer has spent the whole window before the first read.
// It still gives the window back a quarter at a time (a reader that gave
// back each read at once woke the peer once per read, for a packet's
// worth of window each time), and the writer, never more than three
// quarters short of a full window, sends everything.
func TestWindowAdjustBehind(t *testing.T) {
	w, r, mux := channelPair(t)
	defer w.Close()
	defer r.Close()
	defer mux.Close()
	rTransport := mux.conn.(*memTransport)

	const total = 8 * channelWindowSize
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, channelMaxPacket)
		for sent := 0; sent < total; sent += len(buf) {
			if _, err := w.Write(buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	// Wait for the writer to spend the window: nothing read, the peer
	// may send no more.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.windowMu.Lock()
		spent := r.myWindow == 0
		r.windowMu.Unlock()
		if spent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not spend the window")
		}
		runtime.Gosched()
	}
	before := rTransport.getWriteCount()
	// Small reads, as a program copying through a small buffer makes.
	buf := make([]byte, 4096)
	for read := 0; read < total; {
		n, err := r.Read(buf)
		if err != nil {
			t.Fatalf("after %d bytes: %v", read, err)
		}
		read += n
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	adjusts := int(rTransport.getWriteCount() - before)
	if want := total / windowAdjustStep; adjusts != want {
		t.Errorf("%d window adjustments for %d bytes read behind the writer, want %d", adjusts, total, want)
	}
}

// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"io"
	"testing"
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
	// more than windowAdjustStep had been read.
	adjusts := int(rTransport.getWriteCount() - before)
	if want := packets / (windowAdjustStep/channelMaxPacket + 1); adjusts < want-1 || adjusts > want+1 {
		t.Errorf("%d window adjustments for %d packets, want about %d", adjusts, packets, want)
	}
}

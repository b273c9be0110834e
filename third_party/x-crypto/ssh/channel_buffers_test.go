// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"bytes"
	"io"
	"testing"
)

// TestChannelReadBuffers relays both streams of a channel with
// ReadBuffers, WriteBuffers and ReleaseBuffers, as a proxy does: each
// stream arrives in order and whole, more than a window's worth goes
// through (the windows are adjusted), and io.EOF comes once both streams
// are drained.
func TestChannelReadBuffers(t *testing.T) {
	src, mid, mux1 := channelPair(t)
	defer src.Close()
	defer mid.Close()
	defer mux1.Close()
	out, dst, mux2 := channelPair(t)
	defer out.Close()
	defer dst.Close()
	defer mux2.Close()

	var want [2]bytes.Buffer
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 400; i++ {
			ext := uint32(i % 3 % 2) // stdout twice as often as stderr
			p := bytes.Repeat([]byte{byte(i)}, 1+i*4099%40000)
			want[ext].Write(p)
			if _, err := src.WriteExtended(p, ext); err != nil {
				done <- err
				return
			}
		}
		done <- src.CloseWrite()
	}()

	relayed := make(chan error, 1)
	go func() {
		var bufs [][]byte
		for {
			var ext uint32
			var err error
			bufs, ext, err = mid.ReadBuffers(bufs[:0], 4*channelMaxPacket)
			if len(bufs) > 0 {
				if _, werr := out.WriteBuffers(bufs, ext); werr != nil {
					relayed <- werr
					return
				}
				mid.ReleaseBuffers(bufs)
				for _, b := range bufs {
					if b != nil {
						relayed <- io.ErrShortWrite
						return
					}
				}
			}
			if err == io.EOF {
				relayed <- out.CloseWrite()
				return
			}
			if err != nil {
				relayed <- err
				return
			}
		}
	}()

	var got [2]bytes.Buffer
	buf := make([]byte, 3000)
	for {
		n, ext, err := dst.ReadEither(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("ReadEither: %v", err)
		}
		got[ext].Write(buf[:n])
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-relayed; err != nil {
		t.Fatalf("relay: %v", err)
	}
	if n := got[0].Len() + got[1].Len(); n < 2*channelWindowSize {
		t.Errorf("relayed %d bytes, less than two windows", n)
	}
	for ext := range got {
		if !bytes.Equal(got[ext].Bytes(), want[ext].Bytes()) {
			t.Errorf("stream %d: got %d bytes, want %d, or different ones", ext, got[ext].Len(), want[ext].Len())
		}
	}
	if bufs, _, err := mid.ReadBuffers(nil, 1); err != io.EOF || len(bufs) != 0 {
		t.Errorf("ReadBuffers after EOF: %d buffers, %v", len(bufs), err)
	}
}

// TestChannelWriteBuffers checks that WriteBuffers fills packets from
// several buffers: buffers smaller than a packet go out in packets of
// the peer's maximum size. ReadBuffers returns one buffer per packet
// received, which shows how the data was cut.
func TestChannelWriteBuffers(t *testing.T) {
	w, r, mux := channelPair(t)
	defer w.Close()
	defer r.Close()
	defer mux.Close()

	var bufs [][]byte
	var all []byte
	for i := 0; i < 100; i++ {
		b := bytes.Repeat([]byte{byte(i)}, 1000+i)
		bufs = append(bufs, b)
		all = append(all, b...)
	}
	saved := append([][]byte(nil), bufs...)
	n, err := w.WriteBuffers(bufs, 0)
	if err != nil || n != len(all) {
		t.Fatalf("WriteBuffers: %d of %d bytes, %v", n, len(all), err)
	}
	for i := range bufs {
		if &bufs[i][0] != &saved[i][0] || len(bufs[i]) != len(saved[i]) {
			t.Fatalf("WriteBuffers changed the caller's buffer %d", i)
		}
	}
	if n, err := w.WriteBuffers(nil, 0); n != 0 || err != nil {
		t.Fatalf("WriteBuffers of nothing: %d, %v", n, err)
	}

	var got []byte
	var sizes []int
	for len(got) < len(all) {
		pkts, ext, err := r.ReadBuffers(nil, len(all))
		if err != nil || ext != 0 {
			t.Fatalf("ReadBuffers: stream %d, %v", ext, err)
		}
		for _, p := range pkts {
			sizes = append(sizes, len(p))
			got = append(got, p...)
		}
		r.ReleaseBuffers(pkts)
	}
	if !bytes.Equal(got, all) {
		t.Fatalf("got %d bytes, want %d, or different ones", len(got), len(all))
	}
	for i, s := range sizes {
		if i < len(sizes)-1 && s != int(w.maxRemotePayload) {
			t.Fatalf("packet sizes %v: want %d but for the last", sizes, w.maxRemotePayload)
		}
	}
}

// TestChannelReleasedMemoryOnly checks that received data is read into
// memory only once its reader released it: data held between
// ReadBuffers and ReleaseBuffers stays intact while later packets
// arrive, and data a Read copied out was released by Read.
func TestChannelReleasedMemoryOnly(t *testing.T) {
	w, r, mux := channelPair(t)
	defer w.Close()
	defer r.Close()
	defer mux.Close()

	packet := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 20000) }
	var held [][]byte
	for i := 0; i < 50; i++ {
		if _, err := w.Write(packet(i)); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			// Through Read: copied out, its memory released.
			buf := make([]byte, 20000)
			if _, err := io.ReadFull(r, buf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf, packet(i)) {
				t.Fatalf("packet %d read wrong", i)
			}
			continue
		}
		bufs, _, err := r.ReadBuffers(nil, 1)
		if err != nil || len(bufs) != 1 {
			t.Fatalf("ReadBuffers: %d buffers, %v", len(bufs), err)
		}
		held = append(held, bufs[0])
		for j, h := range held {
			if !bytes.Equal(h, packet(2*j+1)) {
				t.Fatalf("held packet %d overwritten after packet %d arrived", 2*j+1, i)
			}
		}
	}
	r.ReleaseBuffers(held)
}

// TestRecycledPacketMemory checks that released memory is what later
// packets are read into, and that memory too small for a packet or too
// large to keep is not handed out.
func TestRecycledPacketMemory(t *testing.T) {
	const n = 32 << 10
	reused := 0
	for i := 0; i < 100; i++ {
		b := packetBuffer(n)
		if len(b) != n {
			t.Fatalf("packetBuffer(%d) has %d bytes", n, len(b))
		}
		recycleData(b[13:]) // the data of a packet, as a channel releases it
		// sync.Pool may drop what it was given (it does so at random
		// under the race detector): most rounds must reuse it.
		if c := packetBuffer(n); &c[:cap(c)][cap(c)-1] == &b[:cap(b)][cap(b)-1] {
			reused++
			recycleData(c)
		}
	}
	if reused < 50 {
		t.Errorf("released memory reused in %d of 100 rounds", reused)
	}

	// Too small to hold the packet: not handed out.
	small := make([]byte, n)
	recycleData(small[n/2+1:])
	for i := 0; i < 10; i++ {
		if c := packetBuffer(n); cap(c) < n {
			t.Fatalf("packetBuffer(%d) has room for %d", n, cap(c))
		}
	}
	// Small packets and huge ones: fresh memory, never kept.
	big := make([]byte, maxRecycledData+1)
	recycleData(big)
	if c := packetBuffer(minRecycledData - 1); cap(c) != minRecycledData-1 {
		t.Errorf("small packet in %d bytes of memory", cap(c))
	}
}

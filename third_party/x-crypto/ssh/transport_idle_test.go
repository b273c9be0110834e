// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"bytes"
	"crypto/rand"
	"io"
	mathrand "math/rand"
	"testing"
)

// chunkConn serves data in reads of the sizes next returns, and takes
// writes into out.
type chunkConn struct {
	data   []byte
	next   func() int
	out    bytes.Buffer
	writes int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.next(), len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func (c *chunkConn) Write(p []byte) (int, error) { c.writes++; return c.out.Write(p) }
func (c *chunkConn) Close() error                { return nil }

// TestTransportIdleBuffers checks the read and write buffering: packets of
// mixed sizes come back whole however the connection cuts the stream, a
// small packet goes out in one write, and a connection between packets
// holds no read buffer once a small packet was read.
func TestTransportIdleBuffers(t *testing.T) {
	sizes := []int{1, 40, 300, 30000, 32000, 5, 20000, 4000, 4097, 100, 2, 32768, 32768, 7}
	w := &chunkConn{}
	wt := newTransport(w, rand.Reader, true)
	var want [][]byte
	for i, n := range sizes {
		p := make([]byte, n)
		rand.Read(p)
		p[0] = msgRequestSuccess // neither ignore nor debug
		want = append(want, p)
		before := w.writes
		if err := wt.writePacket(bytes.Clone(p)); err != nil {
			t.Fatal(err)
		}
		// A packet that fits the pooled write buffer goes out in one
		// write, as it did through a buffer of the connection's own.
		if n < 4000 && w.writes != before+1 {
			t.Fatalf("packet %d (%d bytes): %d writes, want 1", i, n, w.writes-before)
		}
	}
	wire := w.out.Bytes()

	rng := mathrand.New(mathrand.NewSource(1))
	for name, next := range map[string]func() int{
		"one byte":  func() int { return 1 },
		"random":    func() int { return 1 + rng.Intn(70000) },
		"all":       func() int { return len(wire) },
		"head size": func() int { return idleReadSize },
	} {
		r := &chunkConn{data: bytes.Clone(wire), next: next}
		rt := newTransport(r, rand.Reader, false)
		for i, p := range want {
			got, err := rt.readPacket()
			if err != nil {
				t.Fatalf("%s: packet %d: %v", name, i, err)
			}
			if !bytes.Equal(got, p) {
				t.Fatalf("%s: packet %d (%d bytes) came back different (%d bytes)", name, i, len(p), len(got))
			}
			rt.pickReader()
			if len(p) <= smallReadSize && rt.bufReader != nil && rt.bufReader.Buffered() == 0 && rt.head.off == rt.head.n {
				t.Fatalf("%s: after packet %d (%d bytes), nothing buffered, the transport still holds a reader", name, i, len(p))
			}
		}
		if _, err := rt.readPacket(); err != io.EOF {
			t.Fatalf("%s: after the last packet: %v, want EOF", name, err)
		}
	}
}

// FuzzTransportRead feeds the transport's reader hostile streams, cut into
// reads of hostile sizes: it must return whole packets or an error, never
// panic, and never return more than the stream held.
func FuzzTransportRead(f *testing.F) {
	w := &chunkConn{}
	wt := newTransport(w, rand.Reader, true)
	for _, n := range []int{1, 200, 4500} {
		p := bytes.Repeat([]byte{msgRequestSuccess}, n)
		if err := wt.writePacket(p); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(w.out.Bytes(), []byte{1, 7, 128, 200})
	f.Add([]byte{0, 0, 0, 12, 4, 5, 1, 2, 3, 4, 0, 0, 0, 0}, []byte{3})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 4}, []byte{1})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		i := 0
		next := func() int {
			if len(cuts) == 0 {
				return len(stream) + 1
			}
			c := int(cuts[i%len(cuts)])*97 + 1
			i++
			return c
		}
		r := &chunkConn{data: bytes.Clone(stream), next: next}
		rt := newTransport(r, rand.Reader, false)
		total := 0
		for k := 0; k < 1000; k++ {
			p, err := rt.readPacket()
			if err != nil {
				return
			}
			total += len(p)
			if total > len(stream) {
				t.Fatalf("read %d bytes of packets from a %d-byte stream", total, len(stream))
			}
		}
	})
}

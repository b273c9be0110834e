// Copyright 2012 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"io"
	"sync"
)

// buffer provides a linked list buffer for data exchange
// between producer and consumer. Theoretically the buffer is
// of unlimited capacity as it does no allocation of its own.
type buffer struct {
	// protects concurrent access to head, tail and closed
	*sync.Cond

	head *element // the buffer that will be read first
	tail *element // the buffer that will be read last

	closed bool

	// waiting counts the readers blocked in wait, under Cond.L; it is
	// shared like Cond (a channel's data and extended data buffers), so
	// that deliver can tell whether it woke a reader.
	waiting *int
}

// An element represents a single link in a linked list.
type element struct {
	buf  []byte
	next *element

	// recycle, if set, is the memory buf was written in, given to
	// recycleData once buf has been read: channel data is received in
	// packets of its own (see handleData), and nothing else holds them.
	recycle []byte
}

// newBuffer returns an empty buffer that is not closed.
func newBuffer() *buffer {
	return newBufferCond(newCond(), new(int))
}

// newBufferCond returns an empty buffer that is not closed, using c and
// waiting: a channel's data and extended data buffers share them, so that
// a reader can wait for either (see channel.ReadEither).
func newBufferCond(c *sync.Cond, waiting *int) *buffer {
	e := new(element)
	return &buffer{
		Cond:    c,
		head:    e,
		tail:    e,
		waiting: waiting,
	}
}

// write makes buf available for Read to receive.
// buf must not be modified after the call to write.
func (b *buffer) write(buf []byte) {
	b.deliver(buf, false)
}

// deliver is write for the mux loop: it reports whether a reader was
// waiting for the data. With owned set, buf's memory is nobody else's (a
// channel data packet's, see handleData): it goes to recycleData once
// read.
func (b *buffer) deliver(buf []byte, owned bool) (woke bool) {
	b.Cond.L.Lock()
	e := &element{buf: buf}
	if owned {
		e.recycle = buf
	}
	b.tail.next = e
	b.tail = e
	// Broadcast: with a shared Cond, the waiter may be another buffer's.
	woke = *b.waiting > 0
	b.Cond.Broadcast()
	b.Cond.L.Unlock()
	return woke
}

// wait waits on Cond for a write or eof; the caller holds Cond.L.
func (b *buffer) wait() {
	*b.waiting++
	b.Cond.Wait()
	*b.waiting--
}

// eof closes the buffer. Reads from the buffer once all
// the data has been consumed will receive io.EOF.
func (b *buffer) eof() {
	b.Cond.L.Lock()
	b.closed = true
	b.Cond.Broadcast()
	b.Cond.L.Unlock()
}

// Read reads data from the internal buffer in buf.  Reads will block
// if no data is available, or until the buffer is closed.
func (b *buffer) Read(buf []byte) (n int, err error) {
	b.Cond.L.Lock()
	defer b.Cond.L.Unlock()

	for {
		n, err = b.take(buf)
		if n > 0 || err != nil || len(buf) == 0 {
			return n, err
		}
		// out of buffers, wait for producer
		b.wait()
	}
}

// take copies what is buffered into buf, without waiting. With nothing
// buffered it returns io.EOF if the buffer is closed, else 0 and nil. The
// caller holds b.Cond.L.
func (b *buffer) take(buf []byte) (n int, err error) {
	for len(buf) > 0 {
		// if there is data in b.head, copy it
		if len(b.head.buf) > 0 {
			r := copy(buf, b.head.buf)
			buf, b.head.buf = buf[r:], b.head.buf[r:]
			n += r
			if len(b.head.buf) == 0 && b.head.recycle != nil {
				recycleData(b.head.recycle)
				b.head.recycle = nil
			}
			continue
		}
		// if there is a next buffer, make it the head
		if b.head != b.tail {
			b.head = b.head.next
			continue
		}
		break
	}
	// if nothing was read, and there is nothing outstanding
	// check to see if the buffer is closed.
	if n == 0 && len(buf) > 0 && b.closed {
		err = io.EOF
	}
	return n, err
}

// takeBuffers is take without the copy: it appends to bufs what is
// buffered, whole elements, until they hold max bytes or more (at least
// one element), and returns them with their length. The caller owns
// the returned memory and hands it to releaseBuffers when done. With
// nothing buffered it returns io.EOF if the buffer is closed, else no
// buffers and nil. The caller holds b.Cond.L.
func (b *buffer) takeBuffers(bufs [][]byte, max int) ([][]byte, int, error) {
	n := 0
	for n < max {
		if len(b.head.buf) > 0 {
			// A head partly read by take is returned from where take
			// stopped; its memory still goes back whole.
			bufs = append(bufs, b.head.buf)
			n += len(b.head.buf)
			b.head.buf, b.head.recycle = nil, nil
			continue
		}
		if b.head == b.tail {
			break
		}
		b.head = b.head.next
	}
	if n == 0 && b.closed {
		return bufs, 0, io.EOF
	}
	return bufs, n, nil
}

// Channel data is received into memory of its own per packet (see
// ownedPacketCipher). Once the data has been read, a buffer's reader
// gives that memory back here and the next packets are read into it:
// a connection moving bulk data then allocates (and zeroes) no packet
// memory, and the data it relays stays in the CPU's cache.
//
// recycleData takes back memory no one uses any more. The slice may
// start anywhere in its memory: what lies from its start to the end
// of the memory is reused. Only sizes that bulk data comes in are kept.
func recycleData(b []byte) {
	b = b[:cap(b)]
	if len(b) < minRecycledData || len(b) > maxRecycledData {
		return
	}
	dataBuffers.Put(&b)
}

// packetBuffer returns n bytes to read a packet into: recycled memory
// when there is some large enough. Memory that has gone round often
// enough to be too small (every round takes the packet header off its
// front) is dropped, and fresh memory has room for that.
func packetBuffer(n int) []byte {
	if n < minRecycledData || n > maxRecycledData-recycledSlack {
		return make([]byte, n)
	}
	if p, _ := dataBuffers.Get().(*[]byte); p != nil && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n, n+recycledSlack)
}

const (
	// minRecycledData is the smallest packet read into recycled memory:
	// interactive sessions keep allocating their few small packets.
	minRecycledData = 4 << 10
	// maxRecycledData is the most memory recycled per packet: what a
	// channel data packet takes (32 KiB, the maximum packet both
	// OpenSSH and this package announce, plus headers, padding, MAC) and
	// recycledSlack.
	maxRecycledData = 40 << 10
	// recycledSlack is the room fresh packet memory has beyond what it is
	// made for: each round through recycleData loses the packet's header
	// (10 to 20 bytes), so memory goes round a few hundred times.
	recycledSlack = 4 << 10
)

// dataBuffers holds recycled packet memory (*[]byte).
var dataBuffers sync.Pool

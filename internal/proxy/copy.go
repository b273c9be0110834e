package proxy

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/ssh"
)

// The data path. x/crypto's channels, with frontdoor's patch set, hand
// out what they received in the memory it arrived in and take several
// buffers to write as full packets (third_party/patches/x-crypto/0010):
// a channel's data goes from one connection's packet to the other's
// without a copy in between, and that memory is read into again for the
// next packets, so a bulk transfer allocates nothing per packet and the
// bytes stay in the CPU's cache. x/crypto's connection reader yields to a
// copier waiting for data (0009): each packet is passed on as soon as it
// has arrived, not after everything the socket held was read, so the
// node's sshd and the client both keep working while the other waits.
//
// A channel without those methods (another ssh.Channel implementation) is
// copied through buffers, one goroutine per stream.

// bufferChannel is an x/crypto channel with patch 0010.
type bufferChannel interface {
	// ReadBuffers waits for data or extended data (stderr) and returns
	// up to max bytes (whole packets, at least one) of one stream, and
	// which one (0 data, 1 stderr).
	ReadBuffers(bufs [][]byte, max int) ([][]byte, uint32, error)
	// ReleaseBuffers gives back what ReadBuffers returned.
	ReleaseBuffers(bufs [][]byte)
	// WriteBuffers writes the concatenation of bufs to a stream in full
	// packets.
	WriteBuffers(bufs [][]byte, extended uint32) (int, error)
}

// maxBatch is the most one round of relayChannel takes from its source:
// four maximum-size SSH packets (OpenSSH and x/crypto both use 32 KiB).
// While the copier keeps up it takes a packet at a time; after falling
// behind it takes several, and smaller packets (the OpenSSH client sends
// 16 KiB ones) go out as full ones.
const maxBatch = 4 * maxPacket

// maxPacket is the channel packet size OpenSSH and x/crypto announce.
const maxPacket = 32 << 10

// relayChannel copies src's data to dst until src's EOF, adding the bytes
// written to counter as they go (the idle timeout and live statistics
// read it while the channel is open). With stderr set, src's extended
// data goes to dst's stderr; without, it is read and dropped (only
// session channels carry stderr, and only from the node). It returns the
// bytes written; EOF is not an error. An idle channel holds no buffer.
func relayChannel(dst, src bufferChannel, stderr bool, counter *atomic.Int64) (int64, error) {
	var bufs [][]byte
	return copyLoop(counter, func() (w int, werr, rerr error) {
		var ext uint32
		bufs, ext, rerr = src.ReadBuffers(bufs[:0], maxBatch)
		if len(bufs) > 0 {
			if ext == 0 || stderr {
				w, werr = dst.WriteBuffers(bufs, ext)
			}
			src.ReleaseBuffers(bufs)
		}
		return w, werr, rerr
	})
}

// copyLoop runs rounds of a copy until one fails or reaches EOF, counting
// the bytes each wrote; a round returns them, its write error and its
// read error. It returns the bytes written; EOF is not an error.
func copyLoop(counter *atomic.Int64, round func() (int, error, error)) (int64, error) {
	var total int64
	for {
		w, werr, rerr := round()
		total += int64(w)
		counter.Add(int64(w))
		if werr != nil {
			return total, werr
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return total, nil
			}
			return total, rerr
		}
	}
}

// Buffers for copying channel data without patch 0010. An idle channel
// blocks in Read holding its buffer, so reads start small (keystrokes,
// prompts) and switch to a large buffer only while data is streaming.
const (
	smallBuf = 512
	largeBuf = maxBatch
)

var (
	smallPool = sync.Pool{New: func() any { b := make([]byte, smallBuf); return &b }}
	largePool = sync.Pool{New: func() any { b := make([]byte, largeBuf); return &b }}
)

// copyData copies src to dst until EOF or error, like io.Copy, with
// adaptively sized pooled buffers, counting as relayChannel does.
func copyData(dst io.Writer, src io.Reader, counter *atomic.Int64) (int64, error) {
	bp := smallPool.Get().(*[]byte)
	large := false
	defer func() {
		if large {
			largePool.Put(bp)
		} else {
			smallPool.Put(bp)
		}
	}()
	return copyLoop(counter, func() (w int, werr, rerr error) {
		buf := *bp
		n, rerr := src.Read(buf)
		if n > 0 {
			w, werr = dst.Write(buf[:n])
		}
		switch {
		case !large && n == len(buf):
			// The reader had more than a small buffer's worth: streaming.
			smallPool.Put(bp)
			bp, large = largePool.Get().(*[]byte), true
		case large && n < smallBuf:
			// Back to a trickle (interactive use): release the large buffer.
			largePool.Put(bp)
			bp, large = smallPool.Get().(*[]byte), false
		}
		return w, werr, rerr
	})
}

// buffered returns both channels as bufferChannels, if they are.
func buffered(dst, src ssh.Channel) (bufferChannel, bufferChannel, bool) {
	d, ok1 := dst.(bufferChannel)
	s, ok2 := src.(bufferChannel)
	return d, s, ok1 && ok2
}

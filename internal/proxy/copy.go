package proxy

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// Buffers for copying channel data. An idle channel blocks in Read holding
// its buffer, so reads start small (keystrokes, prompts) and switch to a
// large buffer only while data is streaming: idle sessions stay cheap.
// The large buffer holds four maximum-size SSH packets (OpenSSH and
// x/crypto both use 32 KiB): a copier that fell behind takes everything
// buffered in one read, and one write hands it to x/crypto, which cuts it
// into full-size packets for the other side. That halves the packets (and
// write syscalls) toward the node when the OpenSSH client sends its
// 16 KiB ones, and wakes the copier once per batch instead of per packet.
const (
	smallBuf = 512
	largeBuf = 4 * maxPacket
	// maxPacket is the channel packet size OpenSSH and x/crypto announce.
	maxPacket = 32 << 10
)

var (
	smallPool = sync.Pool{New: func() any { b := make([]byte, smallBuf); return &b }}
	largePool = sync.Pool{New: func() any { b := make([]byte, largeBuf); return &b }}
)

// copyData copies src to dst until EOF or error, like io.Copy, with
// adaptively sized pooled buffers, adding the bytes written to counter as
// they go (the idle timeout and live statistics read it while the channel
// is open). It returns the bytes written; EOF is not an error.
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
	var total int64
	for {
		buf := *bp
		n, rerr := src.Read(buf)
		if n > 0 {
			w, werr := dst.Write(buf[:n])
			total += int64(w)
			counter.Add(int64(w))
			if werr != nil {
				return total, werr
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return total, nil
			}
			return total, rerr
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
	}
}

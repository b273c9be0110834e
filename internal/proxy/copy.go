package proxy

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/ssh"
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
	return copyFrom(func(p []byte) (int, io.Writer, error) {
		n, err := src.Read(p)
		return n, dst, err
	}, counter)
}

// eitherReader is a channel that reads data and extended data (stderr)
// from one goroutine: x/crypto's channel with frontdoor's patch set
// (third_party/patches/x-crypto/0008).
type eitherReader interface {
	ReadEither(p []byte) (n int, extended uint32, err error)
}

// copyBoth copies src's data to dst and its extended data (stderr) to
// dst's, until src's EOF, as copyData does for one stream: one goroutine
// for both streams of a session channel.
func copyBoth(dst ssh.Channel, src eitherReader, counter *atomic.Int64) (int64, error) {
	stderr := dst.Stderr()
	return copyFrom(func(p []byte) (int, io.Writer, error) {
		n, ext, err := src.ReadEither(p)
		if ext == 1 {
			return n, stderr, err
		}
		return n, dst, err
	}, counter)
}

// copyFrom is copyData's loop: read returns the bytes read into p and
// where they go.
func copyFrom(read func(p []byte) (int, io.Writer, error), counter *atomic.Int64) (int64, error) {
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
		n, dst, rerr := read(buf)
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

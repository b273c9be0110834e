package gateway

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
)

// When is a client worth a preconnection? Any first byte is not enough: a
// port scanner, a health check or a client sending noise would each make a
// login node fork an sshd. The gateway waits for what every SSH client
// sends before anything else — its identification string (RFC 4253 4.2:
// "SSH-2.0-softwareversion [comments]" and a line end, within 255 bytes)
// and the header of its first binary packet, which must be a KEXINIT (a
// plausible length, padding, message 20) — and only then preconnects. It
// costs an honest client nothing: OpenSSH sends its KEXINIT one round
// trip after its version, long before the key exchange ends.

// helloVerdict is what the first bytes of a connection say so far.
type helloVerdict int

const (
	helloMore helloVerdict = iota // not enough bytes yet
	helloOK                       // an SSH client starting a key exchange
	helloBad                      // not that; stop looking
)

// SSH protocol constants for the hello (RFC 4253).
const (
	maxIdentLen     = 255   // identification string, CR LF included
	msgKexInit      = 20    // SSH_MSG_KEXINIT
	minKexInitPkt   = 67    // packet_length of the smallest KEXINIT: 62 bytes of payload, 4 of padding, 1 length byte
	maxKexInitPkt   = 35000 // the packet size every implementation must take
	minPaddingBytes = 4
)

// parseHello judges the first bytes b a client sent.
func parseHello(b []byte) helloVerdict {
	end := bytes.IndexByte(b, '\n')
	if end < 0 {
		if len(b) >= maxIdentLen {
			return helloBad
		}
		if !bytes.HasPrefix(b, []byte("SSH-")[:min(len(b), 4)]) {
			return helloBad
		}
		return helloMore
	}
	if end+1 > maxIdentLen || !validIdent(bytes.TrimSuffix(b[:end], []byte("\r"))) {
		return helloBad
	}
	hdr := b[end+1:]
	if len(hdr) < 6 {
		return helloMore
	}
	length := binary.BigEndian.Uint32(hdr)
	padding, msg := hdr[4], hdr[5]
	if length < minKexInitPkt || length > maxKexInitPkt || padding < minPaddingBytes || uint32(padding) >= length || msg != msgKexInit {
		return helloBad
	}
	return helloOK
}

// validIdent checks an identification line (without its line end):
// SSH-2.0 (or 1.99, which means 2.0 too), a non-empty software version of
// printable ASCII without spaces, then optional printable comments.
func validIdent(line []byte) bool {
	var rest []byte
	switch {
	case bytes.HasPrefix(line, []byte("SSH-2.0-")):
		rest = line[len("SSH-2.0-"):]
	case bytes.HasPrefix(line, []byte("SSH-1.99-")):
		rest = line[len("SSH-1.99-"):]
	default:
		return false
	}
	version, _, _ := bytes.Cut(rest, []byte(" "))
	if len(version) == 0 {
		return false
	}
	for _, c := range rest {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// helloConn passes a client's bytes through to x/crypto and calls fn once
// they form a hello (see parseHello). It stops looking at the first verdict.
type helloConn struct {
	net.Conn
	fn func()

	mu   sync.Mutex // mu protects the following
	seen []byte     // the bytes so far, until a verdict
	done bool
}

func (h *helloConn) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	if n > 0 {
		h.look(p[:n])
	}
	return n, err
}

func (h *helloConn) look(b []byte) {
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return
	}
	// A verdict needs at most the identification and 6 bytes.
	h.seen = append(h.seen, b[:min(len(b), maxIdentLen+6-len(h.seen))]...)
	v := parseHello(h.seen)
	if v != helloMore {
		h.done, h.seen = true, nil
	}
	h.mu.Unlock()
	if v == helloOK {
		h.fn()
	}
}

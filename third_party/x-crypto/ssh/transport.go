// Copyright 2011 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
)

// debugTransport if set, will print packet types as they go over the
// wire. No message decoding is done, to minimize the impact on timing.
const debugTransport = false

// packetConn represents a transport that implements packet based
// operations.
type packetConn interface {
	// Encrypt and send a packet of data to the remote peer.
	writePacket(packet []byte) error

	// Read a packet from the connection. The read is blocking,
	// i.e. if error is nil, then the returned byte slice is
	// always non-empty.
	readPacket() ([]byte, error)

	// Close closes the write-side of the connection.
	Close() error
}

// transport is the keyingTransport that implements the SSH packet
// protocol.
type transport struct {
	reader connectionState
	writer connectionState

	// bufReader is what packets are read through: nil while the
	// connection is idle, else a pooled small or stream reader over head
	// (see pickReader). lastLen is the length of the last packet read.
	bufReader *bufio.Reader
	head      headReader
	lastLen   int

	// rd and wr are the connection; each packet is written through a
	// pooled buffer (see writePacket). rd is nil for a transport made
	// without newTransport, which reads through bufReader alone.
	rd       io.Reader
	wr       io.Writer
	rand     io.Reader
	isClient bool
	io.Closer

	strictMode     bool
	initialKEXDone bool
}

// packetCipher represents a combination of SSH encryption/MAC
// protocol.  A single instance should be used for one direction only.
type packetCipher interface {
	// writeCipherPacket encrypts the packet and writes it to w. The
	// contents of the packet are generally scrambled.
	writeCipherPacket(seqnum uint32, w io.Writer, rand io.Reader, packet []byte) error

	// readCipherPacket reads and decrypts a packet of data. The
	// returned packet may be overwritten by future calls of
	// readPacket.
	readCipherPacket(seqnum uint32, r io.Reader) ([]byte, error)
}

// connectionState represents one side (read or write) of the
// connection. This is necessary because each direction has its own
// keys, and can even have its own algorithms
type connectionState struct {
	packetCipher
	seqNum           uint32
	dir              direction
	pendingKeyChange chan packetCipher
}

func (t *transport) setStrictMode() error {
	if t.reader.seqNum != 1 {
		return errors.New("ssh: sequence number != 1 when strict KEX mode requested")
	}
	t.strictMode = true
	return nil
}

func (t *transport) setInitialKEXDone() {
	t.initialKEXDone = true
}

// prepareKeyChange sets up key material for a keychange. The key changes in
// both directions are triggered by reading and writing a msgNewKey packet
// respectively.
func (t *transport) prepareKeyChange(algs *NegotiatedAlgorithms, kexResult *kexResult) error {
	ciph, err := newPacketCipher(t.reader.dir, algs.Read, kexResult)
	if err != nil {
		return err
	}
	t.reader.pendingKeyChange <- ciph

	ciph, err = newPacketCipher(t.writer.dir, algs.Write, kexResult)
	if err != nil {
		return err
	}
	t.writer.pendingKeyChange <- ciph

	return nil
}

func (t *transport) printPacket(p []byte, write bool) {
	if len(p) == 0 {
		return
	}
	who := "server"
	if t.isClient {
		who = "client"
	}
	what := "read"
	if write {
		what = "write"
	}

	log.Println(what, who, p[0])
}

// Read and decrypt next packet.
func (t *transport) readPacket() (p []byte, err error) {
	for {
		t.pickReader()
		p, err = t.reader.readPacket(packetInput{t}, t.strictMode)
		if err != nil {
			break
		}
		t.lastLen = len(p)
		// in strict mode we pass through DEBUG and IGNORE packets only during the initial KEX
		if len(p) == 0 || (t.strictMode && !t.initialKEXDone) || (p[0] != msgIgnore && p[0] != msgDebug) {
			break
		}
	}
	if debugTransport {
		t.printPacket(p, false)
	}

	return p, err
}

// Read buffers. A connection waiting for its next packet holds none: it
// blocks in a read into the transport's small head array (idleReadSize),
// then borrows a small reader (smallReadSize) from a pool for the rest of
// the packet, or a stream reader (streamReadSize) while large packets
// arrive, and gives it back at a packet boundary with nothing buffered.
// A 4 KiB reader takes two read syscalls per 32 KiB packet (a refill for
// the length, a direct read for the rest); a 64 KiB one about one per two
// packets. Most interactive packets arrive whole in the head read.
const (
	idleReadSize   = 128
	smallReadSize  = 4 << 10
	streamReadSize = 128 << 10
)

var (
	smallReaders  = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, smallReadSize) }}
	streamReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, streamReadSize) }}
)

// headReader returns what an idle connection's first read brought in,
// then reads on from r.
type headReader struct {
	r      io.Reader
	buf    [idleReadSize]byte
	off, n int
}

func (h *headReader) Read(p []byte) (int, error) {
	if h.off < h.n {
		n := copy(p, h.buf[h.off:h.n])
		h.off += n
		return n, nil
	}
	return h.r.Read(p)
}

// pickReader chooses the reader for the next packet, at a packet boundary
// with nothing buffered: after a small packet (the connection is idle, or
// interactive) it gives the reader back; after a large one it switches
// from the small to the stream reader.
func (t *transport) pickReader() {
	r := t.bufReader
	if t.rd == nil || r == nil || r.Buffered() != 0 || t.head.off < t.head.n {
		return
	}
	streaming := r.Size() == streamReadSize
	switch {
	case t.lastLen <= smallReadSize:
		t.bufReader = nil
		r.Reset(nil)
		if streaming {
			streamReaders.Put(r)
		} else {
			smallReaders.Put(r)
		}
	case !streaming:
		r.Reset(nil)
		smallReaders.Put(r)
		t.bufReader = streamReaders.Get().(*bufio.Reader)
		t.bufReader.Reset(&t.head)
	}
}

// packetInput is what ciphers read packets from: the transport's reader,
// and while it has none, a blocking read into head first.
type packetInput struct{ t *transport }

func (in packetInput) Read(p []byte) (int, error) {
	t := in.t
	if t.bufReader == nil {
		// Idle: block with no buffer but head.
		n, err := t.rd.Read(t.head.buf[:])
		if n == 0 {
			return 0, err
		}
		// An error with data comes back from the next read.
		t.head.off, t.head.n = 0, n
		t.bufReader = smallReaders.Get().(*bufio.Reader)
		t.bufReader.Reset(&t.head)
	}
	return t.bufReader.Read(p)
}

// packetPeeker is a packet source that can show what it has buffered:
// the transport's packetInput.
type packetPeeker interface {
	// peek returns the next n bytes without consuming them, in memory
	// valid until the next read, or nil when its buffer cannot hold n
	// bytes or they do not arrive.
	peek(n int) []byte
	// discard consumes n bytes peek returned.
	discard(n int)
}

// peekPacket returns the next n bytes of r in r's read buffer, or nil
// when r cannot show them: a cipher then decrypts the packet from there,
// without copying it out first.
func peekPacket(r io.Reader, n int) ([]byte, packetPeeker) {
	pr, ok := r.(packetPeeker)
	if !ok {
		return nil, nil
	}
	return pr.peek(n), pr
}

func (in packetInput) peek(n int) []byte {
	r := in.t.bufReader
	if r == nil || n > r.Size() {
		return nil
	}
	b, err := r.Peek(n)
	if err != nil {
		// What arrived stays buffered for the Read that reports the
		// error.
		return nil
	}
	return b
}

func (in packetInput) discard(n int) {
	in.t.bufReader.Discard(n)
}

func (s *connectionState) readPacket(r io.Reader, strictMode bool) ([]byte, error) {
	packet, err := s.packetCipher.readCipherPacket(s.seqNum, r)
	s.seqNum++
	if err == nil && len(packet) == 0 {
		err = errors.New("ssh: zero length packet")
	}

	if len(packet) > 0 {
		switch packet[0] {
		case msgNewKeys:
			select {
			case cipher := <-s.pendingKeyChange:
				s.packetCipher = cipher
				if strictMode {
					s.seqNum = 0
				}
			default:
				return nil, errors.New("ssh: got bogus newkeys message")
			}

		case msgDisconnect:
			// Transform a disconnect message into an
			// error. Since this is lowest level at which
			// we interpret message types, doing it here
			// ensures that we don't have to handle it
			// elsewhere.
			var msg disconnectMsg
			if err := Unmarshal(packet, &msg); err != nil {
				return nil, err
			}
			return nil, &msg
		}
	}

	// The packet may point to an internal buffer, so copy the
	// packet out here, unless the cipher hands out packets of their own.
	if _, owned := s.packetCipher.(ownedPacketCipher); owned {
		return packet, err
	}
	fresh := packetBuffer(len(packet))
	copy(fresh, packet)

	return fresh, err
}

// ownedPacketCipher is a packetCipher whose readCipherPacket returns each
// packet in memory of its own, not reused for later packets: the transport
// hands it on without copying it. The AEAD ciphers read into a new buffer
// and decrypt in place, so a copy would only move the same bytes again.
type ownedPacketCipher interface {
	packetCipher
	ownedPackets()
}

// writeBuffers gather a packet that its cipher writes in pieces (the CBC,
// CTR and MAC ciphers write length, payload and MAC separately) into one
// write. Every packet is flushed at once, so between packets a connection
// needs no write buffer of its own.
var writeBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}

func (t *transport) writePacket(packet []byte) error {
	if debugTransport {
		t.printPacket(packet, true)
	}
	w := writeBuffers.Get().(*bufio.Writer)
	w.Reset(t.wr)
	err := t.writer.writePacket(w, t.rand, packet, t.strictMode)
	w.Reset(nil)
	writeBuffers.Put(w)
	return err
}

// Channel data is sealed in the memory it was built in: a frame holds
// the packet at frame[framedHead:], with room in front for the packet
// length and the padding length, and at least framedTail bytes of
// capacity behind it for the padding and the MAC. A cipher that can
// (framedCipher) frames and seals the packet there and writes it at once;
// the others copy the packet out of the frame as out of any packet.
const (
	framedHead = 5
	// The AEAD ciphers pad by less than two blocks; their tag is 16 bytes.
	framedTail = 2*packetSizeMultiple + 16
)

// newFrame returns a frame for a packet of n bytes: buf, if its capacity
// is enough, else new memory.
func newFrame(buf []byte, n int) []byte {
	if cap(buf) < framedHead+n+framedTail {
		return make([]byte, framedHead+n, framedHead+n+framedTail)
	}
	return buf[:framedHead+n]
}

// framedPacketConn is a packetConn that can write a packet in its frame.
type framedPacketConn interface {
	// writeFramedPacket writes frame[framedHead:] as writePacket writes
	// a packet; it may overwrite all of frame's capacity. The frame can
	// be reused once it returns.
	writeFramedPacket(frame []byte) error
}

// framedCipher is a packetCipher that seals a packet in its frame.
type framedCipher interface {
	packetCipher
	// writeFramedPacket writes frame[framedHead:] as writeCipherPacket
	// writes a packet, framed and sealed in frame's memory, in one Write.
	writeFramedPacket(seqnum uint32, w io.Writer, rand io.Reader, frame []byte) error
}

// writeFramedPacket writes frame[framedHead:] as writePacket does, sealed
// in frame's memory when the cipher can, without a write buffer.
func (t *transport) writeFramedPacket(frame []byte) error {
	c, ok := t.writer.packetCipher.(framedCipher)
	if !ok {
		return t.writePacket(frame[framedHead:])
	}
	if debugTransport {
		t.printPacket(frame[framedHead:], true)
	}
	changeKeys := frame[framedHead] == msgNewKeys
	if err := c.writeFramedPacket(t.writer.seqNum, t.wr, t.rand, frame); err != nil {
		return err
	}
	t.writer.written(changeKeys, t.strictMode)
	return nil
}

func (s *connectionState) writePacket(w *bufio.Writer, rand io.Reader, packet []byte, strictMode bool) error {
	changeKeys := len(packet) > 0 && packet[0] == msgNewKeys

	err := s.packetCipher.writeCipherPacket(s.seqNum, w, rand, packet)
	if err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	s.written(changeKeys, strictMode)
	return err
}

// written counts a packet written; after msgNewKeys, it takes the new keys.
func (s *connectionState) written(changeKeys, strictMode bool) {
	s.seqNum++
	if changeKeys {
		select {
		case cipher := <-s.pendingKeyChange:
			s.packetCipher = cipher
			if strictMode {
				s.seqNum = 0
			}
		default:
			panic("ssh: no key material for msgNewKeys")
		}
	}
}

func newTransport(rwc io.ReadWriteCloser, rand io.Reader, isClient bool) *transport {
	t := &transport{
		head: headReader{r: rwc},
		rd:   rwc,
		wr:   rwc,
		rand: rand,
		reader: connectionState{
			packetCipher:     &streamPacketCipher{cipher: noneCipher{}},
			pendingKeyChange: make(chan packetCipher, 1),
		},
		writer: connectionState{
			packetCipher:     &streamPacketCipher{cipher: noneCipher{}},
			pendingKeyChange: make(chan packetCipher, 1),
		},
		Closer: rwc,
	}
	t.isClient = isClient

	if isClient {
		t.reader.dir = serverKeys
		t.writer.dir = clientKeys
	} else {
		t.reader.dir = clientKeys
		t.writer.dir = serverKeys
	}

	return t
}

type direction struct {
	ivTag     []byte
	keyTag    []byte
	macKeyTag []byte
}

var (
	serverKeys = direction{[]byte{'B'}, []byte{'D'}, []byte{'F'}}
	clientKeys = direction{[]byte{'A'}, []byte{'C'}, []byte{'E'}}
)

// setupKeys sets the cipher and MAC keys from kex.K, kex.H and sessionId, as
// described in RFC 4253, section 6.4. direction should either be serverKeys
// (to setup server->client keys) or clientKeys (for client->server keys).
func newPacketCipher(d direction, algs DirectionAlgorithms, kex *kexResult) (packetCipher, error) {
	cipherMode := cipherModes[algs.Cipher]
	if cipherMode == nil {
		return nil, fmt.Errorf("ssh: unsupported cipher %v", algs.Cipher)
	}

	iv := make([]byte, cipherMode.ivSize)
	key := make([]byte, cipherMode.keySize)

	generateKeyMaterial(iv, d.ivTag, kex)
	generateKeyMaterial(key, d.keyTag, kex)

	var macKey []byte
	if !aeadCiphers[algs.Cipher] {
		macMode := macModes[algs.MAC]
		macKey = make([]byte, macMode.keySize)
		generateKeyMaterial(macKey, d.macKeyTag, kex)
	}

	return cipherModes[algs.Cipher].create(key, iv, macKey, algs)
}

// generateKeyMaterial fills out with key material generated from tag, K, H
// and sessionId, as specified in RFC 4253, section 7.2.
func generateKeyMaterial(out, tag []byte, r *kexResult) {
	var digestsSoFar []byte

	h := r.Hash.New()
	for len(out) > 0 {
		h.Reset()
		h.Write(r.K)
		h.Write(r.H)

		if len(digestsSoFar) == 0 {
			h.Write(tag)
			h.Write(r.SessionID)
		} else {
			h.Write(digestsSoFar)
		}

		digest := h.Sum(nil)
		n := copy(out, digest)
		out = out[n:]
		if len(out) > 0 {
			digestsSoFar = append(digestsSoFar, digest...)
		}
	}
}

const packageVersion = "SSH-2.0-Go"

// Sends and receives a version line.  The versionLine string should
// be US ASCII, start with "SSH-2.0-", and should not include a
// newline. exchangeVersions returns the other side's version line.
func exchangeVersions(rw io.ReadWriter, versionLine []byte) (them []byte, err error) {
	// Contrary to the RFC, we do not ignore lines that don't
	// start with "SSH-2.0-" to make the library usable with
	// nonconforming servers.
	for _, c := range versionLine {
		// The spec disallows non US-ASCII chars, and
		// specifically forbids null chars.
		if c < 32 {
			return nil, errors.New("ssh: junk character in version line")
		}
	}
	if _, err = rw.Write(append(versionLine, '\r', '\n')); err != nil {
		return
	}

	them, err = readVersion(rw)
	return them, err
}

// maxVersionStringBytes is the maximum number of bytes that we'll
// accept as a version string. RFC 4253 section 4.2 limits this at 255
// chars
const maxVersionStringBytes = 255

// maxPreVersionLines is the maximum number of lines sent by the peer
// before the version string. Each of these lines is limited to a maximum
// of maxVersionStringBytes chars. Lines sent before the version string
// are silently ignored.
const maxPreVersionLines = 1024

// Read version string as specified by RFC 4253, section 4.2.
func readVersion(r io.Reader) ([]byte, error) {
	versionString := make([]byte, 0, 64)
	var ok bool
	var buf [1]byte

	for lines := 0; len(versionString) < maxVersionStringBytes && lines < maxPreVersionLines; {
		_, err := io.ReadFull(r, buf[:])
		if err != nil {
			return nil, err
		}
		// The RFC says that the version should be terminated with \r\n
		// but several SSH servers actually only send a \n.
		if buf[0] == '\n' {
			if !bytes.HasPrefix(versionString, []byte("SSH-")) {
				// RFC 4253 says we need to ignore all version string lines
				// except the one containing the SSH version.
				versionString = versionString[:0]
				lines++
				continue
			}
			ok = true
			break
		}

		// non ASCII chars are disallowed, but we are lenient,
		// since Go doesn't use null-terminated strings.

		// The RFC allows a comment after a space, however,
		// all of it (version and comments) goes into the
		// session hash.
		versionString = append(versionString, buf[0])
	}

	if !ok {
		return nil, errors.New("ssh: overflow reading version string")
	}

	// There might be a '\r' on the end which we should remove.
	if len(versionString) > 0 && versionString[len(versionString)-1] == '\r' {
		versionString = versionString[:len(versionString)-1]
	}
	return versionString, nil
}

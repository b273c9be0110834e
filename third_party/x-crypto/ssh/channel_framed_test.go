// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"io"
	"maps"
	mathrand "math/rand"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// patternReader is a deterministic stand-in for the random source, so
// that two writers pad alike.
type patternReader struct{ b byte }

func (r *patternReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.b
		r.b++
	}
	return len(p), nil
}

// TestFramedPacketBytes writes packets of every padding class, of a full
// channel packet and larger, in frames and the old way, with every
// cipher: the bytes on the wire are the same, AES-GCM and
// chacha20-poly1305 write each framed packet in one Write without their
// own buffer, the packets have the length the padding rules give, and they
// read back.
func TestFramedPacketBytes(t *testing.T) {
	var sizes []int
	for n := 1; n <= 40; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 1000, 9+channelMaxPacket, 35000, 100)
	for _, name := range slices.Sorted(maps.Keys(cipherModes)) {
		t.Run(name, func(t *testing.T) {
			algs := DirectionAlgorithms{Cipher: name, MAC: HMACSHA256, compression: compressionNone}
			kr := &kexResult{Hash: crypto.SHA256}
			newCipher := func() packetCipher {
				c, err := newPacketCipher(clientKeys, algs, kr)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			framedConn, oldConn := &chunkConn{}, &chunkConn{}
			framed := newTransport(framedConn, &patternReader{}, true)
			framed.writer.packetCipher = newCipher()
			old := newTransport(oldConn, &patternReader{}, true)
			old.writer.packetCipher = newCipher()
			_, inPlace := framed.writer.packetCipher.(framedCipher)
			if aead := name == CipherAES128GCM || name == CipherAES256GCM || name == CipherChaCha20Poly1305; aead != inPlace {
				t.Fatalf("seals in place: %v, want %v", inPlace, aead)
			}

			var frame []byte
			wire := 0
			for i, n := range sizes {
				p := make([]byte, n)
				rand.Read(p)
				p[0] = msgChannelData
				frame = newFrame(frame, n)
				copy(frame[framedHead:], p)
				if err := framed.writeFramedPacket(frame); err != nil {
					t.Fatal(err)
				}
				if err := old.writePacket(bytes.Clone(p)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(framedConn.out.Bytes(), oldConn.out.Bytes()) {
					t.Fatalf("packet %d (%d bytes): framed and copied packets differ on the wire", i, n)
				}
				if !inPlace {
					continue
				}
				if framedConn.writes != i+1 {
					t.Fatalf("packet %d: %d writes for %d packets", i, framedConn.writes, i+1)
				}
				want := wireLen(n)
				if name == CipherChaCha20Poly1305 {
					pad := 8 - (1+n)%8
					if pad < 4 {
						pad += 8
					}
					want = 4 + 1 + n + pad + 16
				}
				if got := framedConn.out.Len() - wire; got != want {
					t.Fatalf("packet %d (%d bytes): %d bytes on the wire, want %d", i, n, got, want)
				}
				wire += want
			}
			if inPlace {
				switch c := framed.writer.packetCipher.(type) {
				case *gcmCipher:
					if c.buf != nil {
						t.Errorf("the cipher's buffer was used: %d bytes", cap(c.buf))
					}
				case *chacha20Poly1305Cipher:
					if cap(c.buf) != 256 {
						t.Errorf("the cipher's buffer was used: %d bytes", cap(c.buf))
					}
				}
			}

			r := &chunkConn{data: framedConn.out.Bytes(), next: func() int { return 5000 }}
			rt := newTransport(r, rand.Reader, false)
			rt.reader.packetCipher = newCipher()
			for i, n := range sizes {
				p, err := rt.readPacket()
				if err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				if len(p) != n {
					t.Fatalf("packet %d: %d bytes, want %d", i, len(p), n)
				}
			}
		})
	}
}

// heldPipe returns the two ends of a TCP connection that passes through
// a relay in this process: while hold is locked, what the client writes
// does not reach the server.
func heldPipe(t *testing.T) (client, server net.Conn, hold *sync.Mutex) {
	c1, c2, err := netPipe()
	if err != nil {
		t.Fatal(err)
	}
	s1, s2, err := netPipe()
	if err != nil {
		t.Fatal(err)
	}
	hold = new(sync.Mutex)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, 64<<10)
		for {
			n, err := c2.Read(buf)
			if n > 0 {
				hold.Lock()
				_, werr := s1.Write(buf[:n])
				hold.Unlock()
				if werr != nil {
					err = werr
				}
			}
			if err != nil {
				s1.Close()
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		io.Copy(c2, s1)
		c2.Close()
	}()
	t.Cleanup(func() {
		c1.Close()
		s2.Close()
		wg.Wait()
	})
	return c1, s2, hold
}

// writeSplit writes data with WriteBuffers, cut into buffers at odd
// places (an empty one among them now and then).
func writeSplit(t *testing.T, ch *channel, data []byte, ext uint32, rng *mathrand.Rand) {
	t.Helper()
	var bufs [][]byte
	for rest := data; len(rest) > 0; {
		n := min(len(rest), rng.Intn(7000))
		bufs = append(bufs, rest[:n])
		rest = rest[n:]
	}
	n, err := ch.WriteBuffers(bufs, ext)
	if err != nil || n != len(data) {
		t.Fatalf("WriteBuffers of %d bytes: %d, %v", len(data), n, err)
	}
}

// TestChannelDataFramedCiphers relays channel data written with
// WriteBuffers through a client and a server connection with every
// cipher: buffers of every padding class, of a full packet and several,
// cut at odd places; then packets queued during a key exchange (which
// must be copied, since the channel writes its next packet in the same
// frame); then enough to rekey a few times more. Both streams arrive
// whole and in order. With AES-GCM and chacha20-poly1305 the client's
// cipher never used a buffer of its own for channel data: the packets
// were sealed where WriteBuffers built them.
func TestChannelDataFramedCiphers(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(cipherModes)) {
		t.Run(name, func(t *testing.T) {
			testChannelDataFramed(t, name)
		})
	}
}

func testChannelDataFramed(t *testing.T, cipherName string) {
	const rekey = 1 << 20
	cConn, sConn, hold := heldPipe(t)
	algs := Config{Ciphers: []string{cipherName}, MACs: []string{HMACSHA256}, RekeyThreshold: rekey}

	serverConf := &ServerConfig{Config: algs, NoClientAuth: true}
	serverConf.AddHostKey(testSigners["ecdsa"])
	type result struct {
		got [2]bytes.Buffer
		err error
	}
	done := make(chan *result, 1)
	go func() {
		res := new(result)
		defer func() { done <- res }()
		conn, chans, reqs, err := NewServerConn(sConn, serverConf)
		if err != nil {
			res.err = err
			return
		}
		defer conn.Close()
		go DiscardRequests(reqs)
		newCh, ok := <-chans
		if !ok {
			res.err = io.ErrUnexpectedEOF
			return
		}
		ch, chReqs, err := newCh.Accept()
		if err != nil {
			res.err = err
			return
		}
		go DiscardRequests(chReqs)
		buf := make([]byte, 5000)
		for {
			n, ext, err := ch.(*channel).ReadEither(buf)
			res.got[ext].Write(buf[:n])
			if err == io.EOF {
				return
			}
			if err != nil {
				res.err = err
				return
			}
		}
	}()

	clientConf := &ClientConfig{Config: algs, User: "user", HostKeyCallback: InsecureIgnoreHostKey()}
	conn, chans, reqs, err := NewClientConn(cConn, "", clientConf)
	if err != nil {
		t.Fatal(err)
	}
	client := NewClient(conn, chans, reqs)
	defer client.Close()
	sshCh, chReqs, err := client.OpenChannel("framed", nil)
	if err != nil {
		t.Fatal(err)
	}
	go DiscardRequests(chReqs)
	ch := sshCh.(*channel)
	ht := conn.(*connection).transport.(*handshakeTransport)

	rng := mathrand.New(mathrand.NewSource(int64(len(cipherName))))
	var want [2]bytes.Buffer
	write := func(n int) {
		data := make([]byte, n)
		rand.Read(data)
		ext := uint32(rng.Intn(4) / 3) // stderr now and then
		want[ext].Write(data)
		writeSplit(t, ch, data, ext, rng)
	}

	// Every padding class, a packet's worth and more: 420 KiB, less
	// than the rekey threshold.
	for n := 1; n <= 40; n++ {
		write(n)
	}
	maxP := int(ch.maxRemotePayload)
	for _, n := range []int{maxP - 1, maxP, maxP + 1, 3*maxP + 17, 4096, 255, 5*maxP - 3} {
		write(n)
	}
	ht.mu.Lock()
	writer := ht.conn.(*transport).writer.packetCipher
	var copied int
	switch c := writer.(type) {
	case *gcmCipher:
		copied = cap(c.buf)
	case *chacha20Poly1305Cipher:
		copied = cap(c.buf)
	}
	ht.mu.Unlock()
	if copied >= maxP {
		t.Errorf("%T copied channel data into its buffer (%d bytes)", writer, copied)
	}

	// A key exchange that cannot finish while the server receives nothing:
	// what WriteBuffers writes meanwhile is queued.
	hold.Lock()
	ht.requestKeyExchange()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ht.mu.Lock()
		sent := ht.sentInitMsg != nil
		ht.mu.Unlock()
		if sent {
			break
		}
		if time.Now().After(deadline) {
			hold.Unlock()
			t.Fatal("the client sent no kexInit")
		}
		time.Sleep(time.Millisecond)
	}
	for _, n := range []int{3*maxP + 5, 17, maxP, 2*maxP - 1} {
		write(n)
	}
	ht.mu.Lock()
	queued := len(ht.pendingPackets)
	ht.mu.Unlock()
	hold.Unlock()
	if queued < 8 {
		t.Errorf("%d packets queued during the key exchange, want 8", queued)
	}

	// Three times the rekey threshold.
	for sent := 0; sent < 3*rekey; {
		n := 1 + rng.Intn(3*maxP)
		write(n)
		sent += n
	}
	if err := ch.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("server: %v", res.err)
	}
	for ext := range want {
		if !bytes.Equal(res.got[ext].Bytes(), want[ext].Bytes()) {
			t.Errorf("stream %d: got %d bytes, want %d, or different ones", ext, res.got[ext].Len(), want[ext].Len())
		}
	}
}

// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"io"
	mathrand "math/rand"
	"testing"
)

// TestTransportDecryptFromReadBuffer checks the AEAD ciphers' two read
// paths: a packet the read buffer holds whole is checked and decrypted
// from there, a larger one read into its own memory first. Packets of
// every size class, the stream cut every way, come back whole; a packet
// changed on the wire is refused on either path.
func TestTransportDecryptFromReadBuffer(t *testing.T) {
	sizes := []int{1, 40, 5000, 32768, 32768, 32768, 100, 60000, streamReadSize + 1000, 32768, 7, 200000, 32768}
	for _, name := range []string{CipherAES128GCM, CipherChaCha20Poly1305} {
		t.Run(name, func(t *testing.T) {
			algs := DirectionAlgorithms{Cipher: name, compression: compressionNone}
			kr := &kexResult{Hash: crypto.SHA256}
			newCipher := func() packetCipher {
				c, err := newPacketCipher(clientKeys, algs, kr)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			w := &chunkConn{}
			wt := newTransport(w, rand.Reader, true)
			wt.writer.packetCipher = newCipher()
			var want [][]byte
			for _, n := range sizes {
				p := make([]byte, n)
				rand.Read(p)
				p[0] = msgRequestSuccess
				want = append(want, p)
				if err := wt.writePacket(bytes.Clone(p)); err != nil {
					t.Fatal(err)
				}
			}
			wire := w.out.Bytes()

			rng := mathrand.New(mathrand.NewSource(1))
			for cut, next := range map[string]func() int{
				"one byte": func() int { return 1 },
				"random":   func() int { return 1 + rng.Intn(70000) },
				"all":      func() int { return len(wire) },
			} {
				r := &chunkConn{data: bytes.Clone(wire), next: next}
				rt := newTransport(r, rand.Reader, false)
				rt.reader.packetCipher = newCipher()
				peeked := 0
				for i, p := range want {
					if rt.bufReader != nil && rt.bufReader.Size() == streamReadSize && wireLen(len(p)) <= streamReadSize {
						peeked++
					}
					got, err := rt.readPacket()
					if err != nil {
						t.Fatalf("%s: packet %d: %v", cut, i, err)
					}
					if !bytes.Equal(got, p) {
						t.Fatalf("%s: packet %d (%d bytes) came back different (%d bytes)", cut, i, len(p), len(got))
					}
				}
				if _, err := rt.readPacket(); err != io.EOF {
					t.Fatalf("%s: after the last packet: %v, want EOF", cut, err)
				}
				if cut != "all" && peeked == 0 {
					t.Errorf("%s: no packet was decrypted from the stream reader's buffer", cut)
				}
			}

			// A byte changed in the 4th packet (read from the buffer) or
			// in the 10th (larger than the buffer).
			for _, bad := range []int{3, 9} {
				off := 0
				for i := 0; i < bad; i++ {
					off += wireLen(sizes[i])
				}
				tampered := bytes.Clone(wire)
				tampered[off+wireLen(sizes[bad])/2] ^= 1
				r := &chunkConn{data: tampered, next: func() int { return 70000 }}
				rt := newTransport(r, rand.Reader, false)
				rt.reader.packetCipher = newCipher()
				var err error
				for i := 0; i <= bad && err == nil; i++ {
					_, err = rt.readPacket()
				}
				if err == nil || err == io.EOF {
					t.Fatalf("packet %d changed on the wire: read without error", bad)
				}
			}
		})
	}
}

// wireLen is the length on the wire of a packet of n bytes with an AEAD
// cipher (both pad the same way): length, padding length, payload,
// padding to a block, tag.
func wireLen(n int) int {
	const block, tag = 16, 16
	pad := block - (1+n)%block
	if pad < 4 {
		pad += block
	}
	return 4 + 1 + n + pad + tag
}

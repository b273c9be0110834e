// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"bytes"
	"crypto/rand"
	"testing"
)

// newChaChaPair returns two chacha20-poly1305@openssh.com ciphers with the
// same key, one using the AEAD keystream and one the chacha20 package.
func newChaChaPair(t testing.TB) (aead, generic *chacha20Poly1305Cipher) {
	key := make([]byte, 64)
	rand.Read(key)
	a, err := newChaCha20Cipher(key, nil, nil, DirectionAlgorithms{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := newChaCha20Cipher(key, nil, nil, DirectionAlgorithms{})
	if err != nil {
		t.Fatal(err)
	}
	aead, generic = a.(*chacha20Poly1305Cipher), g.(*chacha20Poly1305Cipher)
	if aead.content == nil {
		t.Skip("no ChaCha20-Poly1305 AEAD (FIPS 140-only mode)")
	}
	generic.content = nil
	return aead, generic
}

// TestChaCha20KeystreamPaths checks that both keystream paths put the same
// bytes on the wire and read each other's packets, for payloads of every
// size class, including ones that end inside a ChaCha20 block.
func TestChaCha20KeystreamPaths(t *testing.T) {
	aead, generic := newChaChaPair(t)
	padding := bytes.Repeat([]byte{0x5a}, 1<<20)
	for _, n := range []int{1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 4095, 16384, 32768 - 100, 32768} {
		payload := make([]byte, n)
		rand.Read(payload)
		seq := uint32(n * 7919)
		var wa, wg bytes.Buffer
		if err := aead.writeCipherPacket(seq, &wa, bytes.NewReader(padding), payload); err != nil {
			t.Fatal(err)
		}
		if err := generic.writeCipherPacket(seq, &wg, bytes.NewReader(padding), payload); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(wa.Bytes(), wg.Bytes()) {
			t.Fatalf("payload %d bytes: the two paths wrote different packets", n)
		}
		for _, r := range []*chacha20Poly1305Cipher{aead, generic} {
			in := bytes.NewReader(wa.Bytes())
			got, err := r.readCipherPacket(seq, in)
			if err != nil {
				t.Fatalf("payload %d bytes: %v", n, err)
			}
			if !bytes.Equal(got, payload) {
				t.Fatalf("payload %d bytes: read back different data", n)
			}
		}
		// A flipped bit anywhere is refused before anything is decrypted.
		bad := bytes.Clone(wa.Bytes())
		bad[len(bad)/2] ^= 1
		if _, err := aead.readCipherPacket(seq, bytes.NewReader(bad)); err == nil {
			t.Fatalf("payload %d bytes: corrupted packet accepted", n)
		}
	}
}

func benchmarkChaCha20Packet(b *testing.B, useAEAD bool) {
	w, r := newChaChaPair(b)
	if !useAEAD {
		w, r = r, w
		r.content = nil
	} else {
		r.content = w.content
	}
	payload := make([]byte, 32768)
	var buf bytes.Buffer
	b.SetBytes(int64(len(payload)))
	for i := 0; i < b.N; i++ {
		buf.Reset()
		if err := w.writeCipherPacket(uint32(i), &buf, rand.Reader, payload); err != nil {
			b.Fatal(err)
		}
		if _, err := r.readCipherPacket(uint32(i), &buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChaCha20PacketAEADKeystream(b *testing.B) { benchmarkChaCha20Packet(b, true) }
func BenchmarkChaCha20PacketChaCha20(b *testing.B)      { benchmarkChaCha20Packet(b, false) }

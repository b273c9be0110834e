// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"testing"
)

// TestOwnedPackets checks that ciphers which say they hand out packets of
// their own (the transport then does not copy them) never reuse a
// packet's memory for a later one, and that the AEAD ciphers say so.
func TestOwnedPackets(t *testing.T) {
	for _, name := range []string{CipherAES128GCM, CipherAES256GCM, CipherChaCha20Poly1305} {
		t.Run(name, func(t *testing.T) {
			algs := DirectionAlgorithms{Cipher: name, compression: compressionNone}
			kr := &kexResult{Hash: crypto.SHA256}
			w, err := newPacketCipher(clientKeys, algs, kr)
			if err != nil {
				t.Fatal(err)
			}
			r, err := newPacketCipher(clientKeys, algs, kr)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := r.(ownedPacketCipher); !ok {
				t.Fatalf("%s does not hand out packets of their own", name)
			}
			var wire bytes.Buffer
			var want [][]byte
			for i, n := range []int{32768, 40, 32768, 1} {
				p := bytes.Repeat([]byte{byte(i + 1)}, n)
				want = append(want, p)
				if err := w.writeCipherPacket(uint32(i), &wire, rand.Reader, bytes.Clone(p)); err != nil {
					t.Fatal(err)
				}
			}
			var got [][]byte
			for i := range want {
				p, err := r.readCipherPacket(uint32(i), &wire)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p)
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("packet %d changed after later packets were read", i)
				}
			}
		})
	}
}

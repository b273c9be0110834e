// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package ssh

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// TestChannelReadEither checks that one reader gets both streams of a
// channel, each in order and whole, that data on either stream wakes a
// waiting reader, and that io.EOF comes once both are drained.
func TestChannelReadEither(t *testing.T) {
	w, r, mux := channelPair(t)
	defer w.Close()
	defer r.Close()
	defer mux.Close()

	// A waiting reader wakes for stderr alone, and for stdout alone.
	for _, ext := range []uint32{1, 0} {
		got := make(chan uint32, 1)
		go func() {
			buf := make([]byte, 10)
			_, e, err := r.ReadEither(buf)
			if err != nil {
				t.Errorf("ReadEither: %v", err)
			}
			got <- e
		}()
		if _, err := w.WriteExtended([]byte("x"), ext); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-got:
			if e != ext {
				t.Fatalf("read stream %d, want %d", e, ext)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadEither did not wake for stream %d", ext)
		}
	}

	var want [2]bytes.Buffer
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 200; i++ {
			ext := uint32(i % 3 % 2) // stdout twice as often as stderr
			p := bytes.Repeat([]byte{byte(i)}, 1+i*97%5000)
			want[ext].Write(p)
			if _, err := w.WriteExtended(p, ext); err != nil {
				done <- err
				return
			}
		}
		done <- w.CloseWrite()
	}()

	var got [2]bytes.Buffer
	buf := make([]byte, 3000)
	for {
		n, ext, err := r.ReadEither(buf)
		if err == io.EOF {
			if n != 0 {
				t.Fatalf("io.EOF with %d bytes", n)
			}
			break
		}
		if err != nil {
			t.Fatalf("ReadEither: %v", err)
		}
		got[ext].Write(buf[:n])
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for ext := range got {
		if !bytes.Equal(got[ext].Bytes(), want[ext].Bytes()) {
			t.Errorf("stream %d: got %d bytes, want %d, or different ones", ext, got[ext].Len(), want[ext].Len())
		}
	}
	// After EOF: io.EOF again, and nothing from either stream's Read.
	if _, _, err := r.ReadEither(buf); err != io.EOF {
		t.Errorf("second ReadEither after EOF: %v", err)
	}
	if n, err := r.Stderr().Read(buf); n != 0 || err != io.EOF {
		t.Errorf("Stderr().Read after EOF: %d, %v", n, err)
	}
}

package gateway

import (
	"bytes"
	"encoding/binary"
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// kexHeader is the start of a binary packet: length, padding, message.
func kexHeader(length uint32, padding, msg byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, length)
	return append(b, padding, msg)
}

func TestParseHello(t *testing.T) {
	kexinit := kexHeader(1500, 8, msgKexInit)
	for _, tc := range []struct {
		name string
		in   string
		want helloVerdict
	}{
		{"OpenSSH", "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n" + string(kexinit), helloOK},
		{"bare LF, no comment", "SSH-2.0-Go\n" + string(kexinit), helloOK},
		{"1.99 means 2.0", "SSH-1.99-PuTTY_Release_0.78\r\n" + string(kexinit), helloOK},
		{"dash in the version (JSch)", "SSH-2.0-JSCH-0.1.54\r\n" + string(kexinit), helloOK},
		{"nothing yet", "", helloMore},
		{"prefix so far", "SS", helloMore},
		{"version, no KEXINIT yet", "SSH-2.0-OpenSSH_9.2\r\n", helloMore},
		{"half a header", "SSH-2.0-x\r\n\x00\x00\x05", helloMore},
		{"HTTP", "GET / HTTP/1.1\r\n", helloBad},
		{"first byte wrong", "X", helloBad},
		{"SSH-1.5", "SSH-1.5-old\r\n" + string(kexinit), helloBad},
		{"empty software version", "SSH-2.0-\r\n" + string(kexinit), helloBad},
		{"space for a version", "SSH-2.0- comment\r\n" + string(kexinit), helloBad},
		{"control character", "SSH-2.0-x\x01y\r\n" + string(kexinit), helloBad},
		{"NUL", "SSH-2.0-x\x00\r\n" + string(kexinit), helloBad},
		{"too long, no line end", "SSH-2.0-" + strings.Repeat("a", 300), helloBad},
		{"too long with a line end", "SSH-2.0-" + strings.Repeat("a", 260) + "\r\n" + string(kexinit), helloBad},
		{"not a KEXINIT", "SSH-2.0-x\r\n" + string(kexHeader(1500, 8, 21)), helloBad},
		{"tiny packet", "SSH-2.0-x\r\n" + string(kexHeader(10, 4, msgKexInit)), helloBad},
		{"huge packet", "SSH-2.0-x\r\n" + string(kexHeader(1<<24, 4, msgKexInit)), helloBad},
		{"short padding", "SSH-2.0-x\r\n" + string(kexHeader(1500, 3, msgKexInit)), helloBad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseHello([]byte(tc.in)); got != tc.want {
				t.Fatalf("parseHello(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// helloConn sees the hello however the bytes are split into reads, calls
// its func once, and passes every byte through unchanged.
func TestHelloConnSplitReads(t *testing.T) {
	msg := append([]byte("SSH-2.0-OpenSSH_9.2\r\n"), kexHeader(1500, 8, msgKexInit)...)
	msg = append(msg, bytes.Repeat([]byte{7}, 100)...)
	for _, chunk := range []int{1, 2, 7, 1000} {
		a, b := net.Pipe()
		var calls atomic.Int32
		h := &helloConn{Conn: a, fn: func() { calls.Add(1) }}
		go func() {
			for i := 0; i < len(msg); i += chunk {
				b.Write(msg[i:min(i+chunk, len(msg))])
			}
			b.Close()
		}()
		var got []byte
		buf := make([]byte, 3)
		for {
			n, err := h.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		a.Close()
		if !bytes.Equal(got, msg) || calls.Load() != 1 {
			t.Fatalf("chunks of %d: %d bytes passed (want %d), fn called %d times", chunk, len(got), len(msg), calls.Load())
		}
	}
}

func FuzzParseHello(f *testing.F) {
	f.Add([]byte("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n\x00\x00\x05\xdc\x08\x14"))
	f.Add([]byte("SSH-2.0-x\n\x00\x00\x00\x43\x04\x14"))
	f.Add([]byte("GET / HTTP/1.0\r\n\r\n"))
	f.Add([]byte("SSH-2.0-" + strings.Repeat("a", 250) + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v := parseHello(b)
		if v != helloOK {
			return
		}
		end := bytes.IndexByte(b, '\n')
		if !bytes.HasPrefix(b, []byte("SSH-")) || end < 0 || end >= maxIdentLen || len(b) < end+7 || b[end+6] != msgKexInit {
			t.Fatalf("accepted %q", b)
		}
		// A verdict never changes with more bytes.
		if parseHello(append(b, 'x')) != helloOK {
			t.Fatalf("verdict changed by a later byte: %q", b)
		}
	})
}

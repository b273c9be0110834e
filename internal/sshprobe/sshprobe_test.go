package sshprobe

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// banner serves line to every connection and hangs up.
func banner(t *testing.T, line string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(line))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func TestProbe(t *testing.T) {
	ctx := t.Context()
	if err := Probe(ctx, banner(t, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"), time.Second); err != nil {
		t.Errorf("real banner: %v", err)
	}
	if err := Probe(ctx, banner(t, "hello\r\nSSH-2.0-x\r\n"), time.Second); err != nil {
		t.Errorf("banner after other lines: %v", err)
	}
	if err := Probe(ctx, banner(t, "HTTP/1.1 400 Bad Request\r\n"), time.Second); !errors.Is(err, ErrNoBanner) {
		t.Errorf("http: %v", err)
	}
	if err := Probe(ctx, banner(t, "SSH-1.5-old\r\n"), time.Second); !errors.Is(err, ErrNoBanner) {
		t.Errorf("ssh1: %v", err)
	}
	// A listener that never writes: the timeout decides.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	if err := Probe(ctx, ln.Addr().String(), 200*time.Millisecond); err == nil {
		t.Error("silent server accepted")
	}
	if time.Since(start) > 2*time.Second {
		t.Error("timeout not honoured")
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := Probe(ctx, addr, time.Second); err == nil {
		t.Error("closed port accepted")
	}
}

package slowlink

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echo serves one line back per line, until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn) (time.Duration, error) {
	start := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := bufio.NewReader(c).ReadString('\n')
	return time.Since(start), err
}

func TestDelayAndDown(t *testing.T) {
	l, err := Start(echo(t), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if d, err := roundTrip(c); err != nil || d < 100*time.Millisecond || d > 2*time.Second {
		t.Fatalf("round trip with 100ms delay: %v, %v", d, err)
	}
	l.SetDelay(0)
	if d, err := roundTrip(c); err != nil || d > 90*time.Millisecond {
		t.Fatalf("round trip without delay: %v, %v", d, err)
	}
	l.SetDown(true)
	if _, err := roundTrip(c); err == nil {
		t.Fatal("an open connection survived SetDown")
	}
	if c2, err := net.Dial("tcp", l.Addr()); err == nil {
		if _, err := roundTrip(c2); err == nil {
			t.Fatal("a new connection was relayed while down")
		}
		c2.Close()
	}
	l.SetDown(false)
	c3, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if _, err := roundTrip(c3); err != nil {
		t.Fatalf("after coming back: %v", err)
	}
}

package proxy

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
)

// sshPair connects an in-process x/crypto client and server (connPair)
// and returns the client's connection and channels and the server's side.
func sshPair(t *testing.T) (client ssh.Conn, clientChans <-chan ssh.NewChannel, server Side) {
	t.Helper()
	c, s := connPair(t)
	go ssh.DiscardRequests(c.Reqs)
	return c.Conn, c.Chans, s
}

// channelPair returns both ends of a session channel between an in-process
// x/crypto client and server.
func channelPair(t *testing.T) (client, server ssh.Channel) {
	t.Helper()
	c, s := connPair(t)
	go ssh.DiscardRequests(c.Reqs)
	go ssh.DiscardRequests(s.Reqs)
	go func() {
		for nc := range c.Chans {
			nc.Reject(ssh.Prohibited, "no")
		}
	}()
	srv := make(chan ssh.Channel, 1)
	go func() {
		nc := <-s.Chans
		ch, creqs, err := nc.Accept()
		if err != nil {
			t.Errorf("accept: %v", err)
			close(srv)
			return
		}
		go ssh.DiscardRequests(creqs)
		srv <- ch
	}()
	ch, creqs, err := c.Conn.OpenChannel(chanSession, nil)
	if err != nil {
		t.Fatal(err)
	}
	go ssh.DiscardRequests(creqs)
	sch, ok := <-srv
	if !ok {
		t.FailNow()
	}
	return ch, sch
}

// TestRelayChannel relays a channel's stdout and stderr with one goroutine
// and no copy (x/crypto patches 0008-0010). A channel x/crypto opens must
// offer the buffer methods: without them the relay falls back to copying,
// with a goroutine per stream, which the idle-session and throughput
// figures would show but no other test.
func TestRelayChannel(t *testing.T) {
	for _, stderr := range []bool{true, false} {
		t.Run(fmt.Sprintf("stderr=%v", stderr), func(t *testing.T) {
			// node → gateway: src; gateway → client: dst.
			nodeEnd, gwUp := channelPair(t)
			gwDown, clientEnd := channelPair(t)
			dst, src, ok := buffered(gwDown, gwUp)
			if !ok {
				t.Fatalf("x/crypto's channel (%T) has no ReadBuffers/WriteBuffers: are patches 0008-0010 applied?", gwUp)
			}
			var counter atomic.Int64
			done := make(chan error, 1)
			go func() {
				_, err := relayChannel(dst, src, stderr, &counter)
				gwDown.CloseWrite()
				done <- err
			}()
			// Writes of odd sizes, so that packets are cut everywhere.
			out, errOut := bytes.Repeat([]byte("out "), 50000), bytes.Repeat([]byte("err "), 20000)
			go func() {
				for i := 0; i < 10; i++ {
					nodeEnd.Write(out[i*20000 : (i+1)*20000])
					nodeEnd.Stderr().Write(errOut[i*8000 : (i+1)*8000])
				}
				nodeEnd.CloseWrite()
			}()
			var gotErr []byte
			stderrDone := make(chan struct{})
			go func() {
				gotErr, _ = io.ReadAll(clientEnd.Stderr())
				close(stderrDone)
			}()
			gotOut, err := io.ReadAll(clientEnd)
			if err != nil {
				t.Fatal(err)
			}
			<-stderrDone
			if err := <-done; err != nil {
				t.Fatalf("relayChannel: %v", err)
			}
			wantErr := errOut
			if !stderr {
				// Dropped: only a session's stderr is passed on.
				wantErr = nil
			}
			if !bytes.Equal(gotOut, out) || !bytes.Equal(gotErr, wantErr) {
				t.Fatalf("stdout %d/%d bytes, stderr %d/%d bytes, or different ones", len(gotOut), len(out), len(gotErr), len(wantErr))
			}
			if got, want := counter.Load(), int64(len(out)+len(wantErr)); got != want {
				t.Fatalf("counted %d bytes, relayed %d", got, want)
			}
		})
	}
}

// TestCopyData is the relay without patch 0010, through buffers: what
// another ssh.Channel implementation would get.
func TestCopyData(t *testing.T) {
	nodeEnd, gwUp := channelPair(t)
	gwDown, clientEnd := channelPair(t)
	var counter atomic.Int64
	done := make(chan error, 1)
	go func() {
		_, err := copyData(gwDown, struct{ io.Reader }{gwUp}, &counter)
		gwDown.CloseWrite()
		done <- err
	}()
	// A trickle first (small buffer), then bulk (large), then a trickle.
	want := append(append([]byte("ls\n"), bytes.Repeat([]byte("data"), 100000)...), "exit\n"...)
	go func() {
		nodeEnd.Write(want[:3])
		nodeEnd.Write(want[3 : len(want)-5])
		nodeEnd.Write(want[len(want)-5:])
		nodeEnd.CloseWrite()
	}()
	got, err := io.ReadAll(clientEnd)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("copyData: %v", err)
	}
	if !bytes.Equal(got, want) || counter.Load() != int64(len(want)) {
		t.Fatalf("relayed %d of %d bytes (counted %d), or different ones", len(got), len(want), counter.Load())
	}
}

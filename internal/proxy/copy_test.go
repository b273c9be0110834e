package proxy

import (
	"bytes"
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

// TestCopyBoth relays a channel's stdout and stderr with one goroutine
// (x/crypto patch 0008). A channel x/crypto opens must offer ReadEither:
// without it the relay falls back to a goroutine per stream, which the
// idle-session figures would show but no other test.
func TestCopyBoth(t *testing.T) {
	// node → gateway: src; gateway → client: dst.
	nodeEnd, gwUp := channelPair(t)
	gwDown, clientEnd := channelPair(t)
	src, ok := gwUp.(eitherReader)
	if !ok {
		t.Fatalf("x/crypto's channel (%T) has no ReadEither: is patch 0008 applied?", gwUp)
	}
	var counter atomic.Int64
	done := make(chan error, 1)
	go func() {
		_, err := copyBoth(gwDown, src, &counter)
		gwDown.CloseWrite()
		done <- err
	}()
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
		t.Fatalf("copyBoth: %v", err)
	}
	if !bytes.Equal(gotOut, out) || !bytes.Equal(gotErr, errOut) {
		t.Fatalf("stdout %d/%d bytes, stderr %d/%d bytes, or different ones", len(gotOut), len(out), len(gotErr), len(errOut))
	}
	if got, want := counter.Load(), int64(len(out)+len(errOut)); got != want {
		t.Fatalf("counted %d bytes, relayed %d", got, want)
	}
}

package proxy

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
)

// sshPair connects an in-process x/crypto client and server over loopback
// TCP and returns both ends.
func sshPair(t *testing.T) (client ssh.Conn, clientChans <-chan ssh.NewChannel, server Side) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	sc := &ssh.ServerConfig{NoClientAuth: true}
	sc.AddHostKey(signer)
	// TCP on loopback: net.Pipe has no buffer, and both sides of an SSH
	// handshake write their version first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		side Side
		err  error
	}
	srv := make(chan result, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			srv <- result{err: err}
			return
		}
		c, chans, reqs, err := ssh.NewServerConn(nc, sc)
		srv <- result{Side{Conn: c, Chans: chans, Reqs: reqs}, err}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, chans, reqs, err := ssh.NewClientConn(nc, ln.Addr().String(), &ssh.ClientConfig{User: "u", HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	if err != nil {
		t.Fatal(err)
	}
	go ssh.DiscardRequests(reqs)
	r := <-srv
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { c.Close(); r.side.Conn.Close() })
	return c, chans, r.side
}

// channelPair returns both ends of a session channel between an in-process
// x/crypto client and server.
func channelPair(t *testing.T) (client, server ssh.Channel) {
	t.Helper()
	conn, chans, srv := sshPair(t)
	go ssh.DiscardRequests(srv.Reqs)
	go func() {
		for nc := range chans {
			nc.Reject(ssh.Prohibited, "no")
		}
	}()
	accepted := make(chan ssh.Channel, 1)
	go func() {
		defer close(accepted)
		nc, ok := <-srv.Chans
		if !ok {
			return
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		go ssh.DiscardRequests(creqs)
		accepted <- ch
	}()
	ch, creqs, err := conn.OpenChannel(chanSession, nil)
	if err != nil {
		t.Fatal(err)
	}
	go ssh.DiscardRequests(creqs)
	s, ok := <-accepted
	if !ok {
		t.FailNow()
	}
	return ch, s
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

package proxy

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
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

// MaxChannels caps the channels open at once on a relayed connection: one
// more is refused with a resource shortage (the node never sees it), and
// once one closes the next opens.
func TestMaxChannels(t *testing.T) {
	const max = 3
	user, _, down := sshPair(t) // the client and the gateway's server side
	up, nodeChans, node := sshPair(t)
	go ssh.DiscardRequests(node.Reqs)
	opened := make(chan struct{}, 100)
	go func() { // the node accepts every channel and holds it
		for nc := range node.Chans {
			ch, reqs, err := nc.Accept()
			if err != nil {
				return
			}
			go ssh.DiscardRequests(reqs)
			go io.Copy(io.Discard, ch)
			opened <- struct{}{}
		}
	}()
	r := &Relay{Down: down, Up: Side{Conn: up, Chans: nodeChans, Reqs: nil}, Rights: policy.Rights{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxChannels: max}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()

	var chans []ssh.Channel
	for i := range max {
		ch, reqs, err := user.OpenChannel("session", nil)
		if err != nil {
			t.Fatalf("channel %d of %d: %v", i+1, max, err)
		}
		go ssh.DiscardRequests(reqs)
		chans = append(chans, ch)
		<-opened
	}
	_, _, err := user.OpenChannel("session", nil)
	var oe *ssh.OpenChannelError
	if !errors.As(err, &oe) || oe.Reason != ssh.ResourceShortage {
		t.Fatalf("channel %d: %v, want a resource shortage", max+1, err)
	}
	if len(opened) != 0 {
		t.Fatalf("the refused channel reached the node")
	}
	chans[0].Close()
	// Its slot comes back once the relay has closed both ends.
	for deadline := time.Now().Add(10 * time.Second); ; {
		ch, reqs, err := user.OpenChannel("session", nil)
		if err == nil {
			go ssh.DiscardRequests(reqs)
			ch.Close()
			break
		}
		if !errors.As(err, &oe) || oe.Reason != ssh.ResourceShortage || time.Now().After(deadline) {
			t.Fatalf("after a close: %v", err)
		}
	}
	user.Close()
	if err := <-done; err != nil {
		t.Errorf("relay: %v", err)
	}
}

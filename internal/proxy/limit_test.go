package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
)

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

package proxy

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// connPair is an SSH connection over loopback TCP: the client's end and the
// server's, each with its channels and requests.
func connPair(t *testing.T) (client, server Side) {
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
	c2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c1, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c1.Close(); c2.Close() })
	srv := make(chan Side, 1)
	go func() {
		conn, chans, reqs, err := ssh.NewServerConn(c1, sc)
		if err != nil {
			t.Errorf("server: %v", err)
			close(srv)
			return
		}
		srv <- Side{Conn: conn, Chans: chans, Reqs: reqs}
	}()
	conn, chans, reqs, err := ssh.NewClientConn(c2, "pipe", &ssh.ClientConfig{User: "u", HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := <-srv
	if !ok {
		t.FailNow()
	}
	return Side{Conn: conn, Chans: chans, Reqs: reqs}, s
}

// fakeNode accepts session channels and says yes to every request,
// writing nothing: a shell that waits.
func fakeNode(node Side) {
	go ssh.DiscardRequests(node.Reqs)
	for nc := range node.Chans {
		ch, reqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer ch.Close()
			for req := range reqs {
				if req.WantReply {
					req.Reply(true, nil)
				}
			}
		}()
	}
}

// lockedBuffer collects a channel's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Notices reach interactive sessions (a pty and a shell) on their own line,
// and never a command's streams; Close tells the reason, then ends the
// connection.
func TestNotices(t *testing.T) {
	client, down := connPair(t)
	up, node := connPair(t)
	go fakeNode(node)
	go ssh.DiscardRequests(client.Reqs)
	r := &Relay{Down: down, Up: up, Log: slog.New(slog.DiscardHandler)}
	ran := make(chan error, 1)
	go func() { ran <- r.Run(context.Background()) }()

	open := func(interactive bool) *lockedBuffer {
		ch, reqs, err := client.Conn.OpenChannel(chanSession, nil)
		if err != nil {
			t.Fatal(err)
		}
		go ssh.DiscardRequests(reqs)
		out := &lockedBuffer{}
		go io.Copy(out, ch.Stderr())
		go io.Copy(io.Discard, ch)
		if interactive {
			if ok, err := ch.SendRequest("pty-req", true, ssh.Marshal(struct {
				Term         string
				W, H, PW, PH uint32
				Modes        string
			}{Term: "xterm", W: 80, H: 24})); !ok || err != nil {
				t.Fatalf("pty-req: %v %v", ok, err)
			}
			if ok, err := ch.SendRequest("shell", true, nil); !ok || err != nil {
				t.Fatalf("shell: %v %v", ok, err)
			}
		} else if ok, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ Cmd string }{"sftp-server"})); !ok || err != nil {
			t.Fatalf("exec: %v %v", ok, err)
		}
		return out
	}
	shell, command := open(true), open(false)

	waitFor(t, "the shell to count as interactive", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.interactive) == 1
	})
	if n := r.Notify("this gateway is being upgraded\n(sessions go on)"); n != 1 {
		t.Fatalf("Notify wrote to %d sessions, want 1", n)
	}
	want := "\r\nfrontdoor: this gateway is being upgraded (sessions go on)\r\n"
	waitFor(t, fmt.Sprintf("%q on the shell's stderr", want), func() bool { return shell.String() == want })

	r.Close("gateway shutting down")
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Close")
	}
	waitFor(t, "the reason", func() bool {
		return shell.String() == want+"\r\nfrontdoor: closing this session: gateway shutting down\r\n"
	})
	if s := command.String(); s != "" {
		t.Fatalf("a command's stderr got %q", s)
	}
	if err := client.Conn.Wait(); err == nil {
		t.Fatal("client connection still open")
	}
}

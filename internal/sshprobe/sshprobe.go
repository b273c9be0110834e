// Package sshprobe checks that an SSH server answers: it reads the
// server's identification line and hangs up. The agent probes its own
// node's sshd with it, and a gateway probes login nodes that have no
// agent. A probe sends nothing and authenticates nothing.
package sshprobe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// ErrNoBanner means something answered on the address but did not speak
// SSH 2.
var ErrNoBanner = errors.New("no SSH-2.0 banner")

// Probe dials addr and reads the server's identification line, within
// timeout. A server may send other lines first (RFC 4253 §4.2); at most
// 4 KiB are read.
func Probe(ctx context.Context, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("probe sshd %s: %w", addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("probe sshd %s: %w", addr, err)
	}
	r := bufio.NewReader(io.LimitReader(conn, 4096))
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "SSH-2.0-") || strings.HasPrefix(line, "SSH-1.99-") {
			return nil
		}
		if strings.HasPrefix(line, "SSH-") {
			return fmt.Errorf("probe sshd %s: %q: %w", addr, strings.TrimSpace(line), ErrNoBanner)
		}
		if err != nil {
			return fmt.Errorf("probe sshd %s: %w: %w", addr, ErrNoBanner, err)
		}
	}
}

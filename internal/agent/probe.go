package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNoBanner means something answered on the sshd address but did not
// speak SSH 2.
var ErrNoBanner = errors.New("no SSH-2.0 banner")

// ProbeSSHD dials addr and reads the server's identification line. A
// server may send other lines first (RFC 4253 §4.2); at most 4 KiB are read.
func ProbeSSHD(ctx context.Context, addr string, timeout time.Duration) error {
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

// Drain marks the node draining by creating the drain file; the note
// (who and why) is kept in it for operators.
func Drain(path, note string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	body := fmt.Sprintf("%s %s\n", time.Now().UTC().Format(time.RFC3339), note)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}

// Undrain removes the drain file; undraining a node that is not drained is
// not an error.
func Undrain(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("undrain: %w", err)
	}
	return nil
}

// Drained reports whether the drain file exists.
func Drained(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

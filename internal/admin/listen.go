package admin

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// MaxSocketPath is the longest Unix socket path Linux accepts (sun_path
// holds 108 bytes with the terminating NUL).
const MaxSocketPath = config.MaxSocketPath

// ListenUnix listens on a Unix socket at path that only this process's
// user (and root) may connect to:
//   - a missing parent directory is created mode 0700; an existing one
//     that group or others may write to is refused (they could replace
//     the socket);
//   - a socket already at path is removed only if nothing answers on it
//     (a stale one from a crash); a live one is refused, as is anything at
//     path that is not a socket — a typo must never delete a file;
//   - the socket is created mode 0600 atomically: the mode is set on the
//     socket before bind, so there is no moment at which another user
//     could connect.
//
// Closing the listener removes the socket, if it is still the one this
// call created.
func ListenUnix(path string) (net.Listener, error) {
	if len(path) > MaxSocketPath {
		return nil, fmt.Errorf("admin socket %s: path longer than %d bytes", path, MaxSocketPath)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("admin socket directory: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("admin socket directory: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("admin socket directory %s is not a directory", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return nil, fmt.Errorf("admin socket directory %s is mode %04o: group or others could replace the socket (chmod go-w)", dir, fi.Mode().Perm())
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	// Linux takes a Unix socket's file mode at bind from the socket's own
	// inode (less the umask): set it first, and the file never exists with
	// a wider mode.
	if err := unix.Fchmod(fd, 0o600); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("admin socket: fchmod: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("admin socket %s: bind: %w", path, err)
	}
	if err := unix.Listen(fd, 64); err != nil {
		unix.Close(fd)
		os.Remove(path)
		return nil, fmt.Errorf("admin socket %s: listen: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	ln, err := net.FileListener(f)
	f.Close() // FileListener holds its own descriptor
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	// A umask may have taken owner bits away; adding them back widens
	// nothing.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	created, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	return &unixListener{Listener: ln, path: path, created: created}, nil
}

// removeStale clears path for a new socket: nothing there, or a socket
// nobody answers on.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("admin socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("admin socket %s: exists and is not a socket (%s); refusing to replace it", path, fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("admin socket %s: another process is serving it (a second gateway with the same admin_socket?)", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("admin socket %s: cannot tell whether it is stale: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("admin socket %s: removing the stale socket: %w", path, err)
	}
	return nil
}

// unixListener removes its socket on Close, unless something else has
// replaced it meanwhile.
type unixListener struct {
	net.Listener
	path    string
	created os.FileInfo
	once    sync.Once
}

func (l *unixListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() {
		if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.created) {
			os.Remove(l.path)
		}
	})
	return err
}

// TLSFiles name the admin API's TLS material.
type TLSFiles struct {
	Cert, Key string // server certificate and key (PEM)
	ClientCA  string // CA bundle client certificates must chain to; empty: no mutual TLS
}

// TLSConfig builds the server side of the admin API's TLS. With a client
// CA, a client certificate is verified against it; requireClientCert
// (no bearer tokens configured) makes one mandatory at the handshake.
func TLSConfig(f TLSFiles, requireClientCert bool) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("admin TLS: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.ClientCA != "" {
		pem, err := os.ReadFile(f.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("admin TLS client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("admin TLS client CA %s: no PEM certificates", f.ClientCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if requireClientCert {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return cfg, nil
}

// CertHosts are the names and addresses the TLS certificate is for: they
// belong on the Host allow-list.
func CertHosts(cfg *tls.Config) []string {
	var out []string
	for _, c := range cfg.Certificates {
		leaf := c.Leaf
		if leaf == nil && len(c.Certificate) > 0 {
			leaf, _ = x509.ParseCertificate(c.Certificate[0])
		}
		if leaf == nil {
			continue
		}
		out = append(out, leaf.DNSNames...)
		for _, ip := range leaf.IPAddresses {
			out = append(out, ip.String())
		}
	}
	return out
}

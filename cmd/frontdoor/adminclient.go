package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// adminTarget is where and how the admin commands reach a gateway's admin
// API: its Unix socket (the default; the kernel tells the gateway who we
// are), or an http(s) URL with a bearer token and/or a client certificate.
type adminTarget struct {
	addr      string // socket path, URL, or legacy host:port
	tokenFile string
	caFile    string // verifies an https gateway
	certFile  string // client certificate (mutual TLS)
	keyFile   string
}

// adminFlags are the flags every admin command takes: where the gateway
// is, the credential, and -o table|json.
func adminFlags(name string) (*flag.FlagSet, *adminTarget, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	a := &adminTarget{}
	fs.StringVar(&a.addr, "admin", envOr("FRONTDOOR_ADMIN", config.DefaultAdminSocket),
		"the gateway's admin socket path, or an http(s):// URL (env FRONTDOOR_ADMIN)")
	fs.StringVar(&a.tokenFile, "admin-token-file", os.Getenv("FRONTDOOR_ADMIN_TOKEN_FILE"),
		"file holding a bearer token for an http(s) admin URL (env FRONTDOOR_ADMIN_TOKEN_FILE; or the token itself in FRONTDOOR_ADMIN_TOKEN)")
	fs.StringVar(&a.caFile, "admin-ca", "", "CA bundle to verify an https admin URL (default: the system's)")
	fs.StringVar(&a.certFile, "admin-cert", "", "client certificate for mutual TLS")
	fs.StringVar(&a.keyFile, "admin-key", "", "client certificate key for mutual TLS")
	return fs, a, outputFlag(fs, tableJSON...)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// socket reports whether addr names a Unix socket rather than a URL or a
// host:port.
func (a *adminTarget) socket() bool {
	if strings.Contains(a.addr, "://") {
		return false
	}
	return strings.HasPrefix(a.addr, "/") || strings.HasPrefix(a.addr, ".") || strings.HasSuffix(a.addr, ".sock") ||
		!strings.Contains(a.addr, ":")
}

// base is the URL requests go to (http://localhost over the socket).
func (a *adminTarget) base() (*url.URL, error) {
	if a.socket() {
		return &url.URL{Scheme: "http", Host: "localhost"}, nil
	}
	raw := a.addr
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw // host:port, as earlier versions took it
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--admin %q: want a socket path or an http(s)://host:port URL", a.addr)
	}
	return u, nil
}

// token is the bearer token for a URL: --admin-token-file, else
// FRONTDOOR_ADMIN_TOKEN.
func (a *adminTarget) token() (string, error) {
	if a.tokenFile != "" {
		b, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return "", fmt.Errorf("admin token: %w", err)
		}
		// The first non-comment line; a gateway's own "NAME SECRET" file
		// is not this (the client holds one secret).
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if strings.ContainsAny(line, " \t") {
				return "", fmt.Errorf("admin token file %s: want the token alone on a line (not the gateway's NAME SECRET list)", a.tokenFile)
			}
			return line, nil
		}
		return "", fmt.Errorf("admin token file %s: empty", a.tokenFile)
	}
	return strings.TrimSpace(os.Getenv("FRONTDOOR_ADMIN_TOKEN")), nil
}

func (a *adminTarget) client() (*http.Client, error) {
	tr := &http.Transport{ResponseHeaderTimeout: 30 * time.Second, DisableKeepAlives: true}
	if a.socket() {
		path := a.addr
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		return &http.Client{Transport: tr}, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.caFile != "" {
		pem, err := os.ReadFile(a.caFile)
		if err != nil {
			return nil, fmt.Errorf("admin CA: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("admin CA %s: no PEM certificates", a.caFile)
		}
	}
	if a.certFile != "" || a.keyFile != "" {
		c, err := tls.LoadX509KeyPair(a.certFile, a.keyFile)
		if err != nil {
			return nil, fmt.Errorf("admin client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	tr.TLSClientConfig = tc
	return &http.Client{Transport: tr}, nil
}

// do sends one request and returns the response body of a 200, or an
// error that says what to do about it.
func (a *adminTarget) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u, err := a.base()
	if err != nil {
		return nil, err
	}
	hc, err := a.client()
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String()+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if !a.socket() {
		tok, err := a.token()
		if err != nil {
			return nil, err
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, a.explainDialError(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("admin API: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return b, nil
	case http.StatusUnauthorized:
		return nil, fmt.Errorf("admin API %s: %s: %s (an http(s) admin URL needs credentials: --admin-token-file FILE or FRONTDOOR_ADMIN_TOKEN, or --admin-cert/--admin-key; or use the gateway's socket with --admin PATH)",
			path, resp.Status, oneLine(string(b)))
	case http.StatusForbidden:
		return nil, fmt.Errorf("admin API %s: %s: %s (a read-only token or certificate may only look; a certificate must be on the gateway's admin_client_names)",
			path, resp.Status, oneLine(string(b)))
	default:
		return nil, fmt.Errorf("admin API %s: %s: %s", path, resp.Status, oneLine(string(b)))
	}
}

// explainDialError turns a failed connection into advice.
func (a *adminTarget) explainDialError(err error) error {
	if !a.socket() {
		return fmt.Errorf("admin API %s: %w", a.addr, err)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("admin socket %s does not exist: is the gateway running here, with gateway.admin_socket at this path? (--admin PATH or FRONTDOOR_ADMIN)", a.addr)
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EACCES):
		return fmt.Errorf("admin socket %s: permission denied: it is mode 0600, for the gateway's own user; run this as that user or as root (sudo)", a.addr)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("admin socket %s: nobody answers (a stale socket: the gateway is not running)", a.addr)
	}
	return fmt.Errorf("admin socket %s: %w", a.addr, err)
}

// get fetches path into v, or copies it raw to w.
func (a *adminTarget) get(ctx context.Context, path string, v any, raw io.Writer) error {
	b, err := a.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if raw != nil {
		_, err := raw.Write(b)
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("admin API %s: %w", path, err)
	}
	return nil
}

// post sends a JSON body and decodes the JSON answer into v.
func (a *adminTarget) post(ctx context.Context, path string, body []byte, v any) error {
	b, err := a.do(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("admin API %s: %w", path, err)
	}
	return nil
}

package ca

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func certOf(t *testing.T, s ssh.Signer) *ssh.Certificate {
	t.Helper()
	cert, ok := s.PublicKey().(*ssh.Certificate)
	if !ok {
		t.Fatalf("not a certificate: %T", s.PublicKey())
	}
	return cert
}

// Every certificate carries a source-address: the address the gateway
// dialled the node from (as the node sees it: IPv4 unmapped, no IPv6
// zone), or the configured list; without either nothing is minted.
func TestSourceAddress(t *testing.T) {
	c, _ := newCA(t)
	for _, tt := range []struct {
		name  string
		fixed []string
		src   netip.Addr
		want  string // "" = refused with ErrNoSource
	}{
		{"ipv4", nil, netip.MustParseAddr("10.0.0.10"), "10.0.0.10"},
		{"ipv4-mapped", nil, netip.MustParseAddr("::ffff:10.0.0.10"), "10.0.0.10"},
		{"ipv6", nil, netip.MustParseAddr("2001:db8::10"), "2001:db8::10"},
		{"ipv6 zone", nil, netip.MustParseAddr("fe80::1%eth0"), "fe80::1"},
		{"loopback", nil, netip.MustParseAddr("127.0.0.1"), "127.0.0.1"},
		{"none", nil, netip.Addr{}, ""},
		{"unspecified", nil, netip.IPv4Unspecified(), ""},
		{"unspecified6", nil, netip.IPv6Unspecified(), ""},
		{"fixed", []string{"192.0.2.1", "198.51.100.0/24"}, netip.MustParseAddr("10.0.0.10"), "192.0.2.1,198.51.100.0/24"},
		{"fixed, no source", []string{"192.0.2.1"}, netip.Addr{}, "192.0.2.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c.fixedSource = strings.Join(tt.fixed, ",")
			s, err := c.Sign(context.Background(), Login{Principal: "alice", Source: tt.src})
			if tt.want == "" {
				if !errors.Is(err, ErrNoSource) {
					t.Fatalf("minted without a source address: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := certOf(t, s).CriticalOptions["source-address"]; got != tt.want {
				t.Errorf("source-address %q, want %q", got, tt.want)
			}
		})
	}
}

// Serials are random and never 0 (a KRL cannot revoke 0).
func TestSerials(t *testing.T) {
	seen := map[uint64]bool{}
	for range 10000 {
		s, err := newSerial(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if s == 0 || seen[s] {
			t.Fatalf("serial %d repeated or zero after %d", s, len(seen))
		}
		seen[s] = true
	}
	// A reader that starts with zeros: the zero serial is skipped.
	zeros := io.MultiReader(bytes.NewReader(make([]byte, 16)), bytes.NewReader([]byte{0, 0, 0, 0, 0, 0, 0, 7}))
	if s, err := newSerial(zeros); err != nil || s != 7 {
		t.Errorf("after zeros: %d, %v; want 7", s, err)
	}
	if _, err := newSerial(bytes.NewReader([]byte{1, 2, 3})); err == nil {
		t.Error("short random read accepted")
	}
	// Two certificates of one CA differ in serial.
	c, _ := newCA(t)
	a, _ := c.Sign(context.Background(), Login{Principal: "alice", Source: src})
	b, _ := c.Sign(context.Background(), Login{Principal: "alice", Source: src})
	if certOf(t, a).Serial == certOf(t, b).Serial {
		t.Error("two certificates share a serial")
	}
}

// Key IDs name the user, the session and the gateway, and nothing in them
// can end a field or forge another in sshd's log line.
func TestKeyID(t *testing.T) {
	for _, tt := range []struct{ gateway, session, user, want string }{
		{"gw1", "a1b2c3", "alice", "frontdoor user=alice session=a1b2c3 gateway=gw1"},
		{"gw-2.example.edu", "s", "bob.smith", "frontdoor user=bob.smith session=s gateway=gw-2.example.edu"},
		{"gw1", "", "", "frontdoor user=- session=- gateway=gw1"},
		{`gw1" gateway=gw9`, "s", "alice\nAccepted", `frontdoor user=alice?Accepted session=s gateway=gw1??gateway?gw9`},
		{strings.Repeat("g", 100), "s", "ü", "frontdoor user=? session=s gateway=" + strings.Repeat("g", 64)},
	} {
		if got := KeyID(tt.gateway, tt.session, tt.user); got != tt.want {
			t.Errorf("KeyID(%q, %q, %q) = %q, want %q", tt.gateway, tt.session, tt.user, got, tt.want)
		}
	}
	c, _ := newCA(t)
	s, _ := c.Sign(context.Background(), Login{Principal: "alice", User: "alice", Session: "sess1", Source: src})
	if got := certOf(t, s).KeyId; got != "frontdoor user=alice session=sess1 gateway=gw1" {
		t.Errorf("key id %q", got)
	}
}

// A CA key that cannot sign (KMS down) is ErrUnavailable, naming the key's
// kind and how long it tried; a login abandoned meanwhile is not.
func TestSignUnavailable(t *testing.T) {
	c, _ := newCA(t)
	down := errors.New("connection refused")
	c.auth = failingAuthority{c.auth, down}
	_, err := c.Sign(context.Background(), Login{Principal: "alice", Source: src})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, down) || !strings.Contains(err.Error(), "test key, after") {
		t.Errorf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Sign(ctx, Login{Principal: "alice", Source: src})
	if errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("abandoned login: %v", err)
	}
}

type failingAuthority struct {
	Authority
	err error
}

func (f failingAuthority) Kind() string { return "test" }
func (f failingAuthority) Signer(context.Context) ssh.Signer {
	return errSigner{f.PublicKey(), f.err}
}

type errSigner struct {
	pub ssh.PublicKey
	err error
}

func (e errSigner) PublicKey() ssh.PublicKey                       { return e.pub }
func (e errSigner) Sign(io.Reader, []byte) (*ssh.Signature, error) { return nil, e.err }

// Close releases a remote key's resources, and is harmless for a file.
func TestClose(t *testing.T) {
	c, _ := newCA(t)
	c.Close() // a key file: nothing to release
	k := &closingAuthority{Authority: c.auth}
	New(k, Options{}).Close()
	if !k.closed {
		t.Error("the key was not closed")
	}
}

type closingAuthority struct {
	Authority
	closed bool
}

func (c *closingAuthority) Close() { c.closed = true }

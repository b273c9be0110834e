package mfa_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/mfa"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// The client against a real FreeRADIUS with its TOTP module (the same
// configuration as the local stack's), codes from the real oathtool.

// radiusAddr is this package's fixed FreeRADIUS address.
const radiusAddr = "127.0.9.1:18812"

var (
	srv        *harness.RADIUS
	secretFile string
	aliceTOTP  = harness.NewTOTPSecret()
)

func TestMain(m *testing.M) {
	os.Exit(harness.Suite{
		Name:     "mfa",
		Programs: []string{harness.FreeRADIUSPath, "oathtool"},
		Timeout:  time.Minute,
		Setup: func(ctx context.Context, base string, stops *[]func()) (string, error) {
			r, err := harness.StartRADIUS(ctx, harness.RADIUSOptions{Dir: filepath.Join(base, "radius"), Addr: radiusAddr,
				Secret: "mfa-test-secret", TOTP: map[string]string{"alice": aliceTOTP}})
			if err != nil {
				return "", err
			}
			*stops = append(*stops, r.Stop)
			srv = r
			secretFile = filepath.Join(base, "radius.secret")
			return "FreeRADIUS " + radiusAddr, os.WriteFile(secretFile, []byte("mfa-test-secret\n"), 0o600)
		},
	}.Run(m))
}

func client(t *testing.T, servers ...string) *mfa.Client {
	t.Helper()
	cfg := mfa.DefaultConfig()
	cfg.Servers = servers
	cfg.SecretFile = secretFile
	cfg.Timeout = 2 * time.Second
	cfg.Retransmit = 500 * time.Millisecond
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c, err := mfa.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func code(t *testing.T) string {
	t.Helper()
	c, err := harness.TOTPCode(context.Background(), aliceTOTP, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFreeRADIUSRightAndWrongCode(t *testing.T) {
	c := client(t, radiusAddr)
	ctx := context.Background()
	r, err := c.Start(ctx, "alice", code(t), "127.0.0.1:40000")
	if err != nil || r.Outcome != mfa.Accept {
		t.Fatalf("right code: %v, %v\n%s", r.Outcome, err, srv.LogTail())
	}
	// A code from an hour ago is wrong now.
	old, err := harness.TOTPCode(ctx, aliceTOTP, -time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r, err = c.Start(ctx, "alice", old, "")
	if err != nil || r.Outcome != mfa.Reject {
		t.Fatalf("old code: %v, %v", r.Outcome, err)
	}
	r, err = c.Start(ctx, "mallory", "123456", "")
	if err != nil || r.Outcome != mfa.Reject {
		t.Fatalf("unknown user: %v, %v", r.Outcome, err)
	}
}

func TestFreeRADIUSChallenge(t *testing.T) {
	c := client(t, radiusAddr)
	ctx := context.Background()
	r, err := c.Start(ctx, "alice", "push", "")
	if err != nil || r.Outcome != mfa.Challenge || r.Message != "Verification code: " {
		t.Fatalf("push: %+v, %v", r, err)
	}
	got, err := c.Continue(ctx, r, "alice", code(t), "")
	if err != nil || got.Outcome != mfa.Accept {
		t.Fatalf("code after challenge: %v, %v", got.Outcome, err)
	}
	r2, _ := c.Start(ctx, "alice", "", "")
	got, err = c.Continue(ctx, r2, "alice", "000000", "")
	if err != nil || got.Outcome != mfa.Reject {
		t.Fatalf("wrong code after challenge: %v, %v", got.Outcome, err)
	}
}

// The first server refuses (nothing listens): the second answers at once.
// With none up, the error says so, fast.
func TestFreeRADIUSFailoverAndDown(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.9.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := pc.LocalAddr().String()
	pc.Close()
	start := time.Now()
	r, err := client(t, down, radiusAddr).Start(context.Background(), "alice", code(t), "")
	if err != nil || r.Outcome != mfa.Accept || r.Server != radiusAddr {
		t.Fatalf("failover: %+v, %v", r, err)
	}
	_, err = client(t, down).Start(context.Background(), "alice", code(t), "")
	if !errors.Is(err, mfa.ErrUnavailable) {
		t.Fatalf("no server up: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v: a refusing server should not be waited for", d)
	}
}

// A gateway with the wrong secret gets no answer it can take: FreeRADIUS
// drops a request whose Message-Authenticator does not verify.
func TestFreeRADIUSWrongSecret(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(bad, []byte("not-the-secret"), 0o600)
	cfg := mfa.DefaultConfig()
	cfg.Servers, cfg.SecretFile, cfg.Timeout, cfg.Retransmit = []string{radiusAddr}, bad, time.Second, 300*time.Millisecond
	c, err := mfa.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Start(context.Background(), "alice", code(t), "")
	if !errors.Is(err, mfa.ErrUnavailable) {
		t.Fatalf("wrong secret: %v", err)
	}
	if containsSecret(err.Error()) {
		t.Errorf("error names the secret: %v", err)
	}
}

func containsSecret(s string) bool {
	return strings.Contains(s, "not-the-secret") || strings.Contains(s, "mfa-test-secret")
}

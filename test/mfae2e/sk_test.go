package mfae2e_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// softSK is a FIDO sk-ssh-ed25519@openssh.com key in software: it signs
// as a security key does (RFC-less, openssh PROTOCOL.u2f), with the
// user-presence flag set when touch is true.
type softSK struct {
	priv  ed25519.PrivateKey
	pub   ssh.PublicKey
	touch bool
}

const skApplication = "ssh:"

func newSoftSK() (*softSK, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	blob := ssh.Marshal(struct {
		Name        string
		KeyBytes    []byte
		Application string
	}{ssh.KeyAlgoSKED25519, pub, skApplication})
	pk, err := ssh.ParsePublicKey(blob)
	if err != nil {
		return nil, err
	}
	return &softSK{priv: priv, pub: pk, touch: true}, nil
}

func (k *softSK) PublicKey() ssh.PublicKey { return k.pub }

func (k *softSK) Sign(_ io.Reader, data []byte) (*ssh.Signature, error) {
	var flags byte
	if k.touch {
		flags = 0x01 // user present
	}
	const counter = 7
	app := sha256.Sum256([]byte(skApplication))
	msg := sha256.Sum256(data)
	signed := ssh.Marshal(struct {
		App     []byte `ssh:"rest"`
		Flags   byte
		Counter uint32
		Msg     []byte `ssh:"rest"`
	}{app[:], flags, counter, msg[:]})
	return &ssh.Signature{
		Format: ssh.KeyAlgoSKED25519,
		Blob:   ed25519.Sign(k.priv, signed), // raw, as the signature's string
		Rest: ssh.Marshal(struct {
			Flags   byte
			Counter uint32
		}{flags, counter}),
	}, nil
}

// A rule with mfa_sk_counts lets a touched FIDO key in without a code; the
// same key's signature without a touch is no login at all.
func TestSecurityKeyCountsAsSecondFactor(t *testing.T) {
	sk := skKeys["mfa-ivan"]
	ctx := testCtx(t, time.Minute)
	c, err := harness.DialSSH(ctx, gw1.Addr(), "mfa-ivan", gw1.HostKey(), ssh.PublicKeys(sk))
	if err != nil {
		t.Fatalf("touched security key: %v", err)
	}
	c.Close()
	waitMFA(t, gw1, "mfa-ivan", audit.ResultOK, "security key touched")

	sk.touch = false
	defer func() { sk.touch = true }()
	if c, err := harness.DialSSH(ctx, gw1.Addr(), "mfa-ivan", gw1.HostKey(), ssh.PublicKeys(sk)); err == nil {
		c.Close()
		t.Fatal("a security key signature without user presence logged in")
	}
}

package ca

import (
	"context"

	"golang.org/x/crypto/ssh"
)

// Authority is the key a CA signs certificates with.
type Authority interface {
	// PublicKey is the key login nodes list in TrustedUserCAKeys.
	PublicKey() ssh.PublicKey
	// Signer returns the signer for one certificate. A remote key's calls
	// (KMS) are bounded by ctx and by the key's own timeout; a local key
	// ignores ctx.
	Signer(ctx context.Context) ssh.Signer
	// Kind names where the key lives, in metrics and messages: "file" or
	// "kms".
	Kind() string
}

// Local is an Authority whose private key is in this process (a key file
// loaded with LoadSigner).
func Local(s ssh.Signer) Authority { return local{s} }

type local struct{ s ssh.Signer }

func (l local) PublicKey() ssh.PublicKey          { return l.s.PublicKey() }
func (l local) Signer(context.Context) ssh.Signer { return l.s }
func (l local) Kind() string                      { return "file" }

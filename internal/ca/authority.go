package ca

import (
	"context"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/ca/kms"
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

// KeySource names where a CA key is: a key file, or a KMS key (set, it
// wins).
type KeySource struct {
	File string
	KMS  *kms.Config
}

// OpenAuthority opens the key src names: a KMS key's public key is read
// here, once, within its timeout (ctx bounds it too); a key file is
// loaded with LoadSigner.
func OpenAuthority(ctx context.Context, src KeySource) (Authority, error) {
	if src.KMS != nil {
		k, err := kms.Open(ctx, *src.KMS, kms.Options{})
		if err != nil {
			return nil, err
		}
		return k, nil
	}
	s, err := LoadSigner(src.File)
	if err != nil {
		return nil, err
	}
	return Local(s), nil
}

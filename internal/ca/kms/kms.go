// Package kms is a user CA key that never leaves AWS KMS: an ECDSA P-256
// key (KeySpec ECC_NIST_P256) that signs certificates through KMS's Sign
// API, so a stolen gateway holds no key to take away — only the right to
// ask for signatures while it holds the gateway's AWS credentials.
//
// How one certificate is signed: x/crypto's Certificate.SignCert asks an
// ssh.Signer, which (ssh.NewSignerFromSigner) hashes the data with SHA-256
// and calls a crypto.Signer with the digest; that signer sends it to KMS
// (MessageType DIGEST, SigningAlgorithm ECDSA_SHA_256), which answers the
// signature as DER (ANSI X9.62: SEQUENCE of r and s), which is what a
// crypto.Signer returns for ECDSA and what x/crypto re-encodes as the SSH
// signature blob (mpint r, mpint s). Each signature is checked with the
// public key before use, so a KMS answer that does not verify is an error
// here, not a login refused by every node.
//
// What is bounded: one signature takes at most Config.Timeout, in at most
// Config.MaxAttempts tries with a short backoff (the SDK's standard
// retryer); the public key is read once, at Open. Nothing secret is cached
// — there is nothing secret here to cache — and nothing can be signed
// ahead, since every certificate certifies a fresh key for one login.
package kms

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient"
)

// API is the part of the KMS client a Key uses; the SDK's *kms.Client
// satisfies it.
type API interface {
	Sign(ctx context.Context, in *awskms.SignInput, optFns ...func(*awskms.Options)) (*awskms.SignOutput, error)
	GetPublicKey(ctx context.Context, in *awskms.GetPublicKeyInput, optFns ...func(*awskms.Options)) (*awskms.GetPublicKeyOutput, error)
}

// Options are the parts of a Key built outside it.
type Options struct {
	// API replaces the KMS client built from the config.
	API API
}

// Key is a user CA key in KMS; it implements ca.Authority. Safe for
// concurrent use.
type Key struct {
	api     API
	keyID   string // the key's ARN, as GetPublicKey names it
	pub     *ecdsa.PublicKey
	sshPub  ssh.PublicKey
	timeout time.Duration
	// transport is the KMS client's (nil with Options.API).
	transport *http.Transport
}

// openTimeout is the least time Open gives GetPublicKey: a gateway that
// starts while KMS is slow should still start.
const openTimeout = 10 * time.Second

// maxBackoff caps the retryer's wait between attempts, so that retries fit
// in Config.Timeout instead of the SDK's 20 s.
const maxBackoff = 200 * time.Millisecond

// Open reads the key's public key from KMS (once) and checks it can sign
// SSH certificates: ECC_NIST_P256, SIGN_VERIFY, ECDSA_SHA_256.
func Open(ctx context.Context, cfg Config, o Options) (*Key, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k := &Key{api: o.API, keyID: cfg.KeyID, timeout: cfg.Timeout}
	if k.api == nil {
		c, tr, err := NewClient(ctx, cfg)
		if err != nil {
			return nil, err
		}
		k.api, k.transport = c, tr
	}
	if err := k.load(ctx, max(cfg.Timeout, openTimeout)); err != nil {
		k.Close()
		return nil, fmt.Errorf("user CA key %s in KMS: %w", cfg.KeyID, err)
	}
	return k, nil
}

// NewClient builds the KMS client for cfg (internal/awsclient: the
// default credential chain, cfg.Region), with cfg.Endpoint as its base
// endpoint and the SDK's standard retryer limited to cfg.MaxAttempts and
// maxBackoff, and returns the transport under it.
func NewClient(ctx context.Context, cfg Config) (*awskms.Client, *http.Transport, error) {
	ac, tr, err := awsclient.Load(ctx, cfg.Region, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("user CA in KMS: %w", err)
	}
	return awskms.NewFromConfig(ac, func(o *awskms.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = cfg.MaxAttempts
			so.MaxBackoff = maxBackoff
		})
	}), tr, nil
}

func (k *Key) load(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := k.api.GetPublicKey(ctx, &awskms.GetPublicKeyInput{KeyId: aws.String(k.keyID)})
	if err != nil {
		return fmt.Errorf("GetPublicKey: %w", err)
	}
	switch {
	case out.KeySpec != types.KeySpecEccNistP256:
		return fmt.Errorf("key spec %s: want %s (an ECDSA P-256 key)", out.KeySpec, types.KeySpecEccNistP256)
	case out.KeyUsage != types.KeyUsageTypeSignVerify:
		return fmt.Errorf("key usage %s: want %s", out.KeyUsage, types.KeyUsageTypeSignVerify)
	case !slices.Contains(out.SigningAlgorithms, types.SigningAlgorithmSpecEcdsaSha256):
		return fmt.Errorf("signing algorithms %v lack %s", out.SigningAlgorithms, types.SigningAlgorithmSpecEcdsaSha256)
	}
	pk, err := x509.ParsePKIXPublicKey(out.PublicKey)
	if err != nil {
		return fmt.Errorf("public key: %w", err)
	}
	pub, ok := pk.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return fmt.Errorf("public key is a %T, not an ECDSA P-256 key", pk)
	}
	if k.sshPub, err = ssh.NewPublicKey(pub); err != nil {
		return fmt.Errorf("public key: %w", err)
	}
	k.pub = pub
	if out.KeyId != nil {
		k.keyID = *out.KeyId // the ARN: an alias moved later changes nothing
	}
	return nil
}

// PublicKey is the key login nodes list in TrustedUserCAKeys
// (ecdsa-sha2-nistp256).
func (k *Key) PublicKey() ssh.PublicKey { return k.sshPub }

// KeyID is the key's ARN.
func (k *Key) KeyID() string { return k.keyID }

// Kind is "kms".
func (k *Key) Kind() string { return "kms" }

// Signer returns an ssh.Signer whose signatures are made by KMS within ctx
// and the key's timeout.
func (k *Key) Signer(ctx context.Context) ssh.Signer {
	s, err := ssh.NewSignerFromSigner(&signer{k: k, ctx: ctx})
	if err != nil { // not reached: load checked the key is P-256
		return failing{k.sshPub, err}
	}
	return s
}

// Close releases the KMS client's idle connections.
func (k *Key) Close() {
	if k.transport != nil {
		k.transport.CloseIdleConnections()
	}
}

// signer is the crypto.Signer over KMS, bound to one login's context.
type signer struct {
	k   *Key
	ctx context.Context
}

func (s *signer) Public() crypto.PublicKey { return s.k.pub }

// ErrBadSignature: KMS answered a signature that the key's public key does
// not verify.
var ErrBadSignature = errors.New("the signature KMS returned does not verify with the key's public key")

// Sign has KMS sign a SHA-256 digest and returns the DER signature.
func (s *signer) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts.HashFunc() != crypto.SHA256 || len(digest) != sha256.Size {
		return nil, fmt.Errorf("kms: %s signs SHA-256 digests, got %v (%d bytes)", types.SigningAlgorithmSpecEcdsaSha256, opts.HashFunc(), len(digest))
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.k.timeout)
	defer cancel()
	out, err := s.k.api.Sign(ctx, &awskms.SignInput{
		KeyId:            aws.String(s.k.keyID),
		Message:          digest,
		MessageType:      types.MessageTypeDigest,
		SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha256,
	})
	if err != nil {
		return nil, fmt.Errorf("kms Sign: %w", err)
	}
	if !ecdsa.VerifyASN1(s.k.pub, digest, out.Signature) {
		return nil, ErrBadSignature
	}
	return out.Signature, nil
}

// failing is a signer that cannot sign.
type failing struct {
	pub ssh.PublicKey
	err error
}

func (f failing) PublicKey() ssh.PublicKey                       { return f.pub }
func (f failing) Sign(io.Reader, []byte) (*ssh.Signature, error) { return nil, f.err }

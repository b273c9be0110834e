// Package ca holds the gateway's keys: the cluster-wide host keys clients see,
// and the user CA that mints the short-lived certificates the gateway logs in
// to login nodes with.
//
// One gateway may be stolen (docs/security.md): what it can then mint must
// be small and recoverable. So every gateway signs with a user CA key of its
// own, which the login nodes trust as one of a set and can drop (remove it
// from TrustedUserCAKeys, or revoke it in a KRL) without touching the
// others; the key may live in a file (Local) or never leave AWS KMS
// (internal/ca/kms). Every certificate is for one login: one principal, a
// fresh key, a few minutes, a source-address that is the address the
// gateway dialled the node from (so the certificate is useless from
// anywhere else), a random serial and a key ID naming the gateway and the
// session, which sshd logs with the CA's fingerprint.
//
// The files: ca.go (key files, host keys), authority.go (the CA key:
// local or remote), mint.go (one login's certificate), metrics.go.
package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
)

// LoadSigner reads an OpenSSH private key file. It refuses files readable by
// group or others, as sshd does.
func LoadSigner(path string) (ssh.Signer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key %s: permissions %#o are too open (want 0600)", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	s, err := ssh.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	return s, nil
}

// LoadHostSigners loads the host keys and pairs each certificate with the key
// it certifies. Certificates are offered in addition to the plain keys.
func LoadHostSigners(keyFiles, certFiles []string) ([]ssh.Signer, error) {
	var signers []ssh.Signer
	for _, f := range keyFiles {
		s, err := LoadSigner(f)
		if err != nil {
			return nil, err
		}
		signers = append(signers, s)
	}
	plain := len(signers)
	for _, f := range certFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("host certificate: %w", err)
		}
		pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
		if err != nil {
			return nil, fmt.Errorf("host certificate %s: %w", f, err)
		}
		cert, ok := pub.(*ssh.Certificate)
		if !ok || cert.CertType != ssh.HostCert {
			return nil, fmt.Errorf("host certificate %s: not an OpenSSH host certificate", f)
		}
		var matched bool
		for _, s := range signers[:plain] {
			if string(s.PublicKey().Marshal()) == string(cert.Key.Marshal()) {
				cs, err := ssh.NewCertSigner(cert, s)
				if err != nil {
					return nil, fmt.Errorf("host certificate %s: %w", f, err)
				}
				signers = append(signers, cs)
				matched = true
				break
			}
		}
		if !matched {
			return nil, fmt.Errorf("host certificate %s: certifies none of the host keys", f)
		}
	}
	return signers, nil
}

// GenerateKeyFile writes a new ed25519 private key (0600) and its .pub
// (0644), for a host key. It refuses to overwrite an existing key.
func GenerateKeyFile(path, comment string) (ssh.PublicKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return writeKeyFile(path, comment, priv)
}

// GenerateCAKeyFile writes a new user CA key, ECDSA P-256, like
// GenerateKeyFile. Not ed25519, because of what it costs the login node:
// OpenSSH verifies ed25519 signatures with its own portable code (about
// 1.4 ms of CPU each on a current x86 core) and ECDSA ones with OpenSSL's
// (well under 0.1 ms), and the node's sshd checks the CA's signature on a
// certificate each time it parses one: twice for the gateway's key query
// and three times for the signed login that follows. With an ed25519 CA
// and session key that was 9–12 ms of the node's CPU per login on top of
// the 22–24 ms of a direct one, a quarter fewer logins per second per
// node (BENCHMARKS.md). An ed25519 CA key made earlier keeps working.
func GenerateCAKeyFile(path, comment string) (ssh.PublicKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return writeKeyFile(path, comment, priv)
}

// writeKeyFile writes priv to path (0600, refusing to overwrite) and its
// public key to path.pub (0644).
func writeKeyFile(path, comment string, priv crypto.Signer) (ssh.PublicKey, error) {
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	if _, err := f.Write(pem.EncodeToMemory(block)); err != nil {
		f.Close()
		return nil, fmt.Errorf("write key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		return nil, err
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	if comment != "" {
		line += " " + comment
	}
	if err := os.WriteFile(path+".pub", []byte(line+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write public key: %w", err)
	}
	return sshPub, nil
}

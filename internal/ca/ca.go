// Package ca holds the gateway's keys: the cluster-wide host keys clients see,
// and the user CA that mints the short-lived certificates the gateway logs in
// to login nodes with.
package ca

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
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
// (0644). It refuses to overwrite an existing key.
func GenerateKeyFile(path, comment string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
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
	sshPub, err := ssh.NewPublicKey(pub)
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

// CA mints backend login certificates.
type CA struct {
	signer  ssh.Signer
	gateway string
	// validity is the certificate lifetime; sourceAddress is an optional
	// source-address critical option.
	validity      time.Duration
	sourceAddress string
	now           func() time.Time
}

// New returns a CA signing with signer; gateway names this gateway in key IDs.
func New(signer ssh.Signer, gateway string, validity time.Duration, sourceAddresses []string) *CA {
	return &CA{
		signer:        signer,
		gateway:       gateway,
		validity:      validity,
		sourceAddress: strings.Join(sourceAddresses, ","),
		now:           time.Now,
	}
}

// PublicKey is the CA key login nodes list in TrustedUserCAKeys.
func (c *CA) PublicKey() ssh.PublicKey { return c.signer.PublicKey() }

// Login is what one backend certificate is for.
type Login struct {
	// Principal is the Unix user on the login node.
	Principal string
	// User is the directory identity (usually equal to Principal).
	User string
	// Session is the gateway's session ID, for correlating node logs (sshd
	// logs the key ID) with the audit trail.
	Session string
	Rights  policy.Rights
}

// ErrBadPrincipal rejects principals that could confuse sshd's matching.
var ErrBadPrincipal = errors.New("invalid certificate principal")

// Sign returns a signer for a fresh ephemeral key certified for one login.
// The key never leaves memory and dies with the session.
func (c *CA) Sign(l Login) (ssh.Signer, error) {
	if l.Principal == "" || strings.ContainsAny(l.Principal, ", \t\r\n\x00*?") {
		return nil, fmt.Errorf("%w: %q", ErrBadPrincipal, l.Principal)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate session key: %w", err)
	}
	keySigner, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	now := c.now()
	cert := &ssh.Certificate{
		Key:             keySigner.PublicKey(),
		Serial:          uint64(now.UnixNano()),
		CertType:        ssh.UserCert,
		KeyId:           fmt.Sprintf("frontdoor user=%s session=%s gateway=%s", l.User, l.Session, c.gateway),
		ValidPrincipals: []string{l.Principal},
		// Back-date a little for clock skew between gateway and node.
		ValidAfter:  uint64(now.Add(-2 * time.Minute).Unix()),
		ValidBefore: uint64(now.Add(c.validity).Unix()),
		Permissions: ssh.Permissions{
			CriticalOptions: map[string]string{},
			Extensions:      extensions(l.Rights),
		},
	}
	if c.sourceAddress != "" {
		cert.CriticalOptions["source-address"] = c.sourceAddress
	}
	if err := cert.SignCert(rand.Reader, c.signer); err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	return ssh.NewCertSigner(cert, keySigner)
}

// extensions grants on the node exactly what the policy grants at the
// gateway, so the node enforces it too.
func extensions(r policy.Rights) map[string]string {
	ext := map[string]string{"permit-pty": "", "permit-user-rc": ""}
	if r.Agent {
		ext["permit-agent-forwarding"] = ""
	}
	if r.X11 {
		ext["permit-X11-forwarding"] = ""
	}
	// OpenSSH has one switch for all port forwarding (TCP and Unix sockets,
	// both directions); the gateway enforces the finer split itself.
	if r.Local || r.Remote || r.StreamLocal {
		ext["permit-port-forwarding"] = ""
	}
	return ext
}

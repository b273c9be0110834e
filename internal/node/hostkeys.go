package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Host keys are bound to node NAMES, not addresses: a node's key is checked
// as an SSH client checks "NAME:22" (known_hosts lines "login1 ssh-ed25519
// …", or a host certificate whose principal is the name), whatever address
// the node is dialled at. A node cannot pass as another even if an address
// is wrong or reused, and the same check decides whose health a gossiped
// signature speaks for.

// ErrHostKey marks host key verification failures, so they can be told
// apart from other handshake errors.
var ErrHostKey = errors.New("host key verification failed")

// HostKeys verifies login nodes' host keys from known_hosts files. Safe for
// concurrent use.
type HostKeys struct {
	cb       ssh.HostKeyCallback
	insecure bool

	mu    sync.Mutex // mu protects the following
	algos map[string][]string
}

// LoadHostKeys reads known_hosts files. insecure accepts any key (labs
// only) and reads no file.
func LoadHostKeys(files []string, insecure bool) (*HostKeys, error) {
	h := &HostKeys{insecure: insecure, algos: map[string][]string{}}
	if insecure {
		h.cb = ssh.InsecureIgnoreHostKey()
		return h, nil
	}
	cb, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("backend known_hosts: %w", err)
	}
	h.cb = cb
	return h, nil
}

// Insecure reports whether keys go unchecked.
func (h *HostKeys) Insecure() bool { return h.insecure }

// hostKeyName is the known_hosts name a node's key is checked under.
func hostKeyName(node string) string { return net.JoinHostPort(node, "22") }

// anyRemote stands in for the remote address, which a check by name does
// not use (knownhosts wants a TCP address).
var anyRemote = &net.TCPAddr{IP: net.IPv4zero}

// Check verifies key as the host key of the node called name.
func (h *HostKeys) Check(name string, key ssh.PublicKey) error {
	if err := h.cb(hostKeyName(name), anyRemote, key); err != nil {
		return fmt.Errorf("%w: %w", ErrHostKey, err)
	}
	return nil
}

// CallbackFor is the HostKeyCallback of a login to the node called name.
func (h *HostKeys) CallbackFor(name string) ssh.HostKeyCallback {
	return func(_ string, _ net.Addr, key ssh.PublicKey) error { return h.Check(name, key) }
}

// AlgorithmsFor returns the host key algorithms to negotiate with the node
// called name: those of the keys known_hosts has for it (plus certificates,
// in case a host CA is trusted). Without this, the node might present a key
// type the file has no line for, and a good node would fail verification.
func (h *HostKeys) AlgorithmsFor(name string) []string {
	if h.insecure {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.algos[name]; ok {
		return a
	}
	// knownhosts answers a key it does not know for a host it knows with a
	// *KeyError listing the keys it wants.
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	probe, _ := ssh.NewSignerFromKey(priv)
	var algos []string
	var kerr *knownhosts.KeyError
	if err := h.cb(hostKeyName(name), anyRemote, probe.PublicKey()); errors.As(err, &kerr) && len(kerr.Want) > 0 {
		for _, k := range kerr.Want {
			for _, a := range algorithmsForKeyType(k.Key.Type()) {
				if !slices.Contains(algos, a) {
					algos = append(algos, a)
				}
			}
		}
	}
	// Known keys or not, a node may present a certificate from a trusted
	// host CA; keep those algorithms available (preferred last).
	if len(algos) > 0 {
		algos = append(algos, ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01,
			ssh.CertAlgoECDSA521v01, ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01)
	}
	h.algos[name] = algos
	return algos
}

func algorithmsForKeyType(t string) []string {
	switch t {
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	default:
		return []string{t}
	}
}

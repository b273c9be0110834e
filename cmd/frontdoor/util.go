package main

import "golang.org/x/crypto/ssh"

// pubLine is a public key as an authorized_keys line (without newline).
func pubLine(k ssh.PublicKey) []byte {
	b := ssh.MarshalAuthorizedKey(k)
	return b[:len(b)-1]
}

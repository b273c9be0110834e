package cluster

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
)

// Sealing: gateway state travels between the gateways sealed with
// AES-256-GCM under keys derived from gateway_keys, which agents never
// hold. trust.go says what travels sealed and how old a sealed message
// may be; the gateways' pool keys are derived apart (transport.go).

// sealer seals and opens gateway messages. The first key seals; every key
// opens, so gateway_keys rotate the way secret_keys do.
type sealer struct {
	ids   [][4]byte
	aeads []cipher.AEAD
}

func newSealer(keys [][]byte) (*sealer, error) {
	s := &sealer{}
	for _, k := range keys {
		// A key derived for this one use, so the gateway key could be
		// shared with another purpose without the two meeting.
		m := hmac.New(sha256.New, k)
		m.Write([]byte("frontdoor gateway state v1"))
		dk := m.Sum(nil)
		block, err := aes.NewCipher(dk)
		if err != nil {
			return nil, err
		}
		a, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		id := sha256.Sum256(dk)
		s.ids = append(s.ids, [4]byte(id[:4]))
		s.aeads = append(s.aeads, a)
	}
	return s, nil
}

// seal returns id | nonce | AES-GCM(plain), authenticated with aad.
func (s *sealer) seal(plain, aad []byte) []byte {
	a := s.aeads[0]
	out := make([]byte, 4+a.NonceSize(), 4+a.NonceSize()+len(plain)+a.Overhead())
	copy(out, s.ids[0][:])
	rand.Read(out[4 : 4+a.NonceSize()])
	return a.Seal(out, out[4:4+a.NonceSize()], plain, aad)
}

var errUnsealed = errors.New("not sealed with a gateway key we hold")

func (s *sealer) open(msg, aad []byte) ([]byte, error) {
	if len(msg) < 4 {
		return nil, errUnsealed
	}
	for i, id := range s.ids {
		if [4]byte(msg[:4]) != id {
			continue
		}
		a := s.aeads[i]
		if len(msg) < 4+a.NonceSize()+a.Overhead() {
			return nil, errUnsealed
		}
		return a.Open(nil, msg[4:4+a.NonceSize()], msg[4+a.NonceSize():], aad)
	}
	return nil, errUnsealed
}

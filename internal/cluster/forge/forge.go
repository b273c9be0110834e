// Package forge writes memberlist packets that no honest member sends: a
// SWIM "dead" for another member, at any incarnation, encrypted with a
// pool's key under its label. It is what any holder of a gossip key can
// put on the wire (memberlist authenticates the pool, not the member), for
// tests showing that frontdoor takes no liveness from a pool an agent can
// speak in. Tests only.
package forge

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// NewMember starts a bare memberlist member on 127.0.0.1 holding key
// under label: what anyone with a pool's key can run besides frontdoor.
// Shut it down when done.
func NewMember(name, label string, key []byte) (*memberlist.Memberlist, error) {
	mc := memberlist.DefaultLocalConfig()
	mc.Name, mc.BindAddr, mc.BindPort, mc.Label = name, "127.0.0.1", 0, label
	mc.Logger = log.New(io.Discard, "", 0)
	kr, err := memberlist.NewKeyring(nil, key)
	if err != nil {
		return nil, fmt.Errorf("forge: %w", err)
	}
	mc.Keyring, mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = kr, true, true
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("forge: %w", err)
	}
	return ml, nil
}

// memberlist's wire constants (net.go, label.go, security.go).
const (
	deadMsg           = 5   // messageType deadMsg
	hasLabelMsg       = 244 // label header tag
	encryptionVersion = 1   // AES-GCM, no padding
)

// Dead returns one UDP packet declaring node dead, as if from, at
// incarnation: with the highest incarnation (math.MaxUint32) the victim's
// rebuttal (incarnation + 1) wraps around and loses. key is the pool's raw
// primary key (16, 24 or 32 bytes; nil for a pool in clear), label its
// label.
func Dead(key []byte, label, node, from string, incarnation uint32) ([]byte, error) {
	if len(node) > 0xffff || len(from) > 0xffff || len(label) > 255 {
		return nil, errors.New("forge: name or label too long")
	}
	// msgpack map of memberlist's dead{Incarnation, Node, From}, field
	// names as keys, the way its codec writes structs.
	msg := []byte{deadMsg, 0x83}
	msg = appendStr(msg, "Incarnation")
	msg = append(msg, 0xce)
	msg = binary.BigEndian.AppendUint32(msg, incarnation)
	msg = appendStr(msg, "Node")
	msg = appendStr(msg, node)
	msg = appendStr(msg, "From")
	msg = appendStr(msg, from)
	if key != nil {
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("forge: %w", err)
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("forge: %w", err)
		}
		out := make([]byte, 1+gcm.NonceSize(), 1+gcm.NonceSize()+len(msg)+gcm.Overhead())
		out[0] = encryptionVersion
		if _, err := rand.Read(out[1:]); err != nil {
			return nil, fmt.Errorf("forge: %w", err)
		}
		msg = gcm.Seal(out, out[1:], msg, []byte(label))
	}
	if label == "" {
		return msg, nil
	}
	return append(append([]byte{hasLabelMsg, byte(len(label))}, label...), msg...), nil
}

// appendStr writes a msgpack string (fixstr, or str16 when longer).
func appendStr(b []byte, s string) []byte {
	if len(s) < 32 {
		b = append(b, 0xa0|byte(len(s)))
	} else {
		b = append(b, 0xda)
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	}
	return append(b, s...)
}

// Send writes packet to the UDP address addr (host:port).
func Send(addr string, packet []byte) error {
	c, err := net.DialTimeout("udp", addr, time.Second)
	if err != nil {
		return fmt.Errorf("forge: %w", err)
	}
	defer c.Close()
	if _, err := c.Write(packet); err != nil {
		return fmt.Errorf("forge: %w", err)
	}
	return nil
}

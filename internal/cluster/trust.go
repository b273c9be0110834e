package cluster

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"net"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"
)

// Who may write what. Every agent holds the gossip keys (secret_keys):
// they keep outsiders out, but agents run on login nodes, where users have
// shells and root may be lost, so holding them proves nothing about who is
// speaking. On top of the transports (transport.go):
//
//   - Health (h/NODE) is signed by the node's SSH host key. A gateway takes
//     it only for a node of its inventory (the configured nodes, or
//     discovery), only if the key is that node's host key by name in the
//     backend known_hosts (the same check as an SSH login to NAME:22), only
//     if what it claims about its address and pool matches the inventory,
//     and only if every figure is one a real machine can report
//     (Health.Check, route's bounds). An agent can therefore speak for its own
//     node only, only about its load, and within physical bounds. Every
//     new version is also the node's proof of life (api.go, Nodes), which
//     no other key can make.
//   - A node whose own key signed an address, a pool or figures no real
//     node has is remembered as lying for LiarPenalty: out of routing and
//     of the gateways' banner probes. (Refusals before the signature is
//     verified mark nobody: anyone can send those in any node's name.)
//   - Gateway state (sessions, routing counts, affinity, drains, bans)
//     travels between gateways in their own pool and sealed with the
//     gateway keys (gateway_keys, AES-256-GCM: seal.go), which agents
//     never hold: an agent can neither read nor write it, and agents do
//     not keep it.
//     Sealed messages carry their time and are refused when older than
//     sealMaxAge, bounding replays.
//   - Every version is clamped: an entry more than MaxClockSkew ahead of our
//     clock is refused, so no member can publish a version no later write
//     beats.
//
// What is refused is counted by reason (Refusals) and logged, at most once
// a minute per origin and reason (refusal.go).

// sealMaxAge bounds how old a sealed message may be when it arrives.
const sealMaxAge = 2 * time.Minute

// sealedBatch is the plaintext of a sealed message.
type sealedBatch struct {
	At int64   `json:"t"`           // Unix ms when sealed
	G  string  `json:"g,omitempty"` // the sealing gateway (for its clock offset; older releases omit it)
	E  []entry `json:"e"`
}

// sealEntries seals es for the other gateways; aad binds the message kind
// and the cluster label.
func (c *Cluster) sealEntries(kind byte, es []entry) ([]byte, error) {
	b, err := json.Marshal(sealedBatch{At: c.now().UnixMilli(), G: c.cfg.Name, E: es})
	if err != nil {
		return nil, err
	}
	return c.sealer.seal(b, c.aad(kind)), nil
}

// openEntries opens a sealed message and checks its age; a refusal says
// why not (sealed_unreadable, or clock_skew for a message outside the
// replay window, which also records its sender's clock offset: skew.go).
func (c *Cluster) openEntries(kind byte, msg []byte) ([]entry, *refusal) {
	if c.sealer == nil {
		return nil, refuse(refusedSealedOpen, "%v", errUnsealed)
	}
	plain, err := c.sealer.open(msg, c.aad(kind))
	if err != nil {
		return nil, refuse(refusedSealedOpen, "%v", err)
	}
	var sb sealedBatch
	if err := json.Unmarshal(plain, &sb); err != nil {
		return nil, refuse(refusedSealedOpen, "sealed batch: %v", err)
	}
	age := c.now().Sub(time.UnixMilli(sb.At))
	c.noteOffset(sb.G, -age)
	if age > sealMaxAge || age < -c.cfg.MaxClockSkew {
		return nil, refuse(refusedClockSkew, "sealed by %q %v ago (window %v old to %v ahead): its clock or ours is off (frontdoor_gossip_clock_offset_seconds), or a replay",
			clip(sb.G), age.Round(time.Second), sealMaxAge, c.cfg.MaxClockSkew)
	}
	return sb.E, nil
}

func (c *Cluster) aad(kind byte) []byte {
	return append([]byte{kind}, c.cfg.Label...)
}

// healthSigningPrefix separates health signatures from any other use of a
// host key.
const healthSigningPrefix = "frontdoor-health-v1\x00"

// signedBytes is what a health signature covers: everything in the entry
// but the signature.
func signedBytes(e *entry) []byte {
	b := make([]byte, 0, len(healthSigningPrefix)+len(e.Key)+len(e.Origin)+len(e.Val)+len(e.PK)+16)
	b = append(b, healthSigningPrefix...)
	b = append(b, e.Key...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, e.Ver)
	b = append(b, e.Origin...)
	b = append(b, 0)
	if e.Del {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(e.PK)))
	b = append(b, e.PK...)
	return append(b, e.Val...)
}

// signHealth signs a health entry with this agent's host key.
func (c *Cluster) signHealth(e *entry) {
	if c.hostKey == nil || !strings.HasPrefix(e.Key, kindHealth+"/") {
		return
	}
	e.PK = c.hostKey.PublicKey().Marshal()
	sig, err := c.hostKey.Sign(rand.Reader, signedBytes(e))
	if err != nil {
		c.log.Error("cluster: sign health", "err", err)
		return
	}
	e.Sig = ssh.Marshal(sig)
}

// maxNamePart bounds each name in a key (member, node, user).
const maxNamePart = 256

// checkKey validates an entry's key: a known kind and clean names.
func checkKey(key string) error {
	kind, rest, ok := strings.Cut(key, "/")
	if !ok || rest == "" {
		return refuse(refusedMalformed, "key %q", clip(key))
	}
	var parts []string
	switch kind {
	case kindHealth, kindAffinity, kindDrain, kindBan, kindLock, kindMFA:
		parts = []string{rest}
	case kindRouted:
		parts = strings.SplitN(rest, "/", 2)
		if len(parts) != 2 {
			return refuse(refusedMalformed, "key %q", clip(key))
		}
	case kindSession:
		parts = strings.SplitN(rest, "/", 3)
		if len(parts) != 3 {
			return refuse(refusedMalformed, "key %q", clip(key))
		}
	default:
		return refuse(refusedMalformed, "unknown kind in key %q", clip(key))
	}
	for _, p := range parts {
		if p == "" || len(p) > maxNamePart || !utf8.ValidString(p) || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return refuse(refusedMalformed, "key %q", clip(key))
		}
	}
	if kind == kindHealth && strings.Contains(rest, "/") {
		return refuse(refusedMalformed, "key %q", clip(key))
	}
	return nil
}

// admit decides whether a remote entry may be merged at all, before the
// last-writer-wins rule: sealed says it arrived inside a message sealed
// with a gateway key. It returns skip for entries this member does not
// keep (gateway state on an agent), which are not refusals.
func (c *Cluster) admit(e *entry, sealed bool, now time.Time) (skip bool, err error) {
	if err := checkKey(e.Key); err != nil {
		return false, err
	}
	if e.Origin == "" || len(e.Origin) > maxNamePart {
		return false, refuse(refusedMalformed, "origin %q", clip(e.Origin))
	}
	if limit := uint64(now.Add(c.cfg.MaxClockSkew).UnixNano()); e.Ver > limit {
		return false, refuse(refusedFuture, "%s version %d is %v ahead of our clock", e.Key, e.Ver,
			time.Duration(e.Ver-uint64(now.UnixNano())).Round(time.Second))
	}
	if !isHealth(e.Key) {
		if c.role != RoleGateway {
			return true, nil // agents neither keep nor relay gateway state
		}
		if c.sealer != nil && !sealed {
			return false, refuse(refusedUnsealed, "%s from %s", e.Key, e.Origin)
		}
		if o := owner(e.Key); o != "" && o != e.Origin {
			return false, refuse(refusedNotOwner, "%s written by %s", e.Key, e.Origin)
		}
		if strings.HasPrefix(e.Key, kindLock+"/") {
			return false, c.checkLock(e, now)
		}
		return false, c.checkDrainEntry(e, now)
	}
	node := strings.TrimPrefix(e.Key, kindHealth+"/")
	if e.Origin != node {
		return false, refuse(refusedNotOwner, "health of %s published by %s", node, e.Origin)
	}
	if c.inv == nil {
		// Insecure, without an inventory: no key or claim to check the
		// health against, but its figures must still be possible.
		return false, c.checkFigures(e, node, now)
	}
	inv, ok := c.inv.Node(node)
	if !ok {
		return false, refuse(refusedUnknown, "%s is not in this gateway's node inventory", node)
	}
	pk, err := ssh.ParsePublicKey(e.PK)
	if err != nil {
		return false, refuse(refusedSignature, "%s: no usable host key in its health: %v", node, err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(e.Sig, &sig); err != nil {
		return false, refuse(refusedSignature, "%s: unsigned health", node)
	}
	if err := pk.Verify(signedBytes(e), &sig); err != nil {
		return false, refuse(refusedSignature, "%s: %v", node, err)
	}
	if err := c.inv.CheckHostKey(node, pk); err != nil {
		return false, refuse(refusedHostKey, "%s signed with %s, not its host key by name: %v", node, ssh.FingerprintSHA256(pk), err)
	}
	if e.Del {
		return false, nil
	}
	h, ok := decode[Health](e)
	if !ok {
		return false, refuse(refusedMalformed, "%s: health value", node)
	}
	if h.Addr != "" && !sameAddr(h.Addr, inv.Addr) {
		return false, refuse(refusedAddrClaim, "%s claims sshd at %q; the inventory says %q", node, clip(h.Addr), inv.Addr)
	}
	if h.Pool != "" && h.Pool != inv.Pool {
		return false, refuse(refusedPoolClaim, "%s claims pool %q; the inventory says %q", node, clip(h.Pool), inv.Pool)
	}
	return false, c.checkFigures(e, node, now)
}

// checkFigures refuses health no real node could report (Health.Check).
func (c *Cluster) checkFigures(e *entry, node string, now time.Time) error {
	if e.Del {
		return nil
	}
	h, ok := decode[Health](e)
	if !ok {
		return refuse(refusedMalformed, "%s: health value", node)
	}
	if err := h.Check(now, c.cfg.MaxClockSkew); err != nil {
		return refuse(refusedImpossible, "%s: %v", node, err)
	}
	return nil
}

// sameAddr compares host:port addresses, IPs by value.
func sameAddr(a, b string) bool {
	if a == b {
		return true
	}
	ah, ap, err1 := net.SplitHostPort(a)
	bh, bp, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || ap != bp {
		return false
	}
	ai, bi := net.ParseIP(ah), net.ParseIP(bh)
	return ai != nil && bi != nil && ai.Equal(bi)
}

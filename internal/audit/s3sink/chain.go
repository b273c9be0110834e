package s3sink

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// The chain, written down before the code.
//
// Every batch object starts with an audit.BatchHeader naming its gateway,
// its chain, its sequence number and the SHA-256 of the chain's previous
// object as stored. The chain state (chain name, last seq, last hash) is
// in the spool's chain file, rewritten atomically after each link, so the
// chain goes on across restarts and crashes. A gateway without a usable
// chain state (a new gateway, a spool directory lost or replaced, a file
// that does not parse, a gateway renamed) does not guess: it starts a new
// chain whose first header says why (Restart); frontdoor audit verify
// lists every chain start with its reason.
//
// Why chained and not signed: the attacker this defends against owns one
// gateway. A signing key on that gateway would be theirs too, so a
// signature can prove nothing about that gateway's own batches that the
// bucket does not already prove; and what it could protect — the other
// gateways' history — is protected by not letting the stolen gateway's
// AWS identity write there at all: an IAM policy per gateway allows only
// new objects (If-None-Match: *) under its own PREFIX/GATEWAY/, no
// overwrite, no delete (deploy/), and S3 authenticates the writer of every
// request. The chain makes what remains visible: an object of the past
// changed (through versioning, or by someone with more rights than a
// gateway), removed, reordered or inserted breaks the chain at that
// object. What no chain can show is the newest batches of a chain removed
// — only Object Lock on the bucket prevents that — or a stolen gateway
// writing lies about the logins it handles itself from then on. Signing
// would add keys to distribute, rotate and revoke without changing either.

// chainState is the spool's chain file.
type chainState struct {
	V       int    `json:"v"`
	Gateway string `json:"gateway"`
	Chain   string `json:"chain"`
	Seq     uint64 `json:"seq"`            // the last batch linked (0: none yet)
	Hash    string `json:"hash,omitempty"` // its object's hash
	// Restart is why this chain began; it goes into the header of seq 1.
	Restart string `json:"restart,omitempty"`
}

// Restart reasons, the start of BatchHeader.Restart.
const (
	restartNoState    = "no chain state in the spool (a new gateway, or its spool directory was lost or replaced)"
	restartUnreadable = "the chain state in the spool is unreadable"
	restartRenamed    = "the gateway was renamed"
)

// loadChain reads the chain state, or starts a new chain when there is
// none this gateway can go on with. links are the link files found in the
// spool: the newest of them is ahead of the state after a crash between
// the two writes.
func loadChain(dir, gateway string, links []linkFile, now time.Time) (chainState, error) {
	path := filepath.Join(dir, chainFile)
	var st chainState
	restart := ""
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		restart = restartNoState
	case err != nil:
		return st, fmt.Errorf("spool: %w", err)
	default:
		if jerr := json.Unmarshal(b, &st); jerr != nil || st.Chain == "" || !chainRE.MatchString(st.Chain) || (st.Seq > 0) != (st.Hash != "") {
			restart = fmt.Sprintf("%s (%s)", restartUnreadable, describe(jerr, st))
			os.Rename(path, path+".corrupt")
			st = chainState{}
		} else if st.Gateway != gateway {
			restart = fmt.Sprintf("%s (from %q)", restartRenamed, st.Gateway)
			st = chainState{}
		}
	}
	// A link file ahead of the state (a crash between the two writes), or
	// link files left while the state is gone: the newest link file is the
	// chain's true end, and the chain goes on from it. (links are sorted by
	// chain, then seq.)
	usable := st.Chain != ""
	for _, l := range links {
		if h := l.header; !usable || (h.Chain == st.Chain && h.Seq > st.Seq) {
			st = chainState{V: 1, Gateway: gateway, Chain: h.Chain, Seq: h.Seq, Hash: l.hash}
		}
	}
	if st.Chain == "" {
		st = chainState{V: 1, Gateway: gateway, Chain: newChainName(now), Restart: restart}
	}
	return st, writeChain(dir, st)
}

func describe(err error, st chainState) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("chain %q seq %d hash %q", st.Chain, st.Seq, st.Hash)
}

func writeChain(dir string, st chainState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(dir, chainFile), append(b, '\n')); err != nil {
		return fmt.Errorf("spool: chain state: %w", err)
	}
	return nil
}

// newChainName is the UTC second and 32 random bits.
func newChainName(now time.Time) string {
	var r [4]byte
	rand.Read(r[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(r[:])
}

// bodyInfo is what linking needs to know of a body.
type bodyInfo struct {
	events      int
	first, last time.Time
}

// inspectBody counts a body's events and finds their time span.
func inspectBody(gz []byte) (bodyInfo, error) {
	var bi bodyInfo
	err := audit.Scan(bytes.NewReader(gz), func(r audit.Record) error {
		if r.Err != nil {
			return fmt.Errorf("line %d: %w", r.Line, r.Err)
		}
		if r.Header != nil {
			return fmt.Errorf("line %d: a batch header inside a body", r.Line)
		}
		t := r.Event.Time
		if bi.events == 0 || t.Before(bi.first) {
			bi.first = t
		}
		if bi.events == 0 || t.After(bi.last) {
			bi.last = t
		}
		bi.events++
		return nil
	})
	if err == nil && bi.events == 0 {
		err = errors.New("no events")
	}
	return bi, err
}

// linkObject builds the object for body as the next batch of st: a gzip
// member holding the header line, then the body's own gzip member(s) (a
// reader sees one stream). It returns the object and the next state.
func linkObject(st chainState, body []byte, bi bodyInfo, dropped map[string]int64, now time.Time) ([]byte, chainState, error) {
	h := audit.BatchHeader{Time: now.UTC(), Type: audit.TypeBatch, V: audit.HeaderVersion, Gateway: st.Gateway,
		Chain: st.Chain, Seq: st.Seq + 1, Prev: st.Hash, Events: bi.events, First: bi.first.UTC(), Last: bi.last.UTC(), Dropped: dropped}
	if h.Seq == 1 {
		h.Restart = st.Restart
	}
	line, err := json.Marshal(h)
	if err != nil {
		return nil, st, err
	}
	obj := append(gzipBytes(append(line, '\n')), body...)
	next := chainState{V: 1, Gateway: st.Gateway, Chain: st.Chain, Seq: h.Seq, Hash: audit.Hash(obj)}
	return obj, next, nil
}

// headerKey is the object key of a linked batch.
func headerKey(prefix string, h *audit.BatchHeader) string {
	return Key{Gateway: h.Gateway, Day: h.First.UTC().Truncate(24 * time.Hour), Chain: h.Chain, Seq: h.Seq}.String(prefix)
}

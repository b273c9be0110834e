package ad

// Handing the identity cache to the process that replaces this one (an
// upgrade, internal/lifecycle), so its first logins are served as this
// process would have served them instead of each needing a lookup within
// key_refusal_delay.
//
// What goes over: every cached identity as cached (FetchedAt and
// accountExpires included, so cache_ttl and offline_max_age run on as
// they would have: stale stays stale), with what the watch needs to
// recognise it (DN, UPN, GUIDs, fingerprint, pwdLastSet), and the version
// (watched DC and USN) the cache was in step with. What does not: the
// offline password hashes (cache_passwords) stay in the old process and die
// with it, so a hash never leaves the memory it was made in; nor the "no
// such user" answers.
//
// The watch vouches for what came over (usnWatch.vouch): at its first read
// after the import, on the same DC with a USN not below the handed-over one,
// it searches the changes since the handed-over USN and drops the
// identities they affect, exactly as for its own; on another DC, a USN that
// went back, or no USN at all (the old process's watch had read none), it
// drops every imported identity. Until then the imported identities are
// served like the old process's were until its next round.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-ldap/ldap/v3"
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// handoverFormat is the export's "v"; an import refuses any other.
const handoverFormat = 1

// Bounds on an import (an export never exceeds them).
const (
	// MaxHandover bounds an export, and what an import reads, in bytes.
	MaxHandover = 8 << 20
	maxHOGroups = 4096 // groups of one identity
	maxHOKeys   = 256  // keys of one identity
	maxHOString = 4096 // any DN, key or other string
	// handoverSkew is how far in the future a FetchedAt may lie (clocks
	// of two processes on one machine agree).
	handoverSkew = time.Minute
)

// causeHandover labels imported identities dropped because the watch could
// not vouch for them (frontdoor_ad_cache_invalidations_total).
const causeHandover = "handover_unvouched"

// handover is the export's JSON form.
type handover struct {
	V int `json:"v"`
	// The configuration the identities were read under: an import under
	// another one takes nothing.
	BaseDN  string `json:"base_dn"`
	Domain  string `json:"domain"`
	KeyAttr string `json:"key_attr"`
	// DC and USN the cache was in step with ("" and 0: the watch had read
	// none).
	DC      string          `json:"dc"`
	USN     uint64          `json:"usn"`
	Entries []handoverEntry `json:"entries"`
}

type handoverEntry struct {
	Name        string    `json:"name"`
	DN          string    `json:"dn"`
	UPN         string    `json:"upn,omitempty"`
	Groups      []string  `json:"groups,omitempty"`
	GroupDNs    []string  `json:"group_dns,omitempty"`
	GroupGUIDs  [][]byte  `json:"group_guids,omitempty"`
	GUID        []byte    `json:"guid"`
	Keys        []string  `json:"keys,omitempty"`
	UID         int       `json:"uid,omitempty"`
	UIDSet      bool      `json:"uid_set,omitempty"`
	GID         int       `json:"gid,omitempty"`
	FetchedAt   time.Time `json:"fetched_at"`
	Expires     time.Time `json:"expires,omitzero"`
	Fingerprint string    `json:"fingerprint"`
	PwdLastSet  string    `json:"pwd_last_set,omitempty"`
}

// handedVersion is what an import left for the watch to vouch for.
type handedVersion struct {
	dc  string
	usn uint64
}

// ExportCache returns the cached identities (the most recently fetched
// first, as many as fit in MaxHandover bytes) for ImportCache in the
// process that replaces this one. Password hashes are never exported.
func (d *Directory) ExportCache() []byte {
	// The version first: the entries read after it are in step with it
	// or later, so the successor's watch searches at least the changes
	// they have not seen. Identities this process imported and its watch
	// has not vouched for yet are in step with the older handed-over
	// version only: hand that on instead.
	d.mu.Lock()
	version, pending := d.version, d.handed
	d.mu.Unlock()
	h := handover{V: handoverFormat, BaseDN: d.cfg.BaseDN, Domain: d.cfg.Domain, KeyAttr: d.cfg.KeyAttribute}
	if pending != nil {
		h.DC, h.USN = pending.dc, pending.usn
	} else if version != "" {
		dc, usn, err := parseVersion(version)
		if err == nil {
			h.DC, h.USN = dc, usn
		}
	}
	now := d.now()
	for _, e := range d.cache.snapshot() {
		if now.Sub(e.id.FetchedAt) > d.cfg.OfflineMaxAge || !e.expires.IsZero() && !now.Before(e.expires) {
			continue // of no use to anyone
		}
		h.Entries = append(h.Entries, exportEntry(e))
	}
	slices.SortFunc(h.Entries, func(a, b handoverEntry) int { return b.FetchedAt.Compare(a.FetchedAt) })
	for {
		b, err := json.Marshal(h)
		if err != nil { // cannot happen: plain data
			d.log.Warn("ad: exporting the identity cache", "err", err)
			return nil
		}
		if len(b) <= MaxHandover {
			return b
		}
		// Too big: keep the fraction that fits (the newest), with room.
		h.Entries = h.Entries[:len(h.Entries)*MaxHandover/len(b)*9/10]
	}
}

func exportEntry(e *entry) handoverEntry {
	he := handoverEntry{Name: e.id.Name, DN: e.dn, UPN: e.upn, Groups: e.id.Groups, GroupDNs: e.id.GroupDNs,
		GUID: []byte(e.guid), UID: e.id.UID, UIDSet: e.id.UIDSet, GID: e.id.GID, FetchedAt: e.id.FetchedAt,
		Expires: e.expires, Fingerprint: e.fingerprint, PwdLastSet: e.pwdLastSet}
	for _, g := range e.groupGUIDs {
		he.GroupGUIDs = append(he.GroupGUIDs, []byte(g))
	}
	for _, k := range e.id.Keys {
		he.Keys = append(he.Keys, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))))
	}
	return he
}

// ImportCache adds the identities of an ExportCache blob that this cache
// does not hold (its own are as new or newer), up to max_cache_entries,
// and returns how many it added. blob is outside input: it is validated
// whole, and anything wrong with it (format, sizes, names, DNs, keys, a
// FetchedAt in the future, another directory's configuration) makes the
// import take nothing. Only the first import of a Directory's life is
// taken.
func (d *Directory) ImportCache(blob []byte) (int, error) {
	if len(blob) == 0 {
		return 0, nil
	}
	entries, hv, err := d.parseHandover(blob)
	if err != nil {
		return 0, fmt.Errorf("ad: identity cache handover: %w", err)
	}
	d.mu.Lock()
	if d.imported {
		d.mu.Unlock()
		return 0, errors.New("ad: identity cache handover: already imported one")
	}
	d.imported = true
	d.mu.Unlock()
	n := d.cache.add(entries)
	if n > 0 {
		d.mu.Lock()
		d.handed = &hv
		d.mu.Unlock()
	}
	return n, nil
}

// parseHandover validates blob and returns its usable entries (the
// expired and those past offline_max_age left out).
func (d *Directory) parseHandover(blob []byte) ([]*entry, handedVersion, error) {
	var none handedVersion
	if len(blob) > MaxHandover {
		return nil, none, fmt.Errorf("%d bytes, more than %d", len(blob), MaxHandover)
	}
	var h handover
	dec := json.NewDecoder(bytes.NewReader(blob))
	if err := dec.Decode(&h); err != nil {
		return nil, none, err
	}
	if dec.More() {
		return nil, none, errors.New("trailing data")
	}
	switch {
	case h.V != handoverFormat:
		return nil, none, fmt.Errorf("format %d, not %d", h.V, handoverFormat)
	case h.BaseDN != d.cfg.BaseDN || h.Domain != d.cfg.Domain || h.KeyAttr != d.cfg.KeyAttribute:
		return nil, none, errors.New("exported under another base_dn, domain or key_attribute")
	case len(h.Entries) > d.cfg.MaxCacheEntries:
		return nil, none, fmt.Errorf("%d identities, more than max_cache_entries", len(h.Entries))
	case len(h.DC) > maxHOString || h.DC == "" && h.USN != 0:
		return nil, none, errors.New("bad DC")
	}
	now := d.now()
	seen, upns := map[string]bool{}, map[string]bool{}
	var out []*entry
	for i, he := range h.Entries {
		e, err := d.importEntry(he, now)
		if err != nil {
			return nil, none, fmt.Errorf("identity %d: %w", i, err)
		}
		if seen[e.id.Name] || e.upn != "" && upns[e.upn] {
			return nil, none, fmt.Errorf("identity %d: %q twice", i, e.id.Name)
		}
		seen[e.id.Name] = true
		if e.upn != "" {
			upns[e.upn] = true
		}
		if now.Sub(e.id.FetchedAt) > d.cfg.OfflineMaxAge || !e.expires.IsZero() && !now.Before(e.expires) {
			continue
		}
		out = append(out, e)
	}
	return out, handedVersion{dc: h.DC, usn: h.USN}, nil
}

// importEntry validates one entry as if it had been read from AD.
func (d *Directory) importEntry(he handoverEntry, now time.Time) (*entry, error) {
	n, err := ParseName(he.Name, d.cfg.Domain, d.cfg.UPNSuffixes)
	if err != nil || n.Account != he.Name || n.UPN != "" {
		return nil, fmt.Errorf("bad name %q", truncate(he.Name, 40))
	}
	if he.UPN != "" {
		u, err := ParseName(he.UPN, d.cfg.Domain, d.cfg.UPNSuffixes)
		if err != nil || u.UPN != he.UPN {
			return nil, fmt.Errorf("%s: bad UPN", he.Name)
		}
	}
	if !validDN(he.DN) || !dnWithin(he.DN, d.cfg.BaseDN) {
		return nil, fmt.Errorf("%s: DN not under base_dn", he.Name)
	}
	if len(he.Groups) > maxHOGroups || len(he.GroupDNs) != len(he.Groups) || len(he.GroupGUIDs) != len(he.Groups) {
		return nil, fmt.Errorf("%s: groups, group DNs and GUIDs do not match", he.Name)
	}
	for i, g := range he.Groups {
		if g == "" || len(g) > maxHOString || g != strings.ToLower(g) || !validDN(he.GroupDNs[i]) || len(he.GroupGUIDs[i]) > maxHOString {
			return nil, fmt.Errorf("%s: bad group %q", he.Name, truncate(g, 40))
		}
	}
	if len(he.GUID) == 0 || len(he.GUID) > maxHOString || len(he.Fingerprint) > maxHOString || len(he.PwdLastSet) > maxHOString {
		return nil, fmt.Errorf("%s: bad GUID, fingerprint or pwdLastSet", he.Name)
	}
	if he.FetchedAt.IsZero() || he.FetchedAt.After(now.Add(handoverSkew)) {
		return nil, fmt.Errorf("%s: fetched at %v", he.Name, he.FetchedAt)
	}
	if len(he.Keys) > maxHOKeys {
		return nil, fmt.Errorf("%s: %d keys", he.Name, len(he.Keys))
	}
	var keys []ssh.PublicKey
	for _, line := range he.Keys {
		k, _, opts, rest, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil || len(line) > maxHOString || len(opts) > 0 || len(rest) > 0 {
			return nil, fmt.Errorf("%s: bad key", he.Name)
		}
		keys = append(keys, k)
	}
	e := &entry{
		id: directory.Identity{Name: he.Name, Groups: he.Groups, GroupDNs: he.GroupDNs, Keys: keys,
			UID: he.UID, UIDSet: he.UIDSet, GID: he.GID, Source: "ad", FetchedAt: he.FetchedAt},
		dn: he.DN, upn: he.UPN, expires: he.Expires, guid: string(he.GUID),
		fingerprint: he.Fingerprint, pwdLastSet: he.PwdLastSet, handed: true,
	}
	for _, g := range he.GroupGUIDs {
		e.groupGUIDs = append(e.groupGUIDs, string(g))
	}
	return e, nil
}

func validDN(dn string) bool {
	if dn == "" || len(dn) > maxHOString {
		return false
	}
	_, err := ldap.ParseDN(dn)
	return err == nil
}

// vouch, on the watch goroutine after a successful read (w.root), brings
// imported identities in step with w.root: see the top of this file. An
// error (the change search failed, and is retried) leaves them for the
// next read.
func (w *usnWatch) vouch() error {
	d := w.d
	d.mu.Lock()
	hv := d.handed
	d.mu.Unlock()
	if hv == nil {
		return nil
	}
	var why string
	switch {
	case hv.dc == "":
		why = "the previous process's watch had read no USN"
	case hv.dc != w.root.service:
		why = "the previous process watched another DC"
	case w.root.usn < hv.usn:
		why = fmt.Sprintf("highestCommittedUSN went from %d to %d", hv.usn, w.root.usn)
	default:
		if err := w.catchUp(d.ctx, hv.usn); err != nil {
			return err
		}
	}
	if why != "" {
		n := d.cache.invalidate(func(e *entry) string {
			if e.handed {
				return causeHandover
			}
			return ""
		})[causeHandover]
		d.metrics.invalidations.WithLabelValues(causeHandover).Add(float64(n))
		d.log.Info("ad: directory watch dropped the identities handed over by the previous process", "reason", why, "dropped", n)
	} else {
		d.log.Info("ad: directory watch vouched for the identities handed over by the previous process", "since_usn", hv.usn, "usn", w.root.usn)
	}
	d.mu.Lock()
	d.handed = nil
	d.mu.Unlock()
	return nil
}

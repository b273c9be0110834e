package ad

import (
	"slices"
	"sync"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// entry is what the cache keeps about one account that may log in.
type entry struct {
	id      directory.Identity
	dn      string
	upn     string    // lower-case userPrincipalName, "" if none
	expires time.Time // accountExpires; zero = never
	// guid is the account's objectGUID and groupGUIDs those of the groups
	// in id.GroupDNs (same order): the watch recognises changed and
	// deleted entries by them, whatever they were renamed or moved to.
	guid       string
	groupGUIDs []string
	// fingerprint of the user entry's attributes (changes.go); pwdLastSet
	// as read, so a password set since drops the offline password hash.
	fingerprint string
	pwdLastSet  string

	// pwHash is an argon2id hash (salted, slow) of the last password AD
	// accepted, kept only with cache_passwords; never the password.
	pwHash string
	pwAt   time.Time

	// handed: imported from the process this one replaced (handover.go);
	// in step with the handed-over USN, which the watch vouches from.
	handed bool
}

// cache holds identities by lower-case sAMAccountName, with UPN aliases.
type cache struct {
	max int

	// mu protects the following.
	mu      sync.Mutex
	entries map[string]*entry
	upns    map[string]string // upn → account
	// gen counts the watch's invalidations. A lookup notes it before
	// asking AD and stores the answer only if it has not moved since: an
	// answer read just before a change must not land in the cache just
	// after the watch dropped the account.
	gen uint64
}

func newCache(max int) *cache {
	return &cache{max: max, entries: map[string]*entry{}, upns: map[string]string{}}
}

// get returns a copy of the entry for n, or nil.
func (c *cache) get(n Name) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	var e *entry
	if n.UPN != "" {
		if acct, ok := c.upns[n.UPN]; ok {
			e = c.entries[acct]
		} else if cand := c.entries[n.Account]; cand != nil && cand.upn == "" {
			e = cand // same rule as the LDAP filter: no UPN, account name matches
		}
	} else {
		e = c.entries[n.Account]
	}
	if e == nil {
		return nil
	}
	return cloneEntry(e)
}

// generation is the invalidation count to pass to put.
func (c *cache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put stores a fresh entry, keeping a password hash already cached for the
// same DN (the password has not been shown wrong since). It stores nothing
// when the watch invalidated anything since gen was read (the entry may
// predate a change) and reports whether it stored.
func (c *cache) put(e *entry, oldest time.Time, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return false
	}
	acct := e.id.Name
	if old := c.entries[acct]; old != nil {
		if old.dn == e.dn && old.pwdLastSet == e.pwdLastSet && e.pwHash == "" {
			e.pwHash, e.pwAt = old.pwHash, old.pwAt
		}
		if old.upn != "" && old.upn != e.upn {
			delete(c.upns, old.upn)
		}
	} else if len(c.entries) >= c.max {
		c.evict(oldest)
	}
	c.entries[acct] = e
	if e.upn != "" {
		c.upns[e.upn] = acct
	}
	return true
}

// evict drops entries fetched before oldest; if none is that old, an
// arbitrary one. Called with mu held.
func (c *cache) evict(oldest time.Time) {
	n := 0
	for acct, e := range c.entries {
		if e.id.FetchedAt.Before(oldest) {
			c.deleteLocked(acct)
			n++
		}
	}
	if n > 0 {
		return
	}
	for acct := range c.entries {
		c.deleteLocked(acct)
		return
	}
}

// snapshot returns copies of every entry.
func (c *cache) snapshot() []*entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, cloneEntry(e))
	}
	return out
}

// add stores the entries whose account and UPN the cache does not hold
// yet, while there is room (it evicts nothing), and returns how many.
func (c *cache) add(entries []*entry) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range entries {
		if len(c.entries) >= c.max {
			break
		}
		if c.entries[e.id.Name] != nil || e.upn != "" && c.upns[e.upn] != "" {
			continue
		}
		c.entries[e.id.Name] = e
		if e.upn != "" {
			c.upns[e.upn] = e.id.Name
		}
		n++
	}
	return n
}

// setPassword records the hash of a password AD just accepted.
func (c *cache) setPassword(acct, hash string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[acct]; e != nil {
		e.pwHash, e.pwAt = hash, at
	}
}

// forgetPassword drops the password hash (AD said the password is wrong:
// it was changed, so the old one must stop working offline).
func (c *cache) forgetPassword(acct string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[acct]; e != nil {
		e.pwHash, e.pwAt = "", time.Time{}
	}
}

// delete drops an account that no longer exists or may not log in, so an
// outage cannot resurrect it from the cache.
func (c *cache) delete(acct string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleteLocked(acct)
}

// invalidate drops every entry for which affected names a cause, and
// returns how many it dropped by cause. It moves the generation even when
// nothing matched: a lookup in flight may be about to store an account
// the change concerns.
func (c *cache) invalidate(affected func(*entry) string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	dropped := map[string]int{}
	for acct, e := range c.entries {
		if cause := affected(e); cause != "" {
			c.deleteLocked(acct)
			dropped[cause]++
		}
	}
	return dropped
}

// flush drops every entry (moving the generation) and returns how many.
func (c *cache) flush() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	n := len(c.entries)
	clear(c.entries)
	clear(c.upns)
	return n
}

// len is the number of cached identities.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func (c *cache) deleteLocked(acct string) {
	if e := c.entries[acct]; e != nil && e.upn != "" {
		delete(c.upns, e.upn)
	}
	delete(c.entries, acct)
}

func cloneEntry(e *entry) *entry {
	cp := *e
	cp.id = cloneIdentity(e.id)
	cp.groupGUIDs = slices.Clone(e.groupGUIDs)
	return &cp
}

func cloneIdentity(id directory.Identity) directory.Identity {
	id.Groups = slices.Clone(id.Groups)
	id.GroupDNs = slices.Clone(id.GroupDNs)
	id.Keys = slices.Clone(id.Keys)
	return id
}

// negCache holds names AD answered "no such user" for, bounded, for ttl
// (Config.NegativeCacheTTL). Safe for concurrent use.
type negCache struct {
	max int
	ttl time.Duration

	mu    sync.Mutex // mu protects the following
	names map[Name]time.Time
}

func newNegCache(max int, ttl time.Duration) *negCache {
	return &negCache{max: max, ttl: ttl, names: map[Name]time.Time{}}
}

func (c *negCache) has(n Name, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.names[n]
	if ok && now.Sub(at) >= c.ttl {
		delete(c.names, n)
		return false
	}
	return ok
}

// forget drops the names that refer to changed accounts (by account name
// or UPN), so an account created a moment ago can log in at once.
func (c *negCache) forget(accounts, upns map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := range c.names {
		if accounts[n.Account] || (n.UPN != "" && upns[n.UPN]) {
			delete(c.names, n)
		}
	}
}

// empty reports whether no name is remembered.
func (c *negCache) empty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.names) == 0
}

func (c *negCache) add(n Name, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.names) >= c.max {
		for k, at := range c.names {
			if now.Sub(at) >= c.ttl {
				delete(c.names, k)
			}
		}
		for k := range c.names { // still full: make room anywhere
			if len(c.names) < c.max {
				break
			}
			delete(c.names, k)
		}
	}
	c.names[n] = now
}

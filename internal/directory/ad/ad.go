// Package ad is the Active Directory identity source.
//
// A service account searches the directory over pooled, health-checked LDAPS
// (or StartTLS) connections; each password is checked by a bind as the user's
// DN on its own short-lived connection. Several domain controllers are tried
// in order, each costing at most Config.Timeout. Identities are cached for
// Config.CacheTTL, and dropped about Config.WatchInterval after AD commits
// a change that affects them (watch.go, changes.go); when no DC answers the
// directory goes offline like SSSD:
// public-key logins are served from the cache for Config.OfflineMaxAge,
// password logins are refused unless Config.CachePasswords is on (marked
// directory.ErrNotChecked when the password went nowhere), and a
// background loop reconnects with exponential backoff; a login that
// arrives meanwhile asks it to try at once (at most every Config.RetryMin),
// and a password login waits (up to half a second) for that attempt.
//
// Group names in Identity.Groups are sAMAccountNames lower-cased, like
// Identity.Name, so policies can compare them without caring about case.
// Membership through the member attribute is resolved with
// LDAP_MATCHING_RULE_IN_CHAIN (nested groups included); the primary group
// (primaryGroupID, usually "domain users") is added, but groups the primary
// group itself is a member of are not.
package ad

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/go-ldap/ldap/v3"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// maxPassword bounds what is sent to AD (and hashed); longer is refused.
const maxPassword = 1024

// passwordHashParams are argon2id parameters for the offline password cache
// (OWASP's minimum: 19 MiB, 2 passes, 1 lane): slow for an attacker who steals
// the memory image, ~20 ms for a login.
var passwordHashParams = &argon2id.Params{Memory: 19 * 1024, Iterations: 2, Parallelism: 1, SaltLength: 16, KeyLength: 32}

// Directory is the AD identity source; it implements directory.Directory.
type Directory struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	dcs     *dcs
	cache   *cache
	attrs   []string
	metrics *metrics
	// watched is closed once the directory watch (watch.go) has its first
	// USN.
	watched <-chan struct{}

	quit   chan struct{}
	ctx    context.Context // canceled by Close: aborts reconnect attempts
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// unknown remembers names AD said do not exist, briefly: a stranger
	// spraying names costs AD one search per name per negativeTTL, and an
	// unknown name answers as fast as a cached one.
	unknown *negCache

	// kick asks the reconnect loop for an attempt now (see probeNow).
	kick chan struct{}

	// mu protects the following.
	mu           sync.Mutex
	offline      bool
	offlineSince time.Time
	probing      bool
	closed       bool
	// started and ended count the reconnect loop's attempts; probed is
	// closed (and replaced) when one ends. attempted is when the last
	// attempt began (going offline counts as one).
	started, ended int
	probed         chan struct{}
	attempted      time.Time
	version        string // what the cache is in step with (Version)
	// handed is the version imported identities are in step with, until
	// the watch vouches for them (handover.go); imported: ImportCache
	// took a blob.
	handed   *handedVersion
	imported bool
}

var _ directory.Directory = (*Directory)(nil)

// New validates cfg and returns a Directory. It does not
// wait for AD: a gateway starting during an outage comes up offline on its
// first lookup. Use Ping to check the configuration at start-up. The
// directory watch starts in the background and runs until Close.
func New(cfg Config, logger *slog.Logger) (*Directory, error) {
	return newDirectory(cfg, logger, time.Now)
}

// newDirectory is New with the clock the cache ages are measured on.
func newDirectory(cfg Config, logger *slog.Logger, now func() time.Time) (*Directory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pw, err := cfg.bindPassword()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	d := &Directory{
		cfg:     cfg,
		log:     logger,
		now:     now,
		metrics: newMetrics(),
		cache:   newCache(cfg.MaxCacheEntries),
		unknown: newNegCache(cfg.MaxCacheEntries, cfg.NegativeCacheTTL),
		quit:    make(chan struct{}),
		kick:    make(chan struct{}, 1),
		probed:  make(chan struct{}),
		attrs:   append(slices.Clone(fingerprintAttrs), cfg.KeyAttribute),
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.dcs, err = newDCs(cfg, pw, logger, now)
	if err != nil {
		d.cancel()
		return nil, err
	}
	d.startWatch()
	return d, nil
}

// Ping connects and binds as the service account (and reads the rootDSE).
func (d *Directory) Ping(ctx context.Context) error {
	return d.dcs.do(ctx, func(c *ldap.Conn) error { return ping(c, d.dcs.budget(ctx)) })
}

// Offline reports whether the directory is serving from its cache because no
// DC answered.
func (d *Directory) Offline() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.offline
}

// Lookup returns the identity of an account that may log in; see
// directory.Directory.
func (d *Directory) Lookup(ctx context.Context, name string) (directory.Identity, error) {
	n, err := ParseName(name, d.cfg.Domain, d.cfg.UPNSuffixes)
	if err != nil {
		return directory.Identity{}, err
	}
	e, err := d.lookup(ctx, n)
	if err != nil {
		return directory.Identity{}, err
	}
	return e.id, nil
}

// lookup serves n from the cache while fresh, from AD otherwise, and from
// the cache again (marked Cached) when AD is unreachable.
func (d *Directory) lookup(ctx context.Context, n Name) (*entry, error) {
	now := d.now()
	if d.Offline() {
		d.probeNow(nil) // key logins go on from the cache meanwhile
		return d.fromCache(n, nil)
	}
	if d.unknown.has(n, now) {
		return nil, &directory.Error{Kind: directory.ErrNoSuchUser, Reason: "ad: no such account"}
	}
	if e := d.cache.get(n); e != nil && now.Sub(e.id.FetchedAt) < d.cfg.CacheTTL {
		if !e.expires.IsZero() && !now.Before(e.expires) {
			d.cache.delete(e.id.Name)
			return nil, &directory.Error{Kind: directory.ErrAccountDisabled, Reason: "ad: account expired"}
		}
		return e, nil
	}
	gen := d.cache.generation()
	e, err := d.fetch(ctx, n)
	switch {
	case err == nil:
		cp := cloneEntry(e) // the cache owns e from now on; hand out a copy
		d.cache.put(e, now.Add(-d.cfg.OfflineMaxAge), gen)
		return cp, nil
	case isOutage(err):
		d.goOffline(err)
		return d.fromCache(n, err)
	case errors.Is(err, directory.ErrNoSuchUser):
		if n.UPN == "" { // a UPN's prefix need not be the account name
			d.cache.delete(n.Account)
		}
		d.unknown.add(n, now)
	case errors.Is(err, directory.ErrAccountDisabled):
		if acct := accountOf(err); acct != "" {
			d.cache.delete(acct)
		}
	}
	return nil, err
}

var _ directory.Staler = (*Directory)(nil)

// Stale returns the cached identity of name, whatever its age within
// OfflineMaxAge, without asking AD (see directory.Staler).
func (d *Directory) Stale(name string) (directory.Identity, bool) {
	n, err := ParseName(name, d.cfg.Domain, d.cfg.UPNSuffixes)
	if err != nil {
		return directory.Identity{}, false
	}
	e := d.cache.get(n)
	now := d.now()
	if e == nil || now.Sub(e.id.FetchedAt) > d.cfg.OfflineMaxAge || !e.expires.IsZero() && !now.Before(e.expires) {
		return directory.Identity{}, false
	}
	e.id.Cached = true
	return e.id, true
}

// fromCache answers while offline: the cached identity, if young enough.
func (d *Directory) fromCache(n Name, cause error) (*entry, error) {
	e := d.cache.get(n)
	if e == nil {
		return nil, &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: offline, identity not cached", Err: cause}
	}
	now := d.now()
	if now.Sub(e.id.FetchedAt) > d.cfg.OfflineMaxAge {
		return nil, &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: offline, cached identity older than offline_max_age", Err: cause}
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		return nil, &directory.Error{Kind: directory.ErrAccountDisabled, Reason: "ad: account expired"}
	}
	e.id.Cached = true
	return e, nil
}

// accountError carries the account name of a refused account so the cache
// entry can be dropped even when the user typed a UPN.
type accountError struct {
	err     *directory.Error
	account string
}

func (e *accountError) Error() string { return e.err.Error() }
func (e *accountError) Unwrap() error { return e.err }

func accountOf(err error) string {
	var ae *accountError
	if errors.As(err, &ae) {
		return ae.account
	}
	return ""
}

// fetch searches the user and its nested groups on one pooled connection.
func (d *Directory) fetch(ctx context.Context, n Name) (*entry, error) {
	esc := ldap.EscapeFilter(n.Account)
	filter := "(&(objectCategory=person)(objectClass=user)(sAMAccountName=" + esc + "))"
	if n.UPN != "" {
		filter = "(&(objectCategory=person)(objectClass=user)(|(userPrincipalName=" + ldap.EscapeFilter(n.UPN) +
			")(&(!(userPrincipalName=*))(sAMAccountName=" + esc + "))))"
	}
	var user *ldap.Entry
	var groups []*ldap.Entry
	err := d.dcs.do(ctx, func(c *ldap.Conn) error {
		user, groups = nil, nil
		tl := d.timeLimit()
		res, err := c.Search(ldap.NewSearchRequest(d.cfg.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
			2, tl, false, filter, d.attrs, nil))
		if err != nil && !ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) {
			return err
		}
		if res == nil || len(res.Entries) == 0 {
			return nil
		}
		if len(res.Entries) > 1 {
			return &directory.Error{Kind: directory.ErrNoSuchUser, Reason: "ad: name matches several accounts"}
		}
		user = res.Entries[0]
		gres, err := c.Search(ldap.NewSearchRequest(d.cfg.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
			0, tl, false, "(&(objectClass=group)(member:"+matchingRuleInChain+":="+ldap.EscapeFilter(user.DN)+"))",
			groupAttrs, nil))
		if err != nil {
			return err
		}
		groups = gres.Entries
		// The primary group (usually Domain Users) is linked by
		// primaryGroupID, not member, so the in-chain search misses it.
		if sid := primaryGroupSID(user.GetRawAttributeValue("objectSid"), user.GetAttributeValue("primaryGroupID")); sid != nil {
			pres, err := c.Search(ldap.NewSearchRequest(d.cfg.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
				1, tl, false, "(&(objectClass=group)(objectSid="+escapeBytes(sid)+"))", groupAttrs, nil))
			if err != nil && !ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) {
				return err
			}
			if pres != nil {
				groups = append(groups, pres.Entries...)
			}
		}
		return nil
	})
	if err != nil {
		var de *directory.Error
		if errors.As(err, &de) {
			return nil, err
		}
		return nil, &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: search error", Err: err}
	}
	if user == nil {
		return nil, &directory.Error{Kind: directory.ErrNoSuchUser, Reason: "ad: no such account"}
	}
	acct := strings.ToLower(user.GetAttributeValue("sAMAccountName"))
	if err := accountState(user, d.now()); err != nil {
		var de *directory.Error
		errors.As(err, &de)
		return nil, &accountError{err: de, account: acct}
	}
	names, dns, guids := groupsOf(groups)
	expires, _ := accountExpires(user) // accountState read it
	return &entry{
		id: directory.Identity{
			Name:      acct,
			Groups:    names,
			GroupDNs:  dns,
			Keys:      parseKeys(user, d.cfg.KeyAttribute, d.log),
			UID:       atoi(user.GetAttributeValue("uidNumber")),
			UIDSet:    user.GetAttributeValue("uidNumber") != "",
			GID:       atoi(user.GetAttributeValue("gidNumber")),
			Source:    "ad",
			FetchedAt: d.now(),
		},
		dn:          user.DN,
		upn:         strings.ToLower(user.GetAttributeValue("userPrincipalName")),
		expires:     expires,
		guid:        string(user.GetRawAttributeValue("objectGUID")),
		groupGUIDs:  guids,
		fingerprint: fingerprint(user, d.cfg.KeyAttribute),
		pwdLastSet:  user.GetAttributeValue("pwdLastSet"),
	}, nil
}

var _ directory.Lister = (*Directory)(nil)

// Version is the directory version the identity cache is in step with:
// the watched DC's name and the highestCommittedUSN up to which its changes
// have reached the cache (watch.go). It moves about watch_interval after a
// change is committed, once the identities the change affects are out of
// the cache, so a caller that rebuilds from Lookup when it moves (the Slurm
// sync, through directory.Watch) never rebuilds from identities older than
// the change. A failover to another DC also reads as a change. It waits for
// the watch's first read; while the watch cannot read, it stays put.
func (d *Directory) Version(ctx context.Context) (string, error) {
	select {
	case <-d.watched:
	case <-ctx.Done():
		return "", fmt.Errorf("ad: directory version: the watch has read no USN yet: %w", ctx.Err())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.version, nil
}

// Members lists the enabled accounts in group, nested membership included
// (LDAP_MATCHING_RULE_IN_CHAIN), or every enabled account for "*"; paged,
// so large groups work within the DC's size limits. Membership through
// primaryGroupID (Domain Users) is not listed: name such groups by a
// group they are nested in, or use "*". See directory.Lister.
func (d *Directory) Members(ctx context.Context, group string) ([]string, error) {
	// Enabled (ACCOUNTDISABLE clear) and not expired (accountExpires is
	// 0 or "never", or later than now in FILETIME units).
	ft := (d.now().Unix() + 11644473600) * 10_000_000
	enabled := fmt.Sprintf("(!(userAccountControl:1.2.840.113556.1.4.803:=2))(|(accountExpires=0)(accountExpires=9223372036854775807)(accountExpires>=%d))", ft)
	var out []string
	err := d.dcs.do(ctx, func(c *ldap.Conn) error {
		out = nil
		tl := d.timeLimit()
		filter := "(&(objectCategory=person)(objectClass=user)" + enabled + ")"
		if group != "*" {
			gres, err := c.Search(ldap.NewSearchRequest(d.cfg.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
				2, tl, false, "(&(objectClass=group)(sAMAccountName="+ldap.EscapeFilter(group)+"))", []string{"dn"}, nil))
			if err != nil && !ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) {
				return err
			}
			if gres == nil || len(gres.Entries) != 1 {
				return &directory.Error{Kind: directory.ErrNoSuchGroup, Reason: fmt.Sprintf("ad: group %q not found", group)}
			}
			filter = "(&(objectCategory=person)(objectClass=user)" + enabled +
				"(memberOf:" + matchingRuleInChain + ":=" + ldap.EscapeFilter(gres.Entries[0].DN) + "))"
		}
		res, err := c.SearchWithPaging(ldap.NewSearchRequest(d.cfg.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
			0, tl, false, filter, []string{"sAMAccountName"}, nil), 500)
		if err != nil {
			return err
		}
		for _, e := range res.Entries {
			if n := strings.ToLower(e.GetAttributeValue("sAMAccountName")); n != "" {
				out = append(out, n)
			}
		}
		return nil
	})
	if err != nil {
		var de *directory.Error
		if errors.As(err, &de) {
			return nil, err
		}
		return nil, &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: member search error", Err: err}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// VerifyPassword checks name's password with a bind as the user's DN; see
// directory.Directory.
func (d *Directory) VerifyPassword(ctx context.Context, name, password string) (directory.Identity, error) {
	n, err := ParseName(name, d.cfg.Domain, d.cfg.UPNSuffixes)
	if err != nil {
		return directory.Identity{}, err
	}
	// AD treats a simple bind with an empty password as an anonymous bind,
	// which succeeds: it must never reach the DC.
	if password == "" {
		return directory.Identity{}, &directory.Error{Kind: directory.ErrBadPassword, Reason: "ad: empty password"}
	}
	if len(password) > maxPassword {
		return directory.Identity{}, &directory.Error{Kind: directory.ErrBadPassword, Reason: "ad: password too long"}
	}
	if d.Offline() {
		// Only a DC can check the password: try one now rather than
		// wait for the reconnect backoff. A DC that is back answers
		// within moments; one still hung would cost the whole timeout,
		// past the gateway's password refusal delay.
		pctx, cancel := context.WithTimeout(ctx, probeWait)
		d.probeNow(pctx)
		cancel()
	}
	e, err := d.lookup(ctx, n)
	if err != nil {
		switch {
		case isOutage(err):
			return d.passwordOffline(n, password, err, false)
		case errors.Is(err, directory.ErrUnavailable):
			return directory.Identity{}, unchecked(err)
		}
		return directory.Identity{}, err
	}
	if e.id.Cached {
		return d.passwordOffline(n, password, nil, false)
	}
	sent, err := d.bindUser(ctx, e.dn, password)
	switch {
	case err == nil:
	case isOutage(err):
		d.goOffline(err)
		return d.passwordOffline(n, password, err, sent)
	case errors.Is(err, directory.ErrUnavailable):
		return directory.Identity{}, err
	case errors.Is(err, directory.ErrBadPassword):
		d.cache.forgetPassword(e.id.Name)
		return directory.Identity{}, err
	default:
		d.cache.delete(e.id.Name)
		return directory.Identity{}, err
	}
	if d.cfg.CachePasswords {
		if h, herr := argon2id.CreateHash(password, passwordHashParams); herr == nil {
			d.cache.setPassword(e.id.Name, h, d.now())
		}
	}
	return e.id, nil
}

// bindUser binds as dn on a fresh connection (never a pooled one: a bound
// connection carries the user's identity), trying the next DC only when
// the DC, not the password, failed. sent reports whether the password went
// out to a DC at all (a DC that hangs after it may still count it).
func (d *Directory) bindUser(ctx context.Context, dn, password string) (sent bool, err error) {
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		conn, i, err := d.dcs.dial(ctx, false, attempt > 0)
		if err != nil {
			return sent, err
		}
		conn.SetTimeout(d.dcs.budget(ctx))
		sent = true
		err = conn.Bind(dn, password)
		go conn.Close()
		if err == nil {
			return sent, nil
		}
		de, retry := classifyBind(err)
		if !retry {
			return sent, de
		}
		d.dcs.markDown(i)
		last = de
	}
	return sent, last
}

// passwordOffline verifies against the cached hash, if the opt-in cache has
// one young enough. sent says the password went out to a DC before the
// outage showed: then a refusal here is not marked ErrNotChecked.
func (d *Directory) passwordOffline(n Name, password string, cause error, sent bool) (directory.Identity, error) {
	mark := unchecked
	if sent {
		mark = func(err error) error { return err }
	}
	if !d.cfg.CachePasswords {
		return directory.Identity{}, mark(&directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: offline, password logins need a domain controller", Err: cause})
	}
	e, err := d.fromCache(n, cause)
	if err != nil {
		if errors.Is(err, directory.ErrUnavailable) {
			err = mark(err)
		}
		return directory.Identity{}, err
	}
	if e.pwHash == "" || d.now().Sub(e.pwAt) > d.cfg.PasswordCacheMaxAge {
		return directory.Identity{}, mark(&directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: offline, no cached password", Err: cause})
	}
	ok, err := argon2id.ComparePasswordAndHash(password, e.pwHash)
	if err != nil || !ok {
		return directory.Identity{}, &directory.Error{Kind: directory.ErrBadPassword, Reason: "ad: offline, cached password mismatch"}
	}
	return e.id, nil
}

// goOffline switches to cache-only answers and starts the reconnect loop.
func (d *Directory) goOffline(cause error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if !d.offline {
		d.offline = true
		d.offlineSince = d.now()
		d.attempted = time.Now()
		d.log.Warn("ad: no domain controller reachable, going offline", "reason", directory.Reason(cause), "err", cause)
	}
	if !d.probing {
		d.probing = true
		d.wg.Add(1)
		go d.reconnect()
	}
}

// reconnect retries the DCs with exponential backoff until one answers.
// A kick (a login while offline) brings the next attempt forward, to no
// sooner than RetryMin after the last one began.
func (d *Directory) reconnect() {
	defer d.wg.Done()
	wait := d.cfg.RetryMin
	for {
		t := time.NewTimer(wait)
		select {
		case <-d.quit:
			t.Stop()
			return
		case <-t.C:
		case <-d.kick:
			t.Stop()
			d.mu.Lock()
			last := d.attempted
			d.mu.Unlock()
			if early := time.Until(last.Add(d.cfg.RetryMin)); early > 0 {
				t = time.NewTimer(early)
				select {
				case <-d.quit:
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
		d.mu.Lock()
		d.started++
		d.attempted = time.Now()
		d.mu.Unlock()
		ctx, cancel := context.WithTimeout(d.ctx, time.Duration(len(d.cfg.URLs)+1)*d.cfg.Timeout)
		d.dcs.drain()
		err := d.Ping(ctx)
		cancel()
		d.mu.Lock()
		d.ended++
		close(d.probed)
		d.probed = make(chan struct{})
		if err == nil {
			since := d.offlineSince
			d.offline, d.probing = false, false
			d.mu.Unlock()
			d.log.Info("ad: domain controller reachable again, back online", "offline_for", d.now().Sub(since).Round(time.Second))
			return
		}
		d.mu.Unlock()
		d.log.Debug("ad: still offline", "retry_in", wait, "err", err)
		wait = min(2*wait, d.cfg.RetryMax)
	}
}

// probeWait is how long a password check while offline waits for the
// reconnect attempt it asked for.
const probeWait = 500 * time.Millisecond

// probeNow asks the reconnect loop, while offline, for an attempt now (no
// sooner than RetryMin after the last one began). With ctx it also waits
// (within ctx) until an attempt that began after the ask has ended, and
// reports whether the directory is online; without, or when that attempt
// is more than a DC timeout away, it returns at once.
func (d *Directory) probeNow(ctx context.Context) bool {
	d.mu.Lock()
	if !d.offline {
		d.mu.Unlock()
		return true
	}
	// Attempts up to started began before this ask (one may be running).
	want := d.started + 1
	soon := time.Until(d.attempted.Add(d.cfg.RetryMin)) <= d.cfg.Timeout
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default: // already asked
	}
	if ctx == nil || !soon {
		return false
	}
	for {
		d.mu.Lock()
		online, done, probed := !d.offline, d.ended >= want, d.probed
		d.mu.Unlock()
		if online || done {
			return online
		}
		select {
		case <-probed:
		case <-ctx.Done():
			return false
		case <-d.quit:
			return false
		}
	}
}

// Close stops the reconnect loop and closes the pooled connections.
func (d *Directory) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	close(d.quit)
	d.cancel()
	d.wg.Wait()
	d.dcs.close()
	return nil
}

// String describes the directory for logs (no secrets).
func (d *Directory) String() string {
	return fmt.Sprintf("ad(%s, base %s)", strings.Join(d.cfg.URLs, " "), d.cfg.BaseDN)
}

// timeLimit is the time limit (whole seconds) a search asks the DC for:
// one more than Timeout, which bounds the wait on our side. Samba counts
// the limit in whole seconds of its clock, so a limit of 1 can expire at
// once ("Time Limit Exceeded ... Indexed and full searches both failed"
// after 17 ms, seen with timeout 1s).
func (d *Directory) timeLimit() int { return int(d.cfg.Timeout/time.Second) + 1 }

// unchecked marks err directory.ErrNotChecked: the password never left the
// gateway.
func unchecked(err error) error { return &uncheckedError{err} }

type uncheckedError struct{ error }

func (e *uncheckedError) Unwrap() error { return e.error }

func (e *uncheckedError) Is(target error) bool { return target == directory.ErrNotChecked }

// CanonicalName maps the forms a user may type (alice, HPC\alice,
// alice@hpc.example.edu) to one key, for per-user throttling. Names that do
// not parse are returned as typed (they never reach AD anyway).
func (d *Directory) CanonicalName(typed string) string {
	n, err := ParseName(typed, d.cfg.Domain, d.cfg.UPNSuffixes)
	if err != nil {
		return typed
	}
	return n.Account
}

package ad

// The directory watch keeps the identity cache in step with AD, so an
// account disabled, locked out, expired, deleted or regrouped is refused
// or re-ruled at the next login, seconds after the change, not cache_ttl
// later. The recipe:
//
//  1. Every watch_interval, read the rootDSE of one DC on a connection of
//     the watch's own (directory.Watch does the polling): dsServiceName
//     (which DC), highestCommittedUSN (moves with every change the DC
//     commits, its own or replicated) and defaultNamingContext.
//  2. Unchanged: nothing to do. Changed on the same DC: search that DC, on
//     the same connection, for the users and groups with uSNChanged above
//     the USN last handled (paged, tombstones included where the service
//     account may see them), and the current members of each changed group
//     (nested included); drop exactly the identities changes.go finds
//     affected, and forget the "no such user" answers about changed names.
//  3. USNs are per DC: when another DC answers (failover, or the watch
//     follows the pool to the DC it now prefers), or the USN went back (a
//     DC restored from backup), nothing is known about what changed in
//     between: drop the whole cache. Likewise when the round would exceed
//     watch_max_changes, when the DC answers the search with an error, or
//     when the search failed three times in a row. A cache dropped is
//     always safe: every identity is fetched again at its next login.
//  4. While the directory is offline the watch pauses (the cache is what
//     logins are served from); a failed read is retried with backoff. The
//     USN last handled is kept across both, so changes made meanwhile on
//     the same DC are found when reads work again.
//
// A lookup in flight while a round drops identities does not store its
// answer (cache.gen), since it may have been read just before the change.
// The first successful read drops the whole cache once: identities cached
// before the watch knew any USN may predate a change.
//
// Replication between DCs still applies: a change made on another DC is
// seen when it reaches the watched one (AD: seconds within a site).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// Causes of a whole-cache flush (the cause label of
// frontdoor_ad_cache_flushes_total and _invalidations_total).
const (
	causeWatchStarted = "watch_started"
	causeDCChanged    = "dc_changed"
	causeUSNWentBack  = "usn_went_back"
	causeTooMany      = "too_many_changes"
	causeSearchFailed = "change_search_failed"
)

const (
	// searchPage is the page size of the watch's searches (AD's default
	// MaxPageSize is 1000).
	searchPage = 500
	// maxSearchFailures is how many change searches in a row may fail on
	// a DC whose rootDSE answers before the cache is dropped instead.
	maxSearchFailures = 3
	// logUsers bounds the account names one log line lists.
	logUsers = 20
)

// errTooManyChanges: a round would handle more than watch_max_changes
// entries.
var errTooManyChanges = errors.New("ad: watch: more changes than watch_max_changes")

// rootDSE is what the watch reads of a DC's rootDSE.
type rootDSE struct {
	service string // dsServiceName: which DC answered
	usn     uint64 // highestCommittedUSN
	nc      string // defaultNamingContext
}

// readRootDSE reads the rootDSE on c.
func readRootDSE(c *ldap.Conn, timeout time.Duration) (rootDSE, error) {
	res, err := c.Search(ldap.NewSearchRequest("", ldap.ScopeBaseObject, ldap.NeverDerefAliases, 1,
		max(1, int(timeout/time.Second)), false, "(objectClass=*)",
		[]string{"highestCommittedUSN", "dsServiceName", "defaultNamingContext"}, nil))
	if err != nil {
		return rootDSE{}, err
	}
	if len(res.Entries) != 1 {
		return rootDSE{}, &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: rootDSE has no entry"}
	}
	return rootDSEOf(res.Entries[0])
}

// rootDSEOf reads the values the watch needs. A DC that answers, but not
// what a DC should, is not an outage: the error is a *directory.Error, not
// a network error.
func rootDSEOf(e *ldap.Entry) (rootDSE, error) {
	bad := func(reason string, err error) (rootDSE, error) {
		return rootDSE{}, &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: rootDSE " + reason, Err: err}
	}
	var err error
	r := rootDSE{service: e.GetAttributeValue("dsServiceName"), nc: e.GetAttributeValue("defaultNamingContext")}
	if r.service == "" {
		return bad("has no dsServiceName", nil)
	}
	if r.usn, err = parseUSN(e.GetAttributeValue("highestCommittedUSN")); err != nil {
		return bad("has no usable highestCommittedUSN", err)
	}
	return r, nil
}

// parseUSN parses a USN (highestCommittedUSN, uSNChanged): a LargeInteger
// that is never negative.
func parseUSN(s string) (uint64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("ad: USN %q is not a non-negative integer", truncate(s, 40))
	}
	return uint64(v), nil
}

// formatVersion and parseVersion are Directory.Version's format: the DC's
// dsServiceName, "@", its highestCommittedUSN.
func formatVersion(dc string, usn uint64) string { return dc + "@" + strconv.FormatUint(usn, 10) }

func parseVersion(v string) (dc string, usn uint64, err error) {
	i := strings.LastIndexByte(v, '@')
	if i < 0 {
		return "", 0, fmt.Errorf("ad: version %q has no @", truncate(v, 40))
	}
	usn, err = parseUSN(v[i+1:])
	return v[:i], usn, err
}

// usnWatch is the directory.Versioner the watch polls, and what handles a
// change. Its methods run on the watch goroutine only.
type usnWatch struct {
	d *Directory

	conn *ldap.Conn  // the watch's own connection; nil until dialled
	dc   int         // index in cfg.URLs of conn's DC
	root rootDSE     // what the last successful read said
	stop func() bool // unregisters conn's close-on-Close

	readFails   int       // failed reads in a row
	quietUntil  time.Time // no read before then (backoff)
	searchFails int       // failed change searches in a row

	// baselined is closed once the first read has been handled (tests
	// wait for it).
	baselined chan struct{}
}

// startWatch runs the watch until Close.
func (d *Directory) startWatch() {
	w := &usnWatch{d: d, baselined: make(chan struct{})}
	d.watched = w.baselined
	dw := &directory.Watch{Source: w, Interval: d.cfg.WatchInterval,
		Timeout: time.Duration(len(d.cfg.URLs)+1) * d.cfg.Timeout,
		Changed: w.changed, Failed: w.failed}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer w.hangUp()
		dw.Run(d.ctx)
	}()
}

// Version reads the watched DC's rootDSE (see directory.Versioner), dialling
// the DC the pool prefers when the watch has no connection, or one to
// another DC.
func (w *usnWatch) Version(ctx context.Context) (string, error) {
	if w.d.Offline() {
		w.hangUp() // suspect, like every connection after an outage
		return "", directory.ErrWatchPaused
	}
	if time.Now().Before(w.quietUntil) {
		return "", directory.ErrWatchPaused
	}
	if w.conn != nil && (w.conn.IsClosing() || w.dc != w.d.dcs.preferredDC()) {
		w.hangUp()
	}
	if w.conn == nil {
		conn, i, err := w.d.dcs.dial(ctx, true, false)
		if err != nil {
			return "", w.readFailed(err)
		}
		w.conn, w.dc = conn, i
		// Close aborts a request in flight instead of waiting for it.
		w.stop = context.AfterFunc(w.d.ctx, func() { conn.Close() })
	}
	r, err := readRootDSE(w.conn, w.d.dcs.budget(ctx))
	if err != nil {
		w.hangUp()
		return "", w.readFailed(err)
	}
	if w.readFails > 0 {
		w.d.log.Info("ad: directory watch reading again", "dc", w.d.cfg.URLs[w.dc], "after_failures", w.readFails)
	}
	w.readFails, w.quietUntil, w.root = 0, time.Time{}, r
	if err := w.vouch(); err != nil {
		return "", err
	}
	return formatVersion(r.service, r.usn), nil
}

// readFailed counts a failed read and backs off: the interval, doubling
// with every failure in a row, up to retry_max.
func (w *usnWatch) readFailed(err error) error {
	w.readFails++
	w.d.metrics.watchErrors.WithLabelValues("read").Inc()
	back := min(w.d.cfg.WatchInterval<<min(w.readFails-1, 16), w.d.cfg.RetryMax)
	w.quietUntil = time.Now().Add(back - w.d.cfg.WatchInterval/2)
	return fmt.Errorf("ad: directory watch: reading highestCommittedUSN: %w", err)
}

// failed logs what directory.Watch reports: the first failure of a series
// as a warning, the rest at debug level.
func (w *usnWatch) failed(err error) {
	if w.readFails <= 1 && w.searchFails <= 1 {
		w.d.log.Warn("ad: directory watch failed; cached identities are kept and checked when it works again", "err", err)
		return
	}
	w.d.log.Debug("ad: directory watch still failing", "err", err)
}

// hangUp closes the watch's connection.
func (w *usnWatch) hangUp() {
	if w.conn != nil {
		w.stop()
		go w.conn.Close() // Close may wait for the DC
		w.conn, w.stop = nil, nil
	}
}

// changed handles a move from prev to the version Version just read (in
// w.root). An error keeps prev as the baseline: the same range is searched
// again at the next tick.
func (w *usnWatch) changed(ctx context.Context, prev, _ string) error {
	if err := w.handle(ctx, prev); err != nil {
		return err
	}
	w.d.metrics.watchUSN.Set(float64(w.root.usn))
	w.d.mu.Lock()
	w.d.version = formatVersion(w.root.service, w.root.usn)
	w.d.mu.Unlock()
	if prev == "" {
		select {
		case <-w.baselined:
		default:
			close(w.baselined)
		}
	}
	return nil
}

// handle brings the cache in step with w.root.
func (w *usnWatch) handle(ctx context.Context, prev string) error {
	if prev == "" {
		w.flushOwn()
		return nil
	}
	dc, usn, err := parseVersion(prev)
	switch {
	case err != nil || dc != w.root.service:
		w.flush(causeDCChanged, nil)
	case w.root.usn < usn:
		w.flush(causeUSNWentBack, fmt.Errorf("highestCommittedUSN went from %d to %d", usn, w.root.usn))
	default:
		return w.catchUp(ctx, usn)
	}
	return nil
}

// catchUp drops the identities the changes after USN since affect.
func (w *usnWatch) catchUp(ctx context.Context, since uint64) error {
	d := w.d
	if d.cache.len() == 0 && d.unknown.empty() {
		d.cache.invalidate(func(*entry) string { return "" }) // a lookup in flight may predate the change
		return nil
	}
	// Room for a full round of paged searches; each request is also
	// bounded by the connection's timeout.
	ctx, cancel := context.WithTimeout(ctx, 6*d.cfg.Timeout)
	defer cancel()
	w.conn.SetTimeout(d.cfg.Timeout)
	changes, members, err := w.search(ctx, since)
	switch {
	case errors.Is(err, errTooManyChanges):
		w.searchFails = 0
		w.flush(causeTooMany, err)
		return nil
	case err != nil:
		d.metrics.watchErrors.WithLabelValues("search").Inc()
		w.hangUp()
		w.searchFails++
		if isNetworkError(err) && w.searchFails < maxSearchFailures {
			return fmt.Errorf("ad: directory watch: searching entries changed since USN %d: %w", since, err)
		}
		w.searchFails = 0
		w.flush(causeSearchFailed, err)
		return nil
	}
	w.searchFails = 0
	cs := newChangeSet(changes, members)
	var names []string
	dropped := d.cache.invalidate(func(e *entry) string {
		cause := cs.affected(e)
		if cause != "" && len(names) < logUsers {
			names = append(names, e.id.Name)
		}
		return cause
	})
	d.unknown.forget(cs.accounts, cs.upns)
	total := 0
	for cause, n := range dropped {
		d.metrics.invalidations.WithLabelValues(cause).Add(float64(n))
		total += n
	}
	if total == 0 {
		d.log.Debug("ad: directory changed; no cached identity affected", "changed", len(changes), "usn", w.root.usn)
		return nil
	}
	slices.Sort(names)
	d.log.Info("ad: directory changed; cached identities dropped", "users", names, "dropped", total,
		"changed", len(changes), "usn", w.root.usn, "dc", d.cfg.URLs[w.dc])
	return nil
}

// search finds the users and groups changed after USN since on the watched
// DC, and the current members of the changed groups, all within
// watch_max_changes entries.
func (w *usnWatch) search(ctx context.Context, since uint64) ([]change, map[int][]member, error) {
	d := w.d
	budget := d.cfg.WatchMaxChanges
	tl := max(1, int(d.cfg.Timeout/time.Second))
	// From the top of the domain when the users live in it: an account
	// moved out of base_dn, and tombstones (CN=Deleted Objects), are
	// found too.
	base := d.cfg.BaseDN
	if w.root.nc != "" && dnWithin(base, w.root.nc) {
		base = w.root.nc
	}
	filter := fmt.Sprintf("(&(uSNChanged>=%d)(|(&(objectCategory=person)(objectClass=user))(objectClass=group)(&(objectClass=user)(isDeleted=TRUE))))", since+1)
	attrs := append(slices.Clone(d.attrs), "objectClass", "isDeleted")
	entries, err := searchBounded(ctx, w.conn, ldap.NewSearchRequest(base, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
		0, tl, false, filter, attrs, []ldap.Control{ldap.NewControlMicrosoftShowDeleted()}), budget, searchPage)
	if err != nil {
		return nil, nil, err
	}
	changes := make([]change, 0, len(entries))
	for _, e := range entries {
		changes = append(changes, changeOf(e, d.cfg.KeyAttribute))
	}
	budget -= len(entries)
	members := map[int][]member{}
	if d.cache.len() == 0 {
		return changes, members, nil // nobody cached can have joined
	}
	for i, c := range changes {
		if !c.group || c.deleted {
			continue
		}
		ms, err := searchBounded(ctx, w.conn, ldap.NewSearchRequest(d.cfg.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases,
			0, tl, false, "(&(objectCategory=person)(objectClass=user)(memberOf:"+matchingRuleInChain+":="+ldap.EscapeFilter(c.dn)+"))",
			[]string{"objectGUID", "sAMAccountName"}, nil), budget, searchPage)
		if err != nil {
			return nil, nil, err
		}
		budget -= len(ms)
		for _, m := range ms {
			members[i] = append(members[i], member{guid: string(m.GetRawAttributeValue("objectGUID")),
				account: strings.ToLower(m.GetAttributeValue("sAMAccountName"))})
		}
	}
	return changes, members, nil
}

// searchBounded runs a search in pages of page entries and returns
// errTooManyChanges as soon as it has more than limit entries (abandoning
// the rest on the DC).
func searchBounded(ctx context.Context, c *ldap.Conn, req *ldap.SearchRequest, limit, page int) ([]*ldap.Entry, error) {
	paging := ldap.NewControlPaging(uint32(min(limit+1, page)))
	req.Controls = append(req.Controls, paging)
	var out []*ldap.Entry
	// A DC that keeps handing out cookies with empty pages must not keep
	// the watch forever.
	for pages := 0; pages <= limit+1; pages++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err := c.Search(req)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Entries...)
		pc, _ := ldap.FindControl(res.Controls, ldap.ControlTypePaging).(*ldap.ControlPaging)
		if len(out) > limit {
			if pc != nil && len(pc.Cookie) > 0 {
				paging.SetCookie(pc.Cookie)
				paging.PagingSize = 0 // abandons the paged search
				_, _ = c.Search(req)
			}
			return nil, errTooManyChanges
		}
		if pc == nil || len(pc.Cookie) == 0 {
			return out, nil
		}
		paging.SetCookie(pc.Cookie)
	}
	return nil, errors.New("ad: paged search does not end")
}

// dnWithin reports whether dn is parent or under it (case-insensitive,
// RDN by RDN).
func dnWithin(dn, parent string) bool {
	a, err := ldap.ParseDN(dn)
	if err != nil {
		return false
	}
	p, err := ldap.ParseDN(parent)
	if err != nil {
		return false
	}
	return p.Equal(a) || p.AncestorOf(a)
}

// flushOwn is the first read's flush: every identity but those handed over
// by the previous process, which vouch checks from the handed-over USN.
func (w *usnWatch) flushOwn() {
	d := w.d
	n := d.cache.invalidate(func(e *entry) string {
		if e.handed {
			return ""
		}
		return causeWatchStarted
	})[causeWatchStarted]
	d.metrics.flushes.WithLabelValues(causeWatchStarted).Inc()
	d.metrics.invalidations.WithLabelValues(causeWatchStarted).Add(float64(n))
	d.log.Debug("ad: directory watch started", "reason", causeWatchStarted, "dropped", n, "dc", d.cfg.URLs[w.dc], "usn", w.root.usn)
}

// flush drops every cached identity and says why.
func (w *usnWatch) flush(cause string, err error) {
	d := w.d
	n := d.cache.flush()
	d.metrics.flushes.WithLabelValues(cause).Inc()
	d.metrics.invalidations.WithLabelValues(cause).Add(float64(n))
	args := []any{"reason", cause, "dropped", n, "dc", d.cfg.URLs[w.dc], "usn", w.root.usn}
	if err != nil {
		args = append(args, "err", err)
	}
	switch cause {
	case causeWatchStarted:
		d.log.Debug("ad: directory watch started", args...)
	case causeDCChanged, causeTooMany:
		d.log.Info("ad: directory watch dropped every cached identity", args...)
	default:
		d.log.Warn("ad: directory watch dropped every cached identity", args...)
	}
}

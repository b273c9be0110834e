package ad

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// dcs knows the domain controllers, dials them with failover and keeps the
// pool of service-account search connections.
type dcs struct {
	cfg     Config
	tls     *tls.Config // nil with InsecureNoTLS and no CA
	svcPass string
	log     *slog.Logger
	now     func() time.Time

	idle chan *pooled  // idle search connections
	sem  chan struct{} // one token per search connection in existence
	quit chan struct{} // closed by close()

	// mu protects the following.
	mu        sync.Mutex
	preferred int         // index of the DC that answered last
	downUntil []time.Time // per DC: skip until then while others answer
	closed    bool
}

type pooled struct {
	conn     *ldap.Conn
	dc       int
	lastUsed time.Time
}

func newDCs(cfg Config, svcPass string, log *slog.Logger, now func() time.Time) (*dcs, error) {
	d := &dcs{
		cfg:       cfg,
		svcPass:   svcPass,
		log:       log,
		now:       now,
		idle:      make(chan *pooled, cfg.PoolSize),
		sem:       make(chan struct{}, cfg.PoolSize),
		quit:      make(chan struct{}),
		downUntil: make([]time.Time, len(cfg.URLs)),
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s: no PEM certificate", cfg.CAFile)
		}
		d.tls = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, ServerName: cfg.TLSServerName}
	}
	return d, nil
}

// order returns the DC indexes to try: the preferred one first, then the
// others, with DCs that recently failed moved to the end (they are still
// tried unless skipDown: a DC marked down is better than no DC).
func (d *dcs) order(skipDown bool) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.cfg.URLs)
	now := d.now()
	var up, down []int
	for k := 0; k < n; k++ {
		i := (d.preferred + k) % n
		if now.Before(d.downUntil[i]) {
			down = append(down, i)
		} else {
			up = append(up, i)
		}
	}
	if skipDown {
		return up
	}
	return append(up, down...)
}

// preferredDC is the index of the DC new connections go to first.
func (d *dcs) preferredDC() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.preferred
}

func (d *dcs) markUp(i int) {
	d.mu.Lock()
	d.preferred = i
	d.downUntil[i] = time.Time{}
	d.mu.Unlock()
}

func (d *dcs) markDown(i int) {
	d.mu.Lock()
	d.downUntil[i] = d.now().Add(d.cfg.DCDownFor)
	if d.preferred == i {
		d.preferred = (i + 1) % len(d.cfg.URLs)
	}
	d.mu.Unlock()
}

// budget is the time one DC may take: the configured timeout, cut short by
// the caller's deadline.
func (d *dcs) budget(ctx context.Context) time.Duration {
	b := d.cfg.Timeout
	if dl, ok := ctx.Deadline(); ok {
		if r := time.Until(dl); r < b {
			b = r
		}
	}
	return b
}

// dialOne connects to DC i and sets up TLS, all within the budget. A DC that
// accepts TCP but never answers (SIGSTOPped, overloaded) fails at the TLS
// handshake or StartTLS deadline.
func (d *dcs) dialOne(ctx context.Context, i int) (*ldap.Conn, error) {
	raw := d.cfg.URLs[i]
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	host := u.Host
	if u.Port() == "" {
		port := "389"
		if u.Scheme == "ldaps" {
			port = "636"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	budget := d.budget(ctx)
	if budget <= 0 {
		return nil, context.DeadlineExceeded
	}
	deadline := time.Now().Add(budget)
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var nd net.Dialer
	c, err := nd.DialContext(dctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	tcfg := d.tlsFor(u.Hostname())
	var conn *ldap.Conn
	switch {
	case u.Scheme == "ldaps":
		tc := tls.Client(c, tcfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", raw, err)
		}
		conn = ldap.NewConn(tc, true)
		conn.Start()
	default:
		conn = ldap.NewConn(c, false)
		conn.Start()
		if d.cfg.StartTLS {
			// StartTLS's handshake has no deadline of its own; bound it with
			// the socket's.
			_ = c.SetDeadline(deadline)
			conn.SetTimeout(budget)
			if err := conn.StartTLS(tcfg); err != nil {
				conn.Close()
				return nil, fmt.Errorf("starttls with %s: %w", raw, err)
			}
			_ = c.SetDeadline(time.Time{})
		}
	}
	conn.SetTimeout(d.cfg.Timeout)
	return conn, nil
}

func (d *dcs) tlsFor(host string) *tls.Config {
	if d.tls == nil {
		return &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	c := d.tls.Clone()
	if c.ServerName == "" {
		c.ServerName = host
	}
	return c
}

// dial connects to the first DC that answers, and, when bind is set, binds
// as the service account on it. It returns ErrUnavailable when no DC could be
// reached.
func (d *dcs) dial(ctx context.Context, serviceBind, skipDown bool) (*ldap.Conn, int, error) {
	var errs []error
	for _, i := range d.order(skipDown) {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		start := time.Now()
		conn, err := d.dialOne(ctx, i)
		if err == nil && serviceBind {
			conn.SetTimeout(d.budget(ctx))
			err = conn.Bind(d.cfg.BindDN, d.svcPass)
			conn.SetTimeout(d.cfg.Timeout)
			if err != nil {
				conn.Close()
				if !isNetworkError(err) {
					// A wrong service password is a configuration error,
					// not an outage; every DC would say the same.
					return nil, i, &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: service account bind failed", Err: err}
				}
			}
		}
		if err == nil {
			d.markUp(i)
			return conn, i, nil
		}
		d.markDown(i)
		d.log.Warn("ad: domain controller unreachable", "dc", d.cfg.URLs[i], "took", time.Since(start).Round(time.Millisecond), "err", err)
		errs = append(errs, fmt.Errorf("%s: %w", d.cfg.URLs[i], err))
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("every domain controller failed moments ago"))
	}
	return nil, -1, &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: no domain controller reachable", Err: outage{errors.Join(errs...)}}
}

// get returns a bound search connection: an idle pooled one (health-checked
// if it idled long), or a new one while the pool has room.
func (d *dcs) get(ctx context.Context, skipDown bool) (*pooled, error) {
	for {
		var p *pooled
		select {
		case p = <-d.idle:
		default:
			select {
			case p = <-d.idle:
			case d.sem <- struct{}{}:
				conn, i, err := d.dial(ctx, true, skipDown)
				if err != nil {
					<-d.sem
					return nil, err
				}
				return &pooled{conn: conn, dc: i}, nil
			case <-ctx.Done():
				return nil, &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: no search connection", Err: ctx.Err()}
			case <-d.quit:
				return nil, &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: directory closed"}
			}
		}
		if p.conn.IsClosing() {
			d.discard(p)
			continue
		}
		if d.now().Sub(p.lastUsed) > d.cfg.IdleCheck {
			if err := ping(p.conn, d.budget(ctx)); err != nil {
				d.log.Info("ad: pooled connection failed health check", "dc", d.cfg.URLs[p.dc], "err", err)
				d.discard(p)
				continue
			}
		}
		return p, nil
	}
}

// put returns a healthy connection to the pool.
func (d *dcs) put(p *pooled) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed || p.conn.IsClosing() {
		d.discard(p)
		return
	}
	p.lastUsed = d.now()
	select {
	case d.idle <- p:
	default:
		d.discard(p)
	}
}

// discard closes a connection and frees its slot.
func (d *dcs) discard(p *pooled) {
	go p.conn.Close() // Close may wait for the DC; never make a login wait
	<-d.sem
}

// drain closes every idle connection (after an outage they are all suspect).
func (d *dcs) drain() {
	for {
		select {
		case p := <-d.idle:
			d.discard(p)
		default:
			return
		}
	}
}

// do runs fn on a pooled search connection. On a network error the
// connection is dropped, its DC marked down, and fn is retried once on a
// fresh connection to a DC not marked down, so a DC that hangs mid-request
// costs one timeout, not two.
func (d *dcs) do(ctx context.Context, fn func(*ldap.Conn) error) error {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var p *pooled
		p, err = d.get(ctx, attempt > 0)
		if err != nil {
			return err
		}
		p.conn.SetTimeout(d.budget(ctx))
		err = fn(p.conn)
		p.conn.SetTimeout(d.cfg.Timeout)
		if !isNetworkError(err) {
			d.put(p)
			return err
		}
		d.log.Warn("ad: search failed, dropping connection", "dc", d.cfg.URLs[p.dc], "err", err)
		d.markDown(p.dc)
		d.discard(p)
		d.drain()
	}
	return &directory.Error{Kind: directory.ErrUnavailable, Reason: "ad: search failed", Err: outage{err}}
}

// outage marks errors that mean no DC answered (as opposed to a DC that
// answered with an error): only those switch the directory offline.
type outage struct{ error }

func (o outage) Unwrap() error { return o.error }

func isOutage(err error) bool {
	var o outage
	return errors.As(err, &o)
}

// ping is the health check: read the rootDSE.
func ping(conn *ldap.Conn, timeout time.Duration) error {
	conn.SetTimeout(timeout)
	_, err := conn.Search(ldap.NewSearchRequest("", ldap.ScopeBaseObject, ldap.NeverDerefAliases, 1, int(timeout.Seconds()+1), false,
		"(objectClass=*)", []string{"defaultNamingContext"}, nil))
	return err
}

func (d *dcs) close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	d.mu.Unlock()
	close(d.quit)
	d.drain()
}

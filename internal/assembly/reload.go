package assembly

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// Reload: the configuration file read again, with everything it names, and
// applied to new logins; the sessions open go on as they started. In three
// steps, so that a reload either applies all of it or none:
//
//  1. check: the file as `frontdoor config check` reads it (config.Load
//     and load, the same code) and no key a running gateway cannot take
//     (config.Fixed) changed;
//  2. prepare what can fail: the files it names, the audit file opened, a
//     changed discovery source built, a changed S3 audit sink (the only
//     step that lets a running part go first: one spool, one owner; if
//     the new one fails, one with the running settings takes the spool
//     back);
//  3. swap, which cannot fail.
//
// Parts with state keep it where they are the same thing: the directory
// (and AD's caches) and the budget watch unless what they come from
// changed; the password throttle, admission counts, the session table,
// the inventory's discovered nodes and the gossip member always.

// ReloadError is a reload that changed nothing.
type ReloadError struct {
	// Refused: the file is valid but changes what a running gateway
	// cannot take in place (config.Fixed), or the process cannot reload
	// now.
	Refused bool
	// Problems, one per entry; "file:line: key: problem" where the
	// problem has a place in the file.
	Problems []string
}

func (e *ReloadError) Error() string { return strings.Join(e.Problems, "\n") }

// problems splits a joined error into its lines.
func problems(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Reload re-reads the configuration file and applies it to new logins, or
// returns a *ReloadError and changes nothing.
func (a *Gateway) Reload(ctx context.Context) error {
	a.change.Lock()
	defer a.change.Unlock()
	if a.handedOver {
		return &ReloadError{Refused: true, Problems: []string{"this process has handed the gateway over to a new one: reload that one"}}
	}
	running := a.cur.Load()
	cfg, err := config.Load(running.cfg.Path())
	if err != nil {
		return &ReloadError{Problems: problems(err)}
	}
	fixed := config.Unchangeable(running.cfg, cfg)
	if g, r := cfg.Gateway, running.cfg.Gateway; g.AdminListen != "" && g.AdminClientCA != "" && (g.AdminTokenFile == "") != (r.AdminTokenFile == "") {
		fixed = append(fixed, cfg.Errorf("gateway.admin_token_file", "turning bearer tokens on or off changes whether the admin listener's TLS requires a client certificate, which is set up when it is opened: `frontdoor upgrade` applies it"))
	}
	if len(fixed) > 0 {
		return &ReloadError{Refused: true, Problems: problems(errors.Join(fixed...))}
	}
	p, err := load(cfg, running, a.log)
	if err != nil {
		return &ReloadError{Problems: problems(err)}
	}
	next, err := a.prepare(ctx, running, p)
	if err != nil {
		if p.dir != running.dir {
			p.dir.Close()
		}
		p.gw.Discard()
		return &ReloadError{Problems: problems(err)}
	}
	a.apply(running, p, next)
	return nil
}

// services are the running parts a reload replaces when their section
// changed; nil keeps the running one.
type services struct {
	auditFile *os.File
	disc      *discoveryRun
	discOff   bool
	auditS3   *s3sink.Sink
	s3Off     bool
}

// prepare makes what a reload needs that can fail (step 2).
func (a *Gateway) prepare(ctx context.Context, running, p *parts) (_ *services, err error) {
	cfg, old := p.cfg, running.cfg
	s := &services{}
	defer func() {
		if err != nil {
			if s.auditFile != nil {
				s.auditFile.Close()
			}
			if s.disc != nil {
				a.stopDiscovery(s.disc)
			}
		}
	}()
	if cfg.Audit.File != "" {
		if s.auditFile, err = audit.OpenFile(cfg.Audit.File); err != nil {
			return nil, cfg.Errorf("audit.file", "%v", err)
		}
	}
	if !same(old.Discovery, cfg.Discovery) {
		if cfg.Discovery == nil {
			s.discOff = true
		} else {
			// The new source's loop feeds the inventory from its first
			// refresh; the running one stops at the swap.
			if s.disc, err = a.startDiscovery(ctx, *cfg.Discovery); err != nil {
				return nil, cfg.Errorf("discovery", "%v", err)
			}
		}
	}
	if !same(old.Audit.S3, cfg.Audit.S3) {
		if prev := a.auditS3.Swap(nil); prev != nil {
			a.Audit.SetSinks()
			if err := a.closeAuditS3(prev, 5*time.Second); err != nil {
				a.log.Warn("audit s3: closing the previous sink for a reload", "err", err)
			}
		}
		if cfg.Audit.S3 == nil {
			s.s3Off = true
		} else if s.auditS3, err = a.newAuditS3(ctx, cfg); err != nil {
			if old.Audit.S3 != nil {
				a.restoreAuditS3(old)
			}
			return nil, cfg.Errorf("audit.s3", "%v", err)
		}
	}
	return s, nil
}

// restoreAuditS3 gives the spool back to a sink with the running settings
// after a reload's new one failed.
func (a *Gateway) restoreAuditS3(old *config.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := a.newAuditS3(ctx, old)
	if err != nil {
		a.log.Error("audit s3: the previous sink cannot be reopened either; audit events go to the file and the log only", "err", err)
		return
	}
	a.auditS3.Store(s)
	a.Audit.SetSinks(s)
}

// apply swaps the new configuration in (step 3).
func (a *Gateway) apply(running, p *parts, s *services) {
	cfg := p.cfg
	a.Inventory.Reload(cfg.Nodes, p.nodeKeys)
	a.Router.SetStaleAfter(cfg.Route.StaleAfter)
	caBefore, _ := a.SSH.UserCA()
	a.SSH.Apply(p.gw)
	if caNow, _ := a.SSH.UserCA(); !bytes.Equal(caBefore.Marshal(), caNow.Marshal()) {
		a.logUserCA(cfg.Gateway.Name)
	}
	var file io.WriteCloser // none: the log only
	if s.auditFile != nil {
		file = s.auditFile
	}
	if err := a.Audit.SetFile(file); err != nil {
		a.log.Warn("audit: closing the previous file", "err", err)
	}
	switch {
	case s.auditS3 != nil:
		a.auditS3.Store(s.auditS3)
		a.Audit.SetSinks(s.auditS3)
	case s.s3Off:
		a.Audit.SetSinks()
	}
	if s.disc != nil || s.discOff {
		if a.disc != nil {
			a.stopDiscovery(a.disc)
		}
		a.disc = s.disc
		if s.disc != nil {
			a.Registry.MustRegister(s.disc.src.Collectors()...)
		}
		if s.discOff {
			a.Inventory.SetDiscovered(nil)
		}
	}
	if a.admin != nil {
		a.admin.SetTokens(p.tokens)
	}
	if a.o.LogLevel != nil {
		var l slog.Level
		if l.UnmarshalText([]byte(cfg.Log.Level)) == nil {
			a.o.LogLevel.Set(l)
		}
	}
	if p.budget != running.budget {
		if a.budgetRun != nil {
			a.budgetRun()
			a.budgetRun = nil
		}
		a.startBudget(p)
	}
	if p.dir != running.dir {
		// A login that started under the running directory may still ask
		// it something: close it once every such login is over.
		old := running.dir
		a.unregisterDirectory(old)
		a.registerDirectory(p.dir)
		time.AfterFunc(running.cfg.Gateway.LoginGraceTime, func() { old.Close() })
	}
	a.cur.Store(p)
}

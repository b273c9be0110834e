package assembly

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/source"
	"github.com/frontdoor-hpc/frontdoor/internal/gateway"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/internal/usage"
	"github.com/frontdoor-hpc/frontdoor/internal/yamlconf"
)

// What a configuration names, loaded and checked: the users file or AD
// settings, the login nodes' known_hosts, the admin tokens and TLS files,
// the gateway's host keys and user CA, Slurm for banners. One function,
// load, does it for `frontdoor config check` (Check), for a start (Build)
// and for a reload (Reload), so a file the check accepts is one a gateway
// starts or reloads with, and a reload validates exactly as the check
// does before anything is swapped.
//
// Nothing here starts anything: the directory is opened (AD is not
// contacted), the budget watch is built and not run.

// parts are a configuration's files, loaded.
type parts struct {
	cfg *config.Config
	dir directory.Directory
	// dirKey says what dir was opened from: the directory section and
	// the bytes of the files it names. A reload with the same key keeps
	// the running directory, and with it AD's caches.
	dirKey   string
	nodeKeys *node.HostKeys
	tokens   *admin.Tokens // nil without admin_listen and a token file
	// budget is set with a slurm section and budgets; usageKey says what
	// it was built from (a reload with the same key keeps the running one).
	budget   *usage.BudgetWatch
	usageKey string
	gw       *gateway.Prepared
}

// Check loads the configuration at path and every file it names, as a
// gateway does when it starts or reloads, and returns it; on failure it
// returns every problem, one per line, each "file:line: key: problem"
// where it has a place in the file.
func Check(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	p, err := load(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	if err := p.dir.Close(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// load loads what cfg names; running, if set, are the parts in use, whose
// directory and budget watch are kept when nothing they come from changed.
// On failure nothing new stays open.
func load(cfg *config.Config, running *parts, log *slog.Logger) (_ *parts, err error) {
	p := &parts{cfg: cfg}
	var errs []error
	at := func(key string, err error) {
		if err == nil {
			return
		}
		if _, located := errors.AsType[*yamlconf.Error](err); located {
			errs = append(errs, err) // already "file:line: ..." (the users file's own)
			return
		}
		errs = append(errs, cfg.Errorf(key, "%v", err))
	}
	defer func() {
		if err != nil && p.dir != nil && (running == nil || p.dir != running.dir) {
			p.dir.Close()
		}
	}()

	if p.dirKey, err = directoryKey(cfg.Directory); err != nil {
		at("directory", err)
	} else if running != nil && running.dirKey == p.dirKey {
		p.dir = running.dir
	} else {
		p.dir, err = source.Open(cfg.Directory, log)
		at("directory."+cfg.Directory.Kind, err)
	}
	p.nodeKeys, err = node.LoadHostKeys(cfg.Backend.KnownHosts, cfg.Backend.InsecureIgnoreHostKeys)
	at("backend.known_hosts", err)
	if g := cfg.Gateway; g.AdminListen != "" {
		// The admin API's credentials: a token file others may read, or
		// TLS files that do not load, would stop the gateway at start.
		if g.AdminTokenFile != "" {
			p.tokens, err = admin.LoadTokenFile(g.AdminTokenFile)
			at("gateway.admin_token_file", err)
		}
		if g.AdminTLSCert != "" {
			_, err = admin.TLSConfig(admin.TLSFiles{Cert: g.AdminTLSCert, Key: g.AdminTLSKey, ClientCA: g.AdminClientCA}, false)
			at("gateway.admin_tls_cert", err)
		}
	}
	deps := gateway.Deps{Directory: p.dir, NodeKeys: p.nodeKeys}
	if sl := cfg.Slurm; sl != nil {
		client := sl.Client()
		deps.GPUUsage = &slurm.UsageCache{Client: client, TTL: sl.UsageCache, Wait: sl.UsageTimeout}
		if len(cfg.Usage.Budgets) > 0 {
			p.usageKey = budgetKey(*sl, cfg.Usage)
			if running != nil && p.usageKey != "" && running.usageKey == p.usageKey {
				p.budget = running.budget
			} else {
				// A month of accounting is a large read: twice the timeout.
				slow := *client
				slow.Timeout = 2 * sl.Timeout
				p.budget = usage.NewBudgetWatch(&slow, cfg.Usage, log.With("component", "budgets"))
			}
			deps.Budget = p.budget.Warning
		}
	}
	p.gw, err = gateway.Prepare(cfg, deps)
	if err != nil {
		errs = append(errs, err) // located by the gateway (host keys, user CA)
	}
	if len(errs) > 0 {
		if p.gw != nil {
			p.gw.Discard()
		}
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// directoryKey identifies a directory by its section and the contents of
// the files it names: the same key, the same directory.
func directoryKey(c source.Config) (string, error) {
	h := sha256.New()
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	h.Write(b)
	var files []string
	switch c.Kind {
	case source.KindStatic:
		files = []string{c.Static.File}
	case source.KindAD:
		files = []string{c.AD.CAFile, c.AD.BindPasswordFile}
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00", f, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// budgetKey identifies a budget watch by what it reads and how it prices:
// the same key, the same watch. The sections' values are compared, not
// their pointers (usage.aws is one).
func budgetKey(sl slurm.Config, u usage.Config) string {
	b, err := json.Marshal(struct {
		Slurm slurm.Config
		Usage usage.Config
	}{sl, u})
	if err != nil {
		return "" // never equal: a new watch
	}
	return string(b)
}

// same reports whether two optional sections are equal (both absent
// included).
func same[T any](a, b *T) bool { return reflect.DeepEqual(a, b) }

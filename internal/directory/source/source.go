// Package source picks and opens the identity source a configuration
// names: the `directory:` section (kind, static, ad) and the one function
// that turns it into a directory.Directory. The gateway, `frontdoor slurm`
// and `frontdoor usage` all open their directory here, so a tool that
// needs identities does not have to import the SSH server.
package source

import (
	"fmt"
	"log/slog"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/ad"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/static"
)

// The directory kinds built in.
const (
	KindStatic = "static"
	KindAD     = "ad"
)

// Config is the `directory:` section of the gateway configuration.
type Config struct {
	// Kind is the identity source: "static" (a YAML file of users) or
	// "ad" (Active Directory).
	Kind string `yaml:"kind"`
	// Static configures the static directory (kind static).
	Static static.Config `yaml:"static"`
	// AD configures Active Directory (kind ad).
	AD ad.Config `yaml:"ad"`
}

// DefaultConfig returns the defaults: the static directory, and each
// kind's own defaults.
func DefaultConfig() Config {
	return Config{Kind: KindStatic, Static: static.DefaultConfig(), AD: ad.DefaultConfig()}
}

// Validate reports a section that cannot work, each error as
// "directory.key: problem" (errors.Join'ed): the kind's own section is
// checked, the other one is not used.
func (c Config) Validate() error {
	switch c.Kind {
	case KindStatic:
		return c.Static.Validate()
	case KindAD:
		return c.AD.Validate()
	}
	return fmt.Errorf("directory.kind: unknown kind %q (want %s or %s)", c.Kind, KindStatic, KindAD)
}

// Open builds the identity source cfg names; cfg must be valid. It does
// not contact AD (see ad.New): a tool started during an outage finds out
// on its first lookup.
func Open(cfg Config, log *slog.Logger) (directory.Directory, error) {
	if log == nil {
		log = slog.Default()
	}
	switch cfg.Kind {
	case KindStatic:
		d, err := static.New(cfg.Static.File)
		if err != nil {
			return nil, err
		}
		return d, nil
	case KindAD:
		d, err := ad.New(cfg.AD, log.With("directory", "ad"))
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil, fmt.Errorf("directory kind %q is not built in", cfg.Kind)
}

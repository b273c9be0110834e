package gateway

import (
	"net/netip"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// settings is everything a connection takes from the configuration,
// loaded and checked once: a connection keeps the settings it was accepted
// under for its whole login, and its session the relay it started with, so
// a configuration applied meanwhile (reload.go) never changes a login
// half-way or an open session at all.
type settings struct {
	cfg        *config.Config
	hostKeys   []ssh.Signer   // the gateway's own, shown to clients
	ca         *ca.CA         // signs backend login certificates
	nodeKeys   *node.HostKeys // login nodes' host keys, by name
	principals login.Principals
	exempt     []netip.Prefix // admission_exempt

	dir    directory.Directory
	usage  GPUUsage // nil: banners show no GPU use
	budget func(account string) string
}

// newSettings loads the files cfg names (host keys, the user CA) and takes
// the parts of d that follow the configuration.
func newSettings(cfg *config.Config, d Deps) (*settings, error) {
	hk, err := ca.LoadHostSigners(cfg.Gateway.HostKeys, cfg.Gateway.HostCertificates)
	if err != nil {
		return nil, cfg.Errorf("gateway.host_keys", "%v", err)
	}
	caSigner, err := ca.LoadSigner(cfg.Gateway.UserCAKey)
	if err != nil {
		return nil, cfg.Errorf("gateway.user_ca_key", "%v", err)
	}
	return &settings{
		cfg:        cfg,
		hostKeys:   hk,
		ca:         ca.New(caSigner, cfg.Gateway.Name, cfg.Backend.CertValidity, cfg.Backend.CertSourceAddress),
		nodeKeys:   d.NodeKeys,
		principals: login.Principals{MinUID: cfg.Backend.MinUID, Deny: cfg.Backend.DenyPrincipals},
		exempt:     cfg.Gateway.AdmissionExemptPrefixes(),
		dir:        d.Directory,
		usage:      d.GPUUsage,
		budget:     d.Budget,
	}, nil
}

// usageWait is how long a banner waits for GPU use: slurm.usage_timeout;
// 0 without a slurm section (no GPUUsage then, nothing waits).
func usageWait(cfg *config.Config) time.Duration {
	if cfg.Slurm == nil {
		return 0
	}
	return cfg.Slurm.UsageTimeout
}

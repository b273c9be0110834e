package gateway

import (
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// settings is everything a connection takes from the configuration,
// loaded and checked once: a connection keeps the settings it was accepted
// under for its whole login, so a configuration applied meanwhile never
// changes a login half-way.
type settings struct {
	cfg        *config.Config
	hostKeys   []ssh.Signer   // the gateway's own, shown to clients
	ca         *ca.CA         // signs backend login certificates
	nodeKeys   *node.HostKeys // login nodes' host keys, by name
	principals login.Principals
	exempt     []netip.Prefix // admission_exempt
}

// newSettings loads the files cfg names (host keys, the user CA).
func newSettings(cfg *config.Config, nodeKeys *node.HostKeys) (*settings, error) {
	hk, err := ca.LoadHostSigners(cfg.Gateway.HostKeys, cfg.Gateway.HostCertificates)
	if err != nil {
		return nil, fmt.Errorf("gateway host keys: %w", err)
	}
	caSigner, err := ca.LoadSigner(cfg.Gateway.UserCAKey)
	if err != nil {
		return nil, fmt.Errorf("gateway user CA: %w", err)
	}
	return &settings{
		cfg:        cfg,
		hostKeys:   hk,
		ca:         ca.New(caSigner, cfg.Gateway.Name, cfg.Backend.CertValidity, cfg.Backend.CertSourceAddress),
		nodeKeys:   nodeKeys,
		principals: login.Principals{MinUID: cfg.Backend.MinUID, Deny: cfg.Backend.DenyPrincipals},
		exempt:     cfg.Gateway.AdmissionExemptPrefixes(),
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

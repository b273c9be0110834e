package gateway

import (
	"context"
	"net/netip"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
	"github.com/frontdoor-hpc/frontdoor/internal/mfa"
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
	mfa        *mfa.Client    // nil without an mfa section

	dir    directory.Directory
	usage  GPUUsage // nil: banners show no GPU use
	budget func(account string) string
}

// followed are the parts of Deps that follow the configuration.
type followed struct {
	dir      directory.Directory
	nodeKeys *node.HostKeys
	usage    GPUUsage
	budget   func(account string) string
}

// newSettings loads the files cfg names (host keys, the user CA) and takes
// the parts of Deps that follow the configuration (d.Directory, ...).
func newSettings(cfg *config.Config, d followed) (*settings, error) {
	hk, err := ca.LoadHostSigners(cfg.Gateway.HostKeys, cfg.Gateway.HostCertificates)
	if err != nil {
		return nil, cfg.Errorf("gateway.host_keys", "%v", err)
	}
	userCA, err := loadUserCA(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	var mc *mfa.Client
	if cfg.MFA != nil {
		if mc, err = mfa.New(*cfg.MFA); err != nil {
			return nil, cfg.Errorf("mfa.secret_file", "%v", err)
		}
	}
	return &settings{
		mfa:        mc,
		cfg:        cfg,
		hostKeys:   hk,
		ca:         userCA,
		nodeKeys:   d.nodeKeys,
		principals: login.Principals{MinUID: cfg.Backend.MinUID, Deny: cfg.Backend.DenyPrincipals},
		exempt:     cfg.Gateway.AdmissionExemptPrefixes(),
		dir:        d.dir,
		usage:      d.usage,
		budget:     d.budget,
	}, nil
}

// Prepared is a configuration ready to apply.
type Prepared struct {
	set *settings
}

// Discard releases what p holds when it will not be applied.
func (p *Prepared) Discard() { p.set.ca.Close() }

// exemptSource reports whether the client source key srcK (an IPv4
// address or an IPv6 /64, see SourceKey) lies in admission_exempt: one
// shared source for many users, not limited per source.
func (s *settings) exemptSource(srcK string) bool {
	p, err := netip.ParsePrefix(srcK)
	if err != nil {
		a, err := netip.ParseAddr(srcK)
		if err != nil {
			return false
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	for _, e := range s.exempt {
		if e.Bits() <= p.Bits() && e.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// loadUserCA opens this gateway's user CA as cfg says — the key file
// gateway.user_ca_key, or the KMS key gateway.user_ca_kms, whose public
// key is read here, once, within its timeout — and returns the CA that
// mints its backend login certificates (backend.cert_validity,
// backend.cert_source_address). It is the one place the user CA is
// loaded: at start, and again on every reload.
func loadUserCA(ctx context.Context, cfg *config.Config) (*ca.CA, error) {
	key, err := ca.OpenAuthority(ctx, ca.KeySource{File: cfg.Gateway.UserCAKey, KMS: cfg.Gateway.UserCAKMS})
	if err != nil {
		at := "gateway.user_ca_key"
		if cfg.Gateway.UserCAKMS != nil {
			at = "gateway.user_ca_kms"
		}
		return nil, cfg.Errorf(at, "%v", err)
	}
	return ca.New(key, ca.Options{Gateway: cfg.Gateway.Name, Validity: cfg.Backend.CertValidity,
		SourceAddresses: cfg.Backend.CertSourceAddress}), nil
}

// usageWait is how long a banner waits for GPU use: slurm.usage_timeout;
// 0 without a slurm section (no GPUUsage then, nothing waits).
func usageWait(cfg *config.Config) time.Duration {
	if cfg.Slurm == nil {
		return 0
	}
	return cfg.Slurm.UsageTimeout
}

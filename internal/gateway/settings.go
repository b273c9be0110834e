package gateway

import (
	"fmt"
	"net/netip"

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
		principals: login.Principals{MinUID: *cfg.Backend.MinUID, Deny: cfg.Backend.DenyPrincipals},
		exempt:     cfg.Gateway.AdmissionExemptPrefixes(),
	}, nil
}

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

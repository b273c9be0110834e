package harness

import (
	"github.com/frontdoor-hpc/frontdoor/internal/directory/ad"
	"github.com/frontdoor-hpc/frontdoor/test/harness/samba"
)

// ADConfig is a gateway's directory.ad section for dc: its LDAPS URL and
// CA, the administrator's bind, the domain and UPN suffix, SSH keys in
// sshPublicKey; every other key at its default.
func ADConfig(dc *samba.DC) ad.Config {
	c := ad.DefaultConfig()
	c.URLs, c.CAFile, c.BaseDN = []string{dc.URL()}, dc.CAFile(), dc.BaseDN()
	c.BindDN, c.BindPassword, c.Domain = dc.AdminDN(), dc.AdminPassword(), dc.Domain()
	c.UPNSuffixes, c.KeyAttribute = []string{dc.UPNSuffix()}, "sshPublicKey"
	return c
}

package admin

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// Listen opens the admin listeners a gateway configuration asks for — the
// Unix socket unless admin_socket is off, the TCP address if admin_listen
// is set (TLS if admin_tls_cert is) — and returns the server for them,
// ready to Run. o's credentials, Host allow-list and switches are filled
// in from g.
func Listen(g config.Gateway, o Options) (*Server, error) {
	var lns []net.Listener
	fail := func(err error) (*Server, error) {
		for _, ln := range lns {
			ln.Close()
		}
		return nil, err
	}
	if g.AdminSocketEnabled() {
		ln, err := ListenUnix(g.AdminSocket)
		if err != nil {
			return fail(err)
		}
		lns = append(lns, ln)
	}
	o.MetricsPublic, o.Pprof = g.AdminMetricsPublic, g.AdminPprof
	o.ClientNames, o.ReadOnlyClientNames = g.AdminClientNames, g.AdminReadOnlyClientNames
	if g.AdminListen != "" {
		if g.AdminTokenFile != "" {
			t, err := LoadTokenFile(g.AdminTokenFile)
			if err != nil {
				return fail(err)
			}
			o.Tokens = t
		}
		if o.Tokens == nil && g.AdminClientCA == "" {
			// config validation refuses this; never serve TCP unauthenticated.
			return fail(errors.New("admin_listen without admin_token_file or admin_client_ca"))
		}
		ln, err := net.Listen("tcp", g.AdminListen)
		if err != nil {
			return fail(fmt.Errorf("admin listen: %w", err))
		}
		hosts := append([]string(nil), g.AdminAllowedHosts...)
		if g.AdminTLSCert != "" {
			tc, err := TLSConfig(TLSFiles{Cert: g.AdminTLSCert, Key: g.AdminTLSKey, ClientCA: g.AdminClientCA}, o.Tokens == nil)
			if err != nil {
				ln.Close()
				return fail(err)
			}
			hosts = append(hosts, CertHosts(tc)...)
			ln = tls.NewListener(ln, tc)
		} else if h, _, _ := net.SplitHostPort(g.AdminListen); !config.LoopbackHost(h) {
			if !g.AdminAllowPlaintext {
				// config validation refuses this too.
				ln.Close()
				return fail(fmt.Errorf("admin_listen %s: not loopback and no TLS (admin_allow_plaintext is not set)", g.AdminListen))
			}
			if o.Log != nil {
				o.Log.Warn("admin API on a non-loopback address without TLS (admin_allow_plaintext): bearer tokens travel in clear text",
					"addr", g.AdminListen)
			}
		}
		// A wildcard listen address admits whatever port it got; the
		// allow-list is about names.
		o.AllowedHosts = DefaultAllowedHosts(g.AdminListen, hosts...)
		lns = append(lns, ln)
	}
	s := New(o)
	s.lns = lns
	for _, ln := range lns {
		s.log.Info("admin API listening", "on", describe(ln))
	}
	return s, nil
}

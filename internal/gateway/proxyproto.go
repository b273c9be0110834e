package gateway

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/pires/go-proxyproto"
)

// proxyHeaderTimeout bounds the wait for a PROXY protocol header.
const proxyHeaderTimeout = 5 * time.Second

// withProxyProtocol wraps ln so that connections from trusted load
// balancers must start with a PROXY protocol (v1 or v2) header, whose
// source address then stands for the client everywhere (logs, audit,
// throttling). Everyone else is served as plain SSH without looking for a
// header (no peeking delay): a PROXY line from them is just a pre-version
// line to the SSH server, never trusted, so nobody can spoof an address.
func withProxyProtocol(ln net.Listener, trusted []netip.Prefix) net.Listener {
	return &proxyproto.Listener{
		Listener:          ln,
		ReadHeaderTimeout: proxyHeaderTimeout,
		ConnPolicy: func(o proxyproto.ConnPolicyOptions) (proxyproto.Policy, error) {
			ap, err := netip.ParseAddrPort(o.Upstream.String())
			if err != nil {
				return proxyproto.SKIP, nil
			}
			for _, p := range trusted {
				if p.Contains(ap.Addr().Unmap()) {
					return proxyproto.REQUIRE, nil
				}
			}
			return proxyproto.SKIP, nil
		},
	}
}

// checkProxyHeader reads the PROXY header of a wrapped connection (if any)
// and reports a missing, forbidden or malformed one. The library defers
// these errors to the first Read; a zero-length read surfaces them before
// anything else touches the connection.
func checkProxyHeader(c net.Conn) error {
	if _, ok := c.(*proxyproto.Conn); !ok {
		return nil
	}
	if _, err := c.Read(nil); err != nil {
		return fmt.Errorf("PROXY protocol: %w", err)
	}
	return nil
}

package admin

import (
	"errors"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// What a browser can be made to do against an admin API, and what stops it:
//
//   - DNS rebinding: a page on evil.example re-points its own name at
//     127.0.0.1 and reads the API as "same origin". Its requests carry
//     Host: evil.example, so TCP requests must name an allowed host
//     (421 otherwise). The Unix socket is out of a browser's reach.
//   - Cross-site request forgery: a page POSTs to the API. Browsers say
//     where a request comes from (Sec-Fetch-Site, Origin): state-changing
//     requests from another site, or from an origin that is not an
//     allowed host, are refused (403). And a state-changing request must
//     be application/json, which no HTML form can send and which a
//     script can send cross-origin only after a CORS preflight this
//     server never grants (415 otherwise).
//
// Credentials are checked after these (identity.go): a request that a
// browser was tricked into sending gets no further than the guard, even
// if the browser holds a client certificate.

// DefaultAllowedHosts is the Host allow-list for a TCP admin address:
// the listen address's host (unless it is a wildcard), the loopback
// names, and extra (admin_allowed_hosts, the TLS certificate's names).
func DefaultAllowedHosts(listen string, extra ...string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			hosts = append(hosts, h)
		}
	}
	return append(hosts, extra...)
}

// hostSet is a Host allow-list, names compared case-insensitively and
// without a trailing dot.
type hostSet map[string]bool

func newHostSet(hosts []string) hostSet {
	s := hostSet{}
	for _, h := range hosts {
		s[normHost(h)] = true
	}
	return s
}

func normHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// allows reports whether a Host header (host or host:port) names an
// allowed host.
func (s hostSet) allows(hostport string) bool {
	if hostport == "" {
		return false
	}
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	return s[normHost(h)]
}

// errCrossSite and errContentType are the guard's refusals.
var (
	errCrossSite   = errors.New("cross-site request refused")
	errContentType = errors.New("state-changing requests must be Content-Type: application/json")
)

// safeMethod: requests that change nothing (and that browsers send
// cross-site freely, so they must not change anything).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkCrossSite refuses a state-changing request a browser says comes
// from another site, or whose Origin is not an allowed host. Requests
// without either header (curl, the frontdoor CLI) pass: only browsers
// send them, and browsers always do on a POST.
func checkCrossSite(r *http.Request, allowed hostSet) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default: // cross-site, same-site, or anything new
		return errCrossSite
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !allowed.allows(u.Host) {
		return errCrossSite // includes "null" (sandboxed frames, file: pages)
	}
	return nil
}

// checkContentType requires application/json on state-changing requests.
func checkContentType(r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errContentType
	}
	return nil
}

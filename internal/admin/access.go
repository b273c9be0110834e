package admin

import (
	"fmt"
	"net/http"
)

// What a read-only credential may do. Dashboards, scrapers and browsers
// hold read-only tokens or certificates because they are stored in places
// an admin's credential should not be (a Grafana data source, a
// Prometheus config, a browser profile): whoever steals one may look, but
// may not drain a node, reload or upgrade a gateway, or lock a user.
//
// The rule is an allow-list of routes, not a deny-list of actions, so an
// endpoint added later (reload, upgrade, lock) is closed to read-only
// credentials until it is put here on purpose.

// readOnlyRoutes are the paths a read-only credential may GET (or HEAD).
var readOnlyRoutes = map[string]bool{
	"/":            true, // redirects to the status page
	"/status":      true,
	"/v1/status":   true,
	"/v1/nodes":    true,
	"/v1/sessions": true,
	"/v1/explain":  true,
	"/metrics":     true,
}

// authorize decides whether id may make request r.
func authorize(id Identity, r *http.Request) error {
	if !id.ReadOnly {
		return nil
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && readOnlyRoutes[r.URL.Path] {
		return nil
	}
	return &authError{http.StatusForbidden, fmt.Sprintf("%s is read-only: %s %s is not for it", id, r.Method, sanitize(r.URL.Path))}
}

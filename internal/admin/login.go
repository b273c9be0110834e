package admin

import (
	"fmt"
	"html/template"
	"net/http"
)

// A browser cannot send a bearer token, and a client certificate is not
// something every dashboard user has. So a browser brings a read-only
// token once, in the address: GET /login?token=SECRET answers with an
// HttpOnly, SameSite=Strict cookie holding it, and every later request of
// that browser reads with it.
//
//   - Only read-only tokens are taken: the address stays in the browser's
//     history, and a cookie's credential never changes anything (a
//     request authenticated by the cookie is read-only whatever the
//     token's role).
//   - SameSite=Strict: no other site's page, link or form makes the
//     browser send it; HttpOnly: no script reads it (and the status page
//     has none: its Content-Security-Policy forbids them); Secure over
//     TLS.
//   - The answer is a page that moves on to /status by itself, sent with
//     Referrer-Policy: no-referrer, so the token does not travel on in a
//     Referer header; its navigation starts on this origin, so the Strict
//     cookie goes with it even when the login link was opened from
//     elsewhere.
//   - The cookie holds the token itself: removing the token from the
//     token file (and reloading) ends every browser's access at once.

// cookieName is the browser session cookie.
const cookieName = "frontdoor_admin"

// cookieMaxAge bounds a browser session: a working day.
const cookieMaxAge = 12 * 60 * 60

var movedOn = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/status">
<title>frontdoor</title></head><body><p>{{.}} <a href="/status">Go to the status page</a>.</p></body></html>
`))

// browserSession serves /login and /logout over TCP, before any other
// authentication; it reports whether it answered.
func (s *Server) browserSession(w http.ResponseWriter, r *http.Request) bool {
	if connOf(r.Context()).unix || r.Method != http.MethodGet || (r.URL.Path != "/login" && r.URL.Path != "/logout") {
		return false
	}
	noStore(w)
	if r.URL.Path == "/logout" {
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "logged out")
		return true
	}
	tok, ok := s.o.Tokens.Lookup(r.URL.Query().Get("token"))
	switch {
	case !ok:
		s.log.Warn("admin browser login refused", "src", r.RemoteAddr, "reason", "unknown token")
		http.Error(w, "unknown token", http.StatusUnauthorized)
		return true
	case !tok.ReadOnly:
		s.log.Warn("admin browser login refused", "src", r.RemoteAddr, "admin", "token:"+tok.Name, "reason", "not a read-only token")
		http.Error(w, "only a read-only token may be put in an address (it stays in the browser's history): "+
			"add a line NAME SECRET read-only to the gateway's admin_token_file for the browser", http.StatusForbidden)
		return true
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: r.URL.Query().Get("token"), Path: "/", MaxAge: cookieMaxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	s.log.Info("admin browser login", "admin", "token:"+tok.Name, "src", r.RemoteAddr)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	movedOn.Execute(w, "Logged in (read-only).")
	return true
}

// noStore keeps an answer out of caches and its address out of Referer
// headers.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

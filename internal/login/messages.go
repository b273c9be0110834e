package login

import (
	"errors"
	"fmt"

	"github.com/frontdoor-hpc/frontdoor/internal/route"
)

// What a proven user is told when a login cannot go on. Every message a
// user sees is written here, once: short, actionable, no internals (the
// audit log has the details, under the session ID the gateway appends).

const msgPrincipal = "this account cannot log in through frontdoor; log in with your personal account"

// MsgInternal is shown when the gateway itself failed (it could not sign a
// certificate, say).
const MsgInternal = "internal error; the administrators have the details"

// MsgPasswordsUnavailable is shown for a refused password while the
// directory is unreachable: it says nothing about the account (every name
// gets it then), and tells the user what still works.
const MsgPasswordsUnavailable = "passwords cannot be checked right now (the directory is unreachable); log in with your SSH key, or try again in a few minutes"

// NoNodeMessage is shown when every node tried failed the login; explicit
// is the node the user named with user+node, or "".
func NoNodeMessage(explicit string) string {
	if explicit != "" {
		return fmt.Sprintf("login node %s is not available right now; try again shortly, or log in without +%s", explicit, explicit)
	}
	return "no login node is available right now; try again shortly"
}

// routeMessage words a routing refusal for the user.
func routeMessage(explicit string, err error) string {
	var re *route.RefusedError
	switch {
	case errors.Is(err, route.ErrUnknownNode):
		return fmt.Sprintf("there is no login node named %q", explicit)
	case errors.As(err, &re) && re.Reason == route.WhyPool:
		return fmt.Sprintf("node %s is in pool %s, which your access does not include", re.Node.Name, re.Node.Pool)
	case errors.As(err, &re):
		return fmt.Sprintf("login node %s is not available right now (%s); try again shortly, or log in without +%s", re.Node.Name, re.Reason, re.Node.Name)
	}
	return NoNodeMessage("")
}

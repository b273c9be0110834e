package login

import (
	"fmt"
	"slices"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
)

// Principals are the accounts a certificate may never name, whoever the
// directory says they are. The gateway checks them before it signs; the
// login nodes check them again (`frontdoor authorized-principals`, sshd's
// AuthorizedPrincipalsCommand), with the same rule.
type Principals struct {
	// MinUID refuses identities whose POSIX uid is known and below it
	// (system accounts). 0 disables the floor.
	MinUID int
	// Deny lists account names refused outright (root, the HyperPod admin
	// user, service accounts), compared case-insensitively.
	Deny []string
}

// Check refuses an identity no certificate may name.
func (p Principals) Check(id directory.Identity) *Refusal {
	if why := p.Refuse(id.Name, id.UID, id.UID > 0 || id.UIDSet); why != "" {
		return &Refusal{Stage: StagePrincipal, UserMsg: msgPrincipal, Reason: why}
	}
	return nil
}

// Refuse says why account name, with POSIX uid (uidKnown: the uid is
// stated, even if 0), may not be a certificate principal, or "".
func (p Principals) Refuse(name string, uid int, uidKnown bool) string {
	if slices.ContainsFunc(p.Deny, func(d string) bool { return strings.EqualFold(strings.TrimSpace(d), name) }) {
		return fmt.Sprintf("principal %q is on backend.deny_principals", name)
	}
	if p.MinUID > 0 && uidKnown && uid < p.MinUID {
		return fmt.Sprintf("principal %q has uid %d, below backend.min_uid %d", name, uid, p.MinUID)
	}
	// root is refused even when an admin emptied the deny list or the
	// uid floor.
	if strings.EqualFold(name, "root") {
		return "principal root is never allowed"
	}
	if uidKnown && uid == 0 {
		return fmt.Sprintf("principal %q has uid 0", name)
	}
	return ""
}

package login

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/directory"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// MaxNameLen bounds the user part of a login name.
const MaxNameLen = 256

// SplitUser splits "user+node" into its parts. The user part is returned as
// typed (the directory normalises it); the node part must be a valid node
// name.
func SplitUser(s string) (user, nodeName string, err error) {
	if i := strings.LastIndexByte(s, '+'); i >= 0 {
		user, nodeName = s[:i], s[i+1:]
		if !node.ValidName(nodeName) {
			return "", "", fmt.Errorf("%w: invalid node name after '+'", directory.ErrInvalidName)
		}
	} else {
		user = s
	}
	if user == "" || len(user) > MaxNameLen {
		return "", "", fmt.Errorf("%w: empty or overlong", directory.ErrInvalidName)
	}
	return user, nodeName, nil
}

// Sanitize makes an untrusted name safe to log: quoted printable ASCII,
// bounded.
func Sanitize(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

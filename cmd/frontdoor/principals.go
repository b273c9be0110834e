package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/login"
)

func init() {
	register("authorized-principals", "sshd AuthorizedPrincipalsCommand on login nodes: the principals USER accepts", runAuthorizedPrincipals)
	register("trusted-user-ca-keys", "check a login node's gateways file and print its CA keys for TrustedUserCAKeys", runTrustedUserCAKeys)
}

// runTrustedUserCAKeys prints the CA keys of a gateways file (see
// --gateways) without their from= options, in the format sshd's
// TrustedUserCAKeys takes (no options): the node's two files then list the
// same keys. It fails on a file authorized-principals could not use,
// which would refuse every certificate login.
func runTrustedUserCAKeys(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("trusted-user-ca-keys", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: frontdoor trusted-user-ca-keys GATEWAYS-FILE", errUsage)
	}
	data, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	gws, err := ca.ParseGateways(data)
	if err != nil {
		return err
	}
	for _, g := range gws {
		fmt.Println(strings.TrimSpace(string(pubLine(g.Key)) + " " + g.Comment))
	}
	return nil
}

// runAuthorizedPrincipals is the login node's own check of the principal a
// frontdoor certificate names, the second lock behind the gateway's:
// sshd runs it as AuthorizedPrincipalsCommand for the account being logged
// in to and accepts a certificate only for a principal it prints. It
// prints the account's name when the account exists locally, has a uid of
// at least --min-uid and is not denied; else nothing. A gateway whose CA key
// were misused could still not log in as root or a service account.
//
// With --gateways FILE (and the CA's fingerprint, sshd's %F) it also binds
// the certificate's CA to the addresses its gateway's logins come from:
// the line printed carries that CA's from= option (internal/ca, trust.go),
// and a CA the file does not list is refused. A CA key stolen from one
// gateway then logs in from nowhere else.
func runAuthorizedPrincipals(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("authorized-principals", flag.ContinueOnError)
	minUID := fs.Int("min-uid", 1000, "refuse accounts whose uid is below this")
	deny := fs.String("deny", strings.Join(config.DefaultDenyPrincipals(), ","), "comma-separated account names always refused")
	gateways := fs.String("gateways", "", "file of the gateways' CA keys with the addresses their logins come from (needs CA-FINGERPRINT, sshd: %F)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 && (*gateways == "" || fs.NArg() != 2) {
		return fmt.Errorf("%w: frontdoor authorized-principals [--min-uid N] [--deny a,b] [--gateways FILE] USER [CA-FINGERPRINT] (sshd: %%u %%F)", errUsage)
	}
	line, err := principalLine(fs.Args(), *minUID, strings.Split(*deny, ","), *gateways, user.Lookup)
	if err != nil {
		// sshd logs stderr; stdout stays empty, which refuses the login.
		fmt.Fprintf(os.Stderr, "frontdoor authorized-principals: %v\n", err)
		return nil
	}
	fmt.Println(line)
	return nil
}

// principalLine is the AuthorizedPrincipalsFile line for args (USER, and
// with a gateways file the CA's fingerprint): the account's name, after
// the CA's from= option when the file gives one.
func principalLine(args []string, minUID int, deny []string, gatewaysFile string, lookup func(string) (*user.User, error)) (string, error) {
	name, err := principalFor(args[0], minUID, deny, lookup)
	if err != nil || gatewaysFile == "" {
		return name, err
	}
	if len(args) != 2 {
		return "", fmt.Errorf("%w: --gateways needs the CA fingerprint (sshd: %%F)", errNotPrincipal)
	}
	data, err := os.ReadFile(gatewaysFile)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ca.ErrGatewaysFile, err)
	}
	gws, err := ca.ParseGateways(data)
	if err != nil {
		return "", err
	}
	opts, err := ca.PrincipalOptions(gws, args[1])
	if err != nil {
		return "", err
	}
	return opts + name, nil
}

// errNotPrincipal: the account may not be logged in to with a certificate.
var errNotPrincipal = errors.New("not an acceptable principal")

// principalFor decides whether account may be a certificate principal,
// by the rule the gateway applies before it signs (login.Principals), with
// the uid this node's own account database gives.
func principalFor(account string, minUID int, deny []string, lookup func(string) (*user.User, error)) (string, error) {
	if account == "" || strings.ContainsAny(account, " \t\r\n,") {
		return "", fmt.Errorf("%w: invalid account name %q", errNotPrincipal, account)
	}
	p := login.Principals{MinUID: minUID, Deny: deny}
	if why := p.Refuse(account, -1, false); why != "" {
		return "", fmt.Errorf("%w: %s", errNotPrincipal, why)
	}
	u, err := lookup(account)
	if err != nil {
		return "", fmt.Errorf("%w: %v", errNotPrincipal, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return "", fmt.Errorf("%w: %s has uid %q", errNotPrincipal, account, u.Uid)
	}
	// The node's own uid is known for certain here: no floor of 0 lets a
	// uid-0 account through.
	if why := p.Refuse(u.Username, uid, true); why != "" {
		return "", fmt.Errorf("%w: %s", errNotPrincipal, why)
	}
	return u.Username, nil
}

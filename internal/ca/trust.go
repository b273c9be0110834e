package ca

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/crypto/ssh"
)

// What a login node trusts, beyond its TrustedUserCAKeys file: which
// addresses each gateway's logins may come from. A certificate's
// source-address binds it to the gateway that minted it — if that gateway
// was honest. A stolen CA key mints certificates with any source-address,
// or none; so a node also binds each CA key to its gateway's addresses, in
// a file of its own that `frontdoor authorized-principals --gateways FILE`
// reads for every certificate login (sshd passes the CA's fingerprint,
// %F). The principal it prints then carries a from= option, which sshd
// enforces whatever the certificate says: a key stolen from one gateway
// logs in only from that gateway's address, only while the gateway is
// held.
//
// The file has authorized_keys syntax, one gateway CA key per line with at
// most a from= option (addresses, CIDRs, wildcards; no host names):
//
//	from="10.0.0.10" ssh-ed25519 AAAA... frontdoor user CA gw1
//	from="10.0.0.11,10.0.2.0/24" ecdsa-sha2-nistp256 AAAA... gw2 (KMS)
//	ssh-ed25519 AAAA... the shared CA, during a migration (from anywhere)

// GatewayCA is one line of a node's gateways file.
type GatewayCA struct {
	Key ssh.PublicKey
	// From is the from= pattern list, "" when the line has none.
	From    string
	Comment string
}

// fromRE is what a from= value may hold: IP addresses, CIDRs, sshd's
// wildcards and negation, commas. Nothing that could close the quote or
// add another option to the principals line it is copied into.
var fromRE = regexp.MustCompile(`^[0-9A-Fa-f.:/,*?!]+$`)

// ErrGatewaysFile: the gateways file cannot be used; every certificate
// login is refused until it is fixed.
var ErrGatewaysFile = errors.New("gateways file")

// ParseGateways reads a gateways file. Any line it cannot parse makes the
// whole file unusable (refusing every login is safer than dropping a
// restriction silently).
func ParseGateways(data []byte) ([]GatewayCA, error) {
	var out []GatewayCA
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, comment, opts, rest, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil || len(bytes.TrimSpace(rest)) > 0 {
			return nil, fmt.Errorf("%w: line %d: not an OpenSSH public key line", ErrGatewaysFile, n)
		}
		if _, ok := key.(*ssh.Certificate); ok {
			return nil, fmt.Errorf("%w: line %d: a certificate, not a CA key", ErrGatewaysFile, n)
		}
		g := GatewayCA{Key: key, Comment: comment}
		for _, o := range opts {
			v, ok := strings.CutPrefix(o, "from=")
			if !ok || len(v) < 3 || v[0] != '"' || v[len(v)-1] != '"' || !fromRE.MatchString(v[1:len(v)-1]) || g.From != "" {
				return nil, fmt.Errorf("%w: line %d: option %q: only one from=\"ADDRESSES\" (IPs, CIDRs, wildcards) is allowed", ErrGatewaysFile, n, o)
			}
			g.From = v[1 : len(v)-1]
		}
		out = append(out, g)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGatewaysFile, err)
	}
	return out, nil
}

// ErrUnknownCA: the certificate's CA is not one of the node's gateways.
var ErrUnknownCA = errors.New("certificate CA is not in the gateways file")

// PrincipalOptions is the option prefix of the principals line for a
// certificate signed by the CA whose SHA256 fingerprint is caFP (as sshd
// prints it, "SHA256:..."): `from="ADDRESSES" ` or "" for a CA listed
// without from=. A CA not listed is ErrUnknownCA.
func PrincipalOptions(gateways []GatewayCA, caFP string) (string, error) {
	for _, g := range gateways {
		if ssh.FingerprintSHA256(g.Key) != caFP {
			continue
		}
		if g.From == "" {
			return "", nil
		}
		return `from="` + g.From + `" `, nil
	}
	return "", fmt.Errorf("%w: %s", ErrUnknownCA, caFP)
}

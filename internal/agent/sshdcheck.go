package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
)

// The PerSourcePenalties check. OpenSSH 9.8 and later penalise a source
// address for every connection that ends without authenticating
// (PerSourcePenalties, on by default: noauth, authfail, crash, ...) and
// refuse it while penalised. Every user arrives from a gateway's address,
// and a gateway aborts a node connection whenever a client vanishes
// before proving who it is (the speculative preconnect, the banner probe
// of nodes without an agent): a stranger who opens and drops connections
// gets the gateway refused by every node. The cure is
// PerSourcePenaltyExemptList naming the gateways (deploy/: a drop-in the
// lifecycle script installs only on sshd ≥ 9.8, since older sshd refuses
// the keyword and would not start). This check tells the operator when a
// node lacks it: it asks the node's sshd for its version (`sshd -V`) and,
// on 9.8 or later, for its effective configuration (`sshd -T`), and warns
// (log, and cluster.WarnPenaltyNotExempt in the health the gateways show)
// when penalties are on and a gateway's address is not exempt.
//
// `sshd -T` without -C shows the configuration outside Match blocks: an
// exemption inside a Match block is not seen (and is not what
// deploy/ ships).

// minPenaltyVersion is the first OpenSSH with PerSourcePenalties.
var minPenaltyVersion = [2]int{9, 8}

// sshdVersionRe finds "OpenSSH_9.2" in `sshd -V` output (stderr), which
// older sshd without -V print in their usage message too.
var sshdVersionRe = regexp.MustCompile(`OpenSSH_(\d+)\.(\d+)`)

// parseSSHDVersion returns OpenSSH's major and minor version from the
// output of `sshd -V`.
func parseSSHDVersion(out string) (major, minor int, err error) {
	m := sshdVersionRe.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("no OpenSSH version in %q", clip(out, 120))
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	return major, minor, nil
}

// penalties is the PerSourcePenalties part of an effective sshd config.
type penalties struct {
	enabled bool
	exempt  []netip.Prefix
}

// parsePenalties reads `sshd -T` output. A config without the keywords
// (sshd < 9.8) has no penalties. An exempt list entry that does not parse
// is an error: the operator must look.
func parsePenalties(out string) (penalties, error) {
	var p penalties
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		key, val, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		val = strings.TrimSpace(val)
		switch strings.ToLower(key) {
		case "persourcepenalties":
			p.enabled = val != "" && val != "no"
		case "persourcepenaltyexemptlist":
			if val == "" || val == "none" {
				continue
			}
			for _, s := range strings.Split(val, ",") {
				pfx, err := parsePrefix(s)
				if err != nil {
					return penalties{}, fmt.Errorf("persourcepenaltyexemptlist: %w", err)
				}
				p.exempt = append(p.exempt, pfx)
			}
		}
	}
	return p, sc.Err()
}

// parsePrefix reads an address or address/masklen as sshd's addr_match
// lists have them.
func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// notExempt returns the gateways the penalties apply to.
func (p penalties) notExempt(gateways []netip.Addr) []netip.Addr {
	if !p.enabled {
		return nil
	}
	var out []netip.Addr
	for _, g := range gateways {
		covered := false
		for _, pfx := range p.exempt {
			covered = covered || pfx.Contains(g.Unmap())
		}
		if !covered {
			out = append(out, g)
		}
	}
	return out
}

// sshdChecker runs the check. run is the seam for tests: it runs a
// command and returns its combined output.
type sshdChecker struct {
	sshd, config string
	gateways     func(context.Context) ([]netip.Addr, error)
	run          func(ctx context.Context, name string, args ...string) ([]byte, error)
}

// checkTimeout bounds one `sshd -V` or `sshd -T`.
const checkTimeout = 10 * time.Second

func runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// errCheck marks a check that could not be made (as opposed to one that
// found a problem).
var errCheck = errors.New("sshd check failed")

// check returns the warnings for the node's sshd now, with a sentence for
// the log when there are any. An error (wrapping errCheck) means the
// check could not be made; its warning is then WarnSSHDCheckFailed.
func (s sshdChecker) check(ctx context.Context) (warnings []string, detail string, err error) {
	out, err := s.run(ctx, s.sshd, "-V")
	major, minor, perr := parseSSHDVersion(string(out))
	if perr != nil {
		// sshd before 9.2 has no -V: it exits 1 after printing its
		// usage, version included, so the exit status is not the test.
		return nil, "", fmt.Errorf("%w: %s -V: %w (exit: %v)", errCheck, s.sshd, perr, err)
	}
	if major < minPenaltyVersion[0] || (major == minPenaltyVersion[0] && minor < minPenaltyVersion[1]) {
		return nil, "", nil // no PerSourcePenalties
	}
	args := []string{"-T"}
	if s.config != "" {
		args = append(args, "-f", s.config)
	}
	out, err = s.run(ctx, s.sshd, args...)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s %s: %w: %s", errCheck, s.sshd, strings.Join(args, " "), err, clip(string(out), 300))
	}
	p, err := parsePenalties(string(out))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s -T: %w", errCheck, s.sshd, err)
	}
	gws, err := s.gateways(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("%w: gateway addresses: %w", errCheck, err)
	}
	if bad := p.notExempt(gws); len(bad) > 0 {
		return []string{cluster.WarnPenaltyNotExempt}, fmt.Sprintf(
			"OpenSSH %d.%d penalises source addresses (PerSourcePenalties) and does not exempt gateway(s) %v: "+
				"a stranger dropping connections can get them refused by this node; install the exemption drop-in (deploy/)",
			major, minor, bad), nil
	}
	return nil, "", nil
}

// gatewayAddrs resolves the gateways' addresses: gateway_addrs if set,
// else the hosts of cluster.join.
func gatewayAddrs(cfg Config) func(context.Context) ([]netip.Addr, error) {
	return func(ctx context.Context) ([]netip.Addr, error) {
		hosts := cfg.GatewayAddrs
		if len(hosts) == 0 {
			for _, j := range cfg.Cluster.Join {
				if h, _, err := net.SplitHostPort(j); err == nil {
					hosts = append(hosts, h)
				}
			}
		}
		var out []netip.Addr
		for _, h := range hosts {
			if a, err := netip.ParseAddr(h); err == nil {
				out = append(out, a)
				continue
			}
			ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
			if err != nil {
				return nil, fmt.Errorf("resolve %s: %w", h, err)
			}
			out = append(out, ips...)
		}
		if len(out) == 0 {
			return nil, errors.New("none known: set gateway_addrs or cluster.join")
		}
		return out, nil
	}
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

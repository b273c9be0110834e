// Package names holds every naming rule frontdoor checks: what a login
// node, a pool, a Slurm account, a host, a gateway, a static user or an
// admin token may be called. Each rule is written once, here, with its
// length limit and the reason for both; configuration validation, the
// login path and the tools all ask this package, so a name accepted in
// one place is never refused in another.
//
// Names are outside input (a config file, a directory, a client typing
// user+node, the SageMaker API): every rule is anchored, bounded and
// excludes whitespace, quotes, ',', '=', '|' and '/', so a valid name is
// safe in a log line, a metric label, an object key or a command argument.
//
// This package is a leaf: it imports nothing of frontdoor's.
package names

import (
	"regexp"
	"strings"
)

// Rule is one naming rule.
type Rule struct {
	// Syntax says what the rule allows, for error messages:
	// "letters, digits, '.', '_', '-' (a letter or digit first); at most 63".
	Syntax string
	valid  func(string) bool
}

// Valid reports whether s follows the rule.
func (r Rule) Valid(s string) bool { return r.valid(s) }

func rule(syntax, re string) Rule {
	return Rule{Syntax: syntax, valid: regexp.MustCompile(re).MatchString}
}

var (
	// Node is a login node's name, and a pool's: what follows "+" in a
	// login name (alice+login2), what logs, metrics labels and `frontdoor
	// nodes` show, and an agent's gossip member name. At most 63, a DNS
	// label's length: node names are usually host names.
	Node = rule("letters, digits, '.', '_', '-' (a letter or digit first); at most 63",
		`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

	// SlurmName is a Slurm partition or cluster name as frontdoor passes it
	// to Slurm's commands and shows it in sessions (SBATCH_PARTITION): no
	// spaces, commas, '=' or quotes, which sacctmgr would take as
	// separators. Case is kept: slurm.conf's partition names are. At most
	// 64, like SlurmAccount.
	SlurmName = rule("letters, digits, '_', '.', '-' (a letter or digit first); at most 64",
		`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

	// SlurmAccount is a Slurm account, user or QOS name that frontdoor
	// creates or compares with Slurm's accounting: sacctmgr lower-cases
	// these, so a mixed-case name would never match what Slurm stores.
	// At most 64, what frontdoor's reconciler accepts for any name it
	// manages.
	SlurmAccount = rule("lower-case letters, digits, '_', '.', '-' ('.' and '-' not first); at most 64",
		`^[a-z0-9_][a-z0-9_.-]{0,63}$`)

	// GPUType is a GRES type (h100, a100_80g) in gres/gpu:TYPE. At most 32.
	GPUType = rule("lower-case letters, digits, '_'; at most 32", `^[a-z0-9_]{1,32}$`)

	// Gateway is a gateway's name where it becomes part of an audit
	// object key and a spool file name: no '_' (the spool's separator) and
	// no '/'. At most 63, a DNS label: gateway names are host names.
	Gateway = rule("letters, digits, '.', '-' (a letter or digit first); at most 63",
		`^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$`)

	// User is a user name in the static directory: POSIX-portable and
	// what useradd accepts by default, so the same account can exist on
	// the login nodes. At most 32 (useradd's limit).
	User = rule("lower-case letters, digits, '_', '.', '-', starting with a letter or '_'; at most 32",
		`^[a-z_][a-z0-9_.-]{0,31}$`)

	// Token is the name of an admin API bearer token, recorded as the
	// admin who acted; '@' lets it be an e-mail address. At most 64.
	Token = rule("letters, digits, '.', '_', '@', '-' (a letter or digit first); at most 64",
		`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

	// AWSRegion is an AWS region name such as us-west-2 or
	// us-gov-west-1.
	AWSRegion = rule("an AWS region name such as us-west-2", `^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)

	// SageMaker is a SageMaker resource name (a HyperPod cluster or
	// instance group), the SageMaker API's own pattern: letters, digits
	// and '-', at most 63 letters and digits.
	SageMaker = rule("letters, digits and '-'; at most 63", `^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$`)

	// Host is a DNS host name (RFC 1123): dot-separated labels of
	// letters, digits and '-' (not first or last), each at most 63, the
	// whole at most 253 (DNS's limits). No trailing dot: callers that
	// accept a fully qualified "name." trim it first.
	Host = Rule{Syntax: "a DNS host name (labels of letters, digits and '-', not first or last; at most 63 each, 253 in all)",
		valid: func(s string) bool { return len(s) <= 253 && hostName.MatchString(s) }}

	// S3Bucket is an S3 bucket name, S3's own rules: 3 to 63 lower-case
	// letters, digits, '.' and '-', a letter or digit first and last, no
	// "..".
	S3Bucket = Rule{Syntax: "lower-case letters, digits, '-', '.'; 3 to 63",
		valid: func(s string) bool { return s3Bucket.MatchString(s) && !strings.Contains(s, "..") }}
)

var (
	hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)
	s3Bucket = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
)

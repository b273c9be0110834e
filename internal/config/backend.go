package config

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Backend is how the gateway talks to login nodes.
type Backend struct {
	// KnownHosts lists OpenSSH known_hosts files with the login nodes' host
	// keys and/or "@cert-authority" lines for a host CA.
	KnownHosts []string `yaml:"known_hosts"`
	// InsecureIgnoreHostKeys disables host key verification. Labs only: it is
	// logged loudly at start and on every backend connection.
	InsecureIgnoreHostKeys bool `yaml:"insecure_ignore_host_keys"`
	// ConnectTimeout bounds TCP connect plus SSH handshake to one node.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// CertValidity is the lifetime of a backend login certificate, 30s to
	// 1h. It only has to outlive the login itself; sshd does not re-check
	// it later.
	CertValidity time.Duration `yaml:"cert_validity"`
	// CertSourceAddress replaces the certificate's source-address critical
	// option, addresses or CIDRs. Empty (the default): each certificate's
	// source-address is the address this gateway dials that node from, the
	// client address the node's sshd sees, so a certificate is useless from
	// anywhere else. Set it only when the nodes see another address than
	// the gateway's own (a NAT between them): the NAT's addresses.
	CertSourceAddress []string `yaml:"cert_source_address"`
	// MaxAttempts is how many candidate nodes one login tries before
	// giving up, 1 to 10.
	MaxAttempts int `yaml:"max_attempts"`
	// KeepaliveInterval is how often an idle backend connection is probed;
	// a node silent for two intervals is dropped. 0: never probed.
	KeepaliveInterval time.Duration `yaml:"keepalive_interval"`
	// Preconnect opens a TCP connection to the most likely node as soon as
	// a client has sent its first bytes, so sshd's per-connection fork and
	// re-exec overlap the client's handshake (about 40 ms saved per
	// login). A wrong guess costs the node one unused connection
	// ("Connection closed ... [preauth]" in its log).
	Preconnect bool `yaml:"preconnect"`
	// SpeculativeMax bounds the node connections opened before a client
	// proved anything (preconnections, and dials started when a client
	// offers an acceptable key), in all: a stranger can never fill a
	// node's MaxStartups. Beyond it a login simply dials after the proof.
	SpeculativeMax int `yaml:"speculative_max"`
	// SpeculativePerNode is SpeculativeMax for one node; keep it below the
	// nodes' sshd MaxStartups start value.
	SpeculativePerNode int `yaml:"speculative_per_node"`
	// MinUID refuses directory accounts whose uid is known and below it
	// (system accounts); 0 disables the floor.
	MinUID int `yaml:"min_uid"`
	// DenyPrincipals are account names no login certificate may name,
	// whatever the directory says (root is always refused).
	DenyPrincipals []string `yaml:"deny_principals"`
}

// DefaultBackend returns the backend section's defaults.
func DefaultBackend() Backend {
	return Backend{
		ConnectTimeout:     5 * time.Second,
		CertValidity:       5 * time.Minute,
		MaxAttempts:        3,
		KeepaliveInterval:  30 * time.Second,
		Preconnect:         true,
		SpeculativeMax:     64,
		SpeculativePerNode: 8,
		MinUID:             1000,
		DenyPrincipals:     DefaultDenyPrincipals(),
	}
}

// Validate reports every problem of the section, each as "backend.key:
// problem" (errors.Join'ed).
func (b Backend) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("backend.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if len(b.KnownHosts) == 0 && !b.InsecureIgnoreHostKeys {
		add("known_hosts", "required: login node host keys must be verified (or set insecure_ignore_host_keys for a lab)")
	}
	if b.ConnectTimeout <= 0 {
		add("connect_timeout", "must be positive")
	}
	if b.CertValidity < 30*time.Second || b.CertValidity > time.Hour {
		add("cert_validity", "must be between 30s and 1h, got %s", b.CertValidity)
	}
	for i, a := range b.CertSourceAddress {
		if _, _, err := net.ParseCIDR(a); err != nil && net.ParseIP(a) == nil {
			add(fmt.Sprintf("cert_source_address[%d]", i), "%q is not an IP address or CIDR", a)
		}
	}
	if b.MaxAttempts < 1 || b.MaxAttempts > 10 {
		add("max_attempts", "must be between 1 and 10")
	}
	if b.KeepaliveInterval < 0 {
		add("keepalive_interval", "must not be negative (0: no keepalives)")
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"speculative_max", b.SpeculativeMax}, {"speculative_per_node", b.SpeculativePerNode}} {
		if n.v < 1 {
			add(n.key, "must be at least 1")
		}
	}
	if b.MinUID < 0 {
		add("min_uid", "must not be negative")
	}
	return errors.Join(errs...)
}

// DefaultDenyPrincipals are accounts of the systems frontdoor fronts
// (Debian/Ubuntu system users, HyperPod's admin user, Slurm's and munge's
// service users) that a directory entry of the same name must never
// reach.
func DefaultDenyPrincipals() []string {
	return []string{"root", "toor", "ubuntu", "ec2-user", "admin", "slurm", "munge", "daemon", "bin", "sys",
		"sync", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data", "backup", "list", "irc",
		"nobody", "sshd", "systemd-network", "systemd-resolve", "messagebus", "syslog", "_apt", "mysql"}
}

package mfa

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// Config is the `mfa:` section of the gateway configuration: the RADIUS
// servers that check a second factor (Duo Authentication Proxy, the NPS
// extension for Entra MFA, privacyIDEA, FreeRADIUS). Which logins need one
// is the policy's business (policy rules' mfa, mfa_window, mfa_sk_counts);
// without this section no rule may require it.
type Config struct {
	// Servers are the RADIUS authentication servers, "host:port", tried
	// in this order: the next one when one does not answer within
	// Timeout. A challenge is always answered to the server that asked.
	Servers []string `yaml:"servers"`
	// SecretFile holds the RADIUS shared secret (the whole file, one
	// trailing newline removed). The secret is never logged; keep the
	// file mode 0600.
	SecretFile string `yaml:"secret_file"`
	// Timeout bounds one request to one server, retransmissions
	// included. It must leave room for a push approval: the server
	// answers only once the user tapped "approve" on their phone. It must
	// be shorter than gateway.login_grace_time, which bounds the whole
	// login (raise that to 2m with MFA).
	Timeout time.Duration `yaml:"timeout"`
	// Retransmit is how often a request is sent again while no answer
	// came (UDP loses packets); RADIUS servers answer a duplicate from
	// their cache.
	Retransmit time.Duration `yaml:"retransmit"`
	// DeadTime is how long a server that did not answer is tried only
	// after the others, so that logins do not each wait Timeout on it.
	DeadTime time.Duration `yaml:"dead_time"`
	// NASIdentifier is sent in every request (NAS-Identifier); servers
	// can tell frontdoor's requests by it.
	NASIdentifier string `yaml:"nas_identifier"`
	// Prompt is the first keyboard-interactive prompt; its answer goes to
	// RADIUS as User-Password. Later prompts are the server's own
	// (Access-Challenge Reply-Message).
	Prompt string `yaml:"prompt"`
	// MaxRounds bounds the Access-Challenge round trips of one login.
	MaxRounds int `yaml:"max_rounds"`
	// UnlockCommand is what a client that cannot answer a prompt (scp,
	// BatchMode, VS Code's background connections) is told to run once
	// to unlock its key, e.g. "ssh -t login.cluster.example.edu".
	UnlockCommand string `yaml:"unlock_command"`
	// RequireMessageAuthenticator refuses responses without a
	// Message-Authenticator (BlastRADIUS, CVE-2024-3596). Every request
	// carries one regardless. Turn it off only for a server that cannot
	// send one (FreeRADIUS before 3.2.5 needs it added in post-auth).
	RequireMessageAuthenticator bool `yaml:"require_message_authenticator"`
}

// DefaultConfig returns the defaults: 50s per request (room for a push
// approval within a login_grace_time of at least a minute), a retransmission every 5s, a silent
// server skipped for 30s, NAS-Identifier "frontdoor", three challenge
// rounds, Message-Authenticator required in responses.
func DefaultConfig() Config {
	return Config{
		Timeout:                     50 * time.Second,
		Retransmit:                  5 * time.Second,
		DeadTime:                    30 * time.Second,
		NASIdentifier:               "frontdoor",
		Prompt:                      "Verification code (or \"push\"): ",
		MaxRounds:                   3,
		UnlockCommand:               "ssh -t <this host>",
		RequireMessageAuthenticator: true,
	}
}

// SetDefaults sets c to DefaultConfig (yamlconf.Defaulter: an mfa section
// the file has starts from it).
func (c *Config) SetDefaults() { *c = DefaultConfig() }

// Validate reports every problem of the section, each as "mfa.key:
// problem" (errors.Join'ed). It does not read the secret file (Load does).
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("mfa.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if len(c.Servers) == 0 {
		add("servers", "at least one RADIUS server (host:port) is required")
	}
	for i, s := range c.Servers {
		if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
			add(fmt.Sprintf("servers[%d]", i), "%q is not host:port", s)
		}
	}
	if c.SecretFile == "" {
		add("secret_file", "required: the file holding the RADIUS shared secret")
	}
	if c.Timeout <= 0 {
		add("timeout", "must be positive")
	}
	if c.Retransmit <= 0 || c.Retransmit > c.Timeout {
		add("retransmit", "must be positive and at most timeout")
	}
	if c.DeadTime < 0 {
		add("dead_time", "must not be negative")
	}
	if c.MaxRounds < 1 || c.MaxRounds > 10 {
		add("max_rounds", "must be between 1 and 10")
	}
	if strings.TrimSpace(c.Prompt) == "" {
		add("prompt", "must not be empty")
	}
	if strings.TrimSpace(c.UnlockCommand) == "" {
		add("unlock_command", "must not be empty: it is all a client that cannot answer a prompt is told")
	}
	if len(c.NASIdentifier) == 0 || len(c.NASIdentifier) > 253 {
		add("nas_identifier", "must be 1 to 253 bytes")
	}
	return errors.Join(errs...)
}

// readSecret reads the shared secret from path.
func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mfa: read secret_file: %w", err)
	}
	b = []byte(strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"))
	if len(b) == 0 {
		return nil, fmt.Errorf("mfa: secret_file %s is empty", path)
	}
	return b, nil
}

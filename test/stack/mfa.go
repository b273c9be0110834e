package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// MFAInfo is stack.json's "mfa": the stack's FreeRADIUS, which checks the
// TOTP codes of the users' totp_secret (`oathtool --totp -b SECRET`).
type MFAInfo struct {
	RADIUS     string `json:"radius"`      // host:port (UDP)
	SecretFile string `json:"secret_file"` // the shared secret
	Log        string `json:"log"`
	// Rule is the policy rule that requires a second factor, and Users
	// the stack users it applies to.
	Rule  string   `json:"rule"`
	Users []string `json:"users"`
}

// mfaRule is the stack's rule that requires a second factor.
const mfaRule = "mfa-staff"

// startMFA gives every user a TOTP secret (kept in the state directory,
// so a restart keeps authenticator apps working), starts FreeRADIUS
// checking them, and returns the mfa section for a gateway listening on
// sshAddr. Everything the second factor adds to the stack is here.
func startMFA(ctx context.Context, s *Stack, dir string, users []UserInfo) (section func(sshAddr string) map[string]any, info *MFAInfo, err error) {
	secrets := map[string]string{}
	for i, u := range users {
		path := filepath.Join(dir, "users", u.Name, "totp")
		b, err := os.ReadFile(path)
		if err != nil || len(b) == 0 {
			b = []byte(harness.NewTOTPSecret())
			if err := os.WriteFile(path, b, 0o600); err != nil {
				return nil, nil, err
			}
		}
		secrets[u.Name] = strings.TrimSpace(string(b))
		users[i].TOTPSecret = secrets[u.Name]
	}
	secret, err := persistentPassword(filepath.Join(dir, "radius", "secret"))
	if err != nil {
		return nil, nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeUDPPort("127.0.0.1")))
	r, err := harness.StartRADIUS(ctx, harness.RADIUSOptions{Dir: filepath.Join(dir, "radius", "conf"), Addr: addr, Secret: secret, TOTP: secrets})
	if err != nil {
		return nil, nil, fmt.Errorf("FreeRADIUS (make deps installs it): %w", err)
	}
	s.onClose(r.Stop)
	secretFile := filepath.Join(dir, "radius", "secret")
	info = &MFAInfo{RADIUS: addr, SecretFile: secretFile, Log: filepath.Join(dir, "radius", "conf", "radius.log"), Rule: mfaRule}
	for _, su := range stackUsers {
		for _, g := range su.groups {
			if g == mfaRule {
				info.Users = append(info.Users, su.name)
			}
		}
	}
	section = func(sshAddr string) map[string]any {
		host, port, _ := net.SplitHostPort(sshAddr)
		return map[string]any{"servers": []string{addr}, "secret_file": secretFile,
			"unlock_command": fmt.Sprintf("ssh -t -p %s %s", port, host)}
	}
	return section, info, nil
}

// freeUDPPort is a UDP port free on host now.
func freeUDPPort(host string) int {
	pc, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 18120
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

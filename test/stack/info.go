package stack

import (
	"encoding/json"
	"os"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/policy"
	slurmh "github.com/frontdoor-hpc/frontdoor/test/harness/slurm"
)

// Info is stack.json. Fields may be added, never renamed.
type Info struct {
	Gateways   []GatewayInfo `json:"gateways"`
	Nodes      []NodeInfo    `json:"nodes"`
	Users      []UserInfo    `json:"users"`
	Directory  DirectoryInfo `json:"directory"`
	KnownHosts string        `json:"known_hosts"`
	// Slurm is how to reach the stack's Slurm (absent with --no-slurm).
	Slurm *SlurmInfo `json:"slurm,omitempty"`
	// TrustedUserCAKeys is the nodes' TrustedUserCAKeys file (every
	// gateway's user CA key, one per line) and RevokedKeys their KRL; sshd
	// reads both at every login. Dropping a gateway: delete its line, or
	// `ssh-keygen -k -u -f REVOKED_KEYS GATEWAY.user_ca_pub`.
	TrustedUserCAKeys string `json:"trusted_user_ca_keys"`
	RevokedKeys       string `json:"revoked_keys"`
	// AWS is the fake Cost Explorer and AWS Budgets (usage.go).
	AWS *AWSInfo `json:"aws,omitempty"`
	// MFA is the stack's second factor (mfa.go).
	MFA *MFAInfo `json:"mfa,omitempty"`
}

type GatewayInfo struct {
	Name string `json:"name"`
	SSH  string `json:"ssh"`
	// Admin is the admin API's TCP address (host:port), which needs
	// AdminToken; AdminSocket is its Unix socket, which needs nothing but
	// being this machine's root.
	Admin          string `json:"admin"`
	AdminURL       string `json:"admin_url"`
	AdminSocket    string `json:"admin_socket"`
	AdminToken     string `json:"admin_token"`
	AdminTokenFile string `json:"admin_token_file"` // the token alone, for --admin-token-file
	PID            int    `json:"pid"`
	Config         string `json:"config"`
	Log            string `json:"log"`
	Audit          string `json:"audit"`
	// UserCAKey is this gateway's own user CA (private), UserCAPub its
	// public key file and UserCAFingerprint its SHA256 fingerprint, which
	// the nodes' sshd logs with every login this gateway signs.
	UserCAKey         string `json:"user_ca_key"`
	UserCAPub         string `json:"user_ca_pub"`
	UserCAFingerprint string `json:"user_ca_fingerprint"`
}

type NodeInfo struct {
	Name     string `json:"name"`
	Pool     string `json:"pool"`
	SSH      string `json:"ssh"`
	SSHDPID  int    `json:"sshd_pid"`
	AgentPID int    `json:"agent_pid"`
}

// SlurmInfo: run Slurm's commands with SLURM_CONF=Conf (Env is that as
// an environment line); Accounts are those the policy grants.
type SlurmInfo struct {
	Conf string `json:"conf"`
	// ConfOld is Conf under its first key, kept because fields are never
	// renamed: "slurm.conf" has a dot, which jq users must quote.
	ConfOld    string   `json:"slurm.conf"`
	Env        string   `json:"env"`
	Partitions []string `json:"partitions"`
	Accounts   []string `json:"accounts"`
	Dir        string   `json:"dir"`
}

type UserInfo struct {
	Name       string   `json:"name"`
	Password   string   `json:"password"`
	PrivateKey string   `json:"private_key"`
	Groups     []string `json:"groups"`
	// TOTPSecret is the user's TOTP secret, base32: `oathtool --totp -b
	// SECRET` prints the current code (asked of users of the mfa rule).
	TOTPSecret string `json:"totp_secret,omitempty"`
}

type DirectoryInfo struct {
	Kind string `json:"kind"`
	// static
	File string `json:"file,omitempty"`
	// ad
	URL           string `json:"url,omitempty"`
	Realm         string `json:"realm,omitempty"`
	BaseDN        string `json:"base_dn,omitempty"`
	CAFile        string `json:"ca_file,omitempty"`
	AdminUser     string `json:"admin_user,omitempty"`
	AdminPassword string `json:"admin_password,omitempty"`
	// AdminPrincipal is the domain-qualified admin name and AdminURL a URL
	// samba-tool accepts as they stand:
	//   samba-tool user disable alice -H ADMIN_URL -U ADMIN_PRINCIPAL --password=…
	// (LDAP with SASL signing and sealing: samba-tool's LDAPS wants a CA file
	// under /var/lib/samba, which a machine without a system DC lacks.)
	AdminPrincipal string `json:"admin_principal,omitempty"`
	AdminURL       string `json:"admin_url,omitempty"`
}

// WriteJSON writes info to path (write and rename: a reader never sees half
// a file).
func (info Info) WriteJSON(path string) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// The stack's users: researchers in different groups.
var stackUsers = []struct {
	name   string
	groups []string
}{
	{"alice", []string{"nlp-lab"}},
	{"bob", []string{"vision-lab"}},
	{"carol", []string{"nlp-lab", "vision-lab"}},
	{"dave", []string{"students"}},
	{"erin", []string{"hpc-admins"}},
	{"frank", []string{mfaRule}},
}

// Rules is the stack's policy, one user per rule: admins everywhere
// without Slurm limits; an NLP lab with the GPU pool, 4 GPUs for the
// account and 2 per person; a vision lab on the dedicated H100 partition,
// jobs over a person's one GPU refused; students CPU-only, with job
// defaults and an idle timeout; staff who prove a second factor once a
// day (mfa.go). Slurm gets the same grants (`frontdoor
// slurm apply`).
var Rules = []policy.Rule{
	{Name: "admins", Groups: []string{"hpc-admins"}, Pools: []string{"general", "gpu"},
		Forwarding: []string{policy.FwdAgent, policy.FwdX11, policy.FwdLocal, policy.FwdRemote, policy.FwdStreamLocal},
		ForwardTo:  []string{policy.ForwardToAny}},
	{Name: "nlp-lab", Groups: []string{"nlp-lab"}, Pools: []string{"general", "gpu"},
		Slurm: &policy.Slurm{Account: "nlp", Partitions: []string{slurmh.PartitionGeneral, slurmh.PartitionH100},
			GPUsPerAccount: 4, GPUsPerUser: 2}},
	{Name: "vision-lab", Groups: []string{"vision-lab"}, Pools: []string{"general"},
		Slurm: &policy.Slurm{Account: "vision", Partitions: []string{slurmh.PartitionH100}, GPUsPerAccountByType: map[string]int{slurmh.GPUType: 2},
			GPUsPerUser: 1, DenyOnLimit: true}},
	{Name: "students", Groups: []string{"students"}, Pools: []string{"general"},
		Forwarding: []string{policy.FwdLocal, policy.FwdStreamLocal}, MaxSessions: 10, IdleTimeout: 2 * time.Hour,
		Slurm: &policy.Slurm{Account: "students", Partitions: []string{slurmh.PartitionGeneral}, SetJobDefaults: true}},
	{Name: mfaRule, Groups: []string{mfaRule}, Pools: []string{"general"}, MFA: policy.MFARequired, MFAWindow: 12 * time.Hour, MFASKCounts: true},
}

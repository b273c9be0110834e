// Package samba runs a real Samba Active Directory domain controller for tests
// and the local stack.
//
// Start provisions a fresh domain (samba-tool domain provision) in a state
// directory, extends the schema with the OpenSSH-LPK sshPublicKey attribute,
// installs a TLS certificate valid for the loopback address it listens on and
// starts `samba` bound to that single address. Only the LDAP service runs
// (389 + 636 + global catalog); simple binds need TLS, as on a default AD.
//
// Provisioning takes about ten seconds, so a test package should start one DC
// in TestMain and share it. Different packages must use different addresses
// (127.0.2.1, 127.0.2.2, ...) to run in parallel.
//
// The harness never touches /etc: it does not install winbind or change
// /etc/nsswitch.conf, so AD users never shadow local Unix users.
//
// Users and groups are managed over LDAPS as Administrator (accounts.go);
// the schema extension is applied with ldbmodify before the first start.
// Required Debian packages: samba, samba-ad-provision, samba-dsdb-modules,
// ldb-tools (never winbind or libnss-winbind).
//
// Typical use (TestMain or the local stack):
//
//	dc, err := samba.Start(ctx, samba.Options{Dir: dir, Addr: "127.0.2.1"})
//	defer dc.Close()
//	err = dc.CreateGroup(ctx, "gpu-users")
//	err = dc.CreateGroup(ctx, "nlp-lab", "gpu-users") // nlp-lab is nested in gpu-users
//	alice, err := dc.CreateUser(ctx, "alice", "Al1ce-Passw0rd!", "nlp-lab")
//	err = dc.SetSSHKey(ctx, "alice", "ssh-ed25519 AAAA... alice@laptop")
//	cfg := ad.DefaultConfig()
//	cfg.URLs, cfg.BaseDN, cfg.BindDN = []string{dc.URL()}, dc.BaseDN(), dc.AdminDN()
//	cfg.BindPassword, cfg.CAFile, cfg.Domain = dc.AdminPassword(), dc.CAFile(), dc.Domain()
//	cfg.Derive() // upn_suffixes from base_dn
//
// Passwords must meet AD's complexity rules: at least 7 characters from
// three of upper case, lower case, digits and symbols. From a shell, with
// the DC running: samba-tool user disable alice -H ldap://ADDR
// -U 'HPC\Administrator' --password=PASSWORD.
package samba

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-ldap/ldap/v3"
)

// Options configure a domain controller. Zero values get the defaults below.
type Options struct {
	// Dir is the state directory; everything the DC writes lives under it.
	// Required. It should be empty or not exist (an existing provision in Dir
	// is reused, which makes a restart of the local stack fast).
	Dir string
	// Addr is the loopback IPv4 address the DC binds to (default 127.0.2.1).
	Addr string
	// Realm is the Kerberos realm / DNS domain (default HPC.EXAMPLE.EDU).
	Realm string
	// Domain is the NetBIOS domain name (default HPC).
	Domain string
	// AdminPassword is the Administrator password (default a fixed test
	// password meeting AD complexity rules).
	AdminPassword string
	// Hostname is the DC's short host name (default dc1).
	Hostname string
	// Log receives samba's and samba-tool's output (default Dir/samba.log).
	Log io.Writer
	// ReadyTimeout bounds provisioning-independent start-up (default 3m: on a
	// 2-core machine running several test packages at once, samba can take
	// over a minute to answer).
	ReadyTimeout time.Duration
}

// DefaultAdminPassword is the Administrator password when none is given.
const DefaultAdminPassword = "Fr0ntd00r-Adm1n!"

// Well-known bits and values, exported so tests can assert on them.
const (
	// LDAPSPort is where the DC serves LDAP over TLS.
	LDAPSPort = 636
	// LDAPPort serves plain LDAP (StartTLS available).
	LDAPPort = 389
)

// DC is a running (or stopped) Samba AD domain controller.
type DC struct {
	opts     Options
	baseDN   string
	conf     string // smb.conf
	samLDB   string
	caFile   string
	log      io.Writer
	logClose io.Closer

	// mu protects the following.
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser // samba -i exits when it reaches EOF
	done   chan struct{}  // closed when cmd has been waited for
	paused bool
	nextID int
}

// StartAlongside starts a DC while fn runs (provisioning is what a suite's
// setup waits for longest; nodes and keys can come up meanwhile). The DC is
// returned whenever it started, even when fn failed, so the caller can stop
// it; err is the DC's failure, else fn's.
func StartAlongside(ctx context.Context, opts Options, fn func() error) (*DC, error) {
	type started struct {
		dc  *DC
		err error
	}
	dcc := make(chan started, 1)
	go func() {
		d, err := Start(ctx, opts)
		dcc <- started{d, err}
	}()
	fnErr := fn()
	st := <-dcc
	if st.err != nil {
		return nil, fmt.Errorf("cannot start the Samba AD DC (run `make deps`): %w", st.err)
	}
	return st.dc, fnErr
}

// Start provisions (if needed) and starts a DC, and returns once it answers
// LDAPS binds as Administrator.
func Start(ctx context.Context, opts Options) (*DC, error) {
	if opts.Dir == "" {
		return nil, errors.New("samba: Options.Dir is required")
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.2.1"
	}
	if ip := net.ParseIP(opts.Addr); ip == nil || ip.To4() == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("samba: Addr %q is not a loopback IPv4 address", opts.Addr)
	}
	if opts.Realm == "" {
		opts.Realm = "HPC.EXAMPLE.EDU"
	}
	opts.Realm = strings.ToUpper(opts.Realm)
	if opts.Domain == "" {
		opts.Domain = "HPC"
	}
	if opts.AdminPassword == "" {
		opts.AdminPassword = DefaultAdminPassword
	}
	if opts.Hostname == "" {
		opts.Hostname = "dc1"
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 3 * time.Minute
	}
	for _, bin := range []string{"samba", "samba-tool", "ldbmodify"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("samba: %s not found (apt-get install samba samba-ad-provision samba-dsdb-modules ldb-tools): %w", bin, err)
		}
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	dc := &DC{
		opts:   opts,
		baseDN: realmToDN(opts.Realm),
		conf:   filepath.Join(dir, "etc", "smb.conf"),
		samLDB: filepath.Join(dir, "private", "sam.ldb"),
		caFile: filepath.Join(dir, "tls", "ca.pem"),
		log:    opts.Log,
		nextID: 20001,
	}
	if dc.log == nil {
		f, err := os.OpenFile(filepath.Join(dir, "samba.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		dc.log, dc.logClose = f, f
	}
	reused := true
	if _, err := os.Stat(dc.samLDB); errors.Is(err, os.ErrNotExist) {
		reused = false
		if _, err := os.Stat("/usr/share/samba/setup/ad-schema"); err != nil {
			dc.closeLog()
			return nil, errors.New("samba: AD schema files missing (apt-get install samba-ad-provision)")
		}
		if err := dc.provision(ctx); err != nil {
			dc.closeLog()
			return nil, err
		}
	}
	if err := dc.Restart(ctx); err != nil {
		dc.closeLog()
		return nil, err
	}
	if reused {
		if err := dc.continueUIDs(ctx); err != nil {
			dc.Close()
			return nil, err
		}
	}
	return dc, nil
}

// continueUIDs makes CreateUser continue after the highest uidNumber of a
// reused provision.
func (dc *DC) continueUIDs(ctx context.Context) error {
	return dc.withAdmin(ctx, func(c *ldap.Conn) error {
		res, err := c.Search(ldap.NewSearchRequest(dc.baseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 0, 10, false,
			"(uidNumber=*)", []string{"uidNumber"}, nil))
		if err != nil {
			return err
		}
		for _, e := range res.Entries {
			if n, err := strconv.Atoi(e.GetAttributeValue("uidNumber")); err == nil && n >= dc.nextID {
				dc.nextID = n + 1
			}
		}
		return nil
	})
}

func realmToDN(realm string) string {
	parts := strings.Split(strings.ToLower(realm), ".")
	for i, p := range parts {
		parts[i] = "DC=" + p
	}
	return strings.Join(parts, ",")
}

// provision creates the domain, the schema extension and the TLS material.
func (dc *DC) provision(ctx context.Context) error {
	o := dc.opts
	// A half-finished provision from an earlier crash would make
	// samba-tool refuse; start from a clean slate.
	for _, sub := range []string{"etc", "private", "state", "cache", "bind-dns", "tls", "run"} {
		if err := os.RemoveAll(filepath.Join(o.Dir, sub)); err != nil {
			return err
		}
	}
	_, err := dc.run(ctx, "samba-tool", "domain", "provision",
		"--realm="+o.Realm, "--domain="+o.Domain, "--adminpass="+o.AdminPassword,
		"--server-role=dc", "--dns-backend=NONE", "--use-rfc2307",
		"--targetdir="+o.Dir, "--host-name="+o.Hostname, "--host-ip="+o.Addr,
		// "addr/8" makes samba take the address as given: a bare address
		// must belong to an interface, and 127.0.2.x is only routed to lo.
		"--option=interfaces="+o.Addr+"/8",
		"--option=bind interfaces only=yes",
		"--option=server services=ldap",
		"--option=pid directory="+filepath.Join(o.Dir, "run"),
		"--option=ncalrpc dir="+filepath.Join(o.Dir, "run", "ncalrpc"),
		"--option=winbindd socket directory="+filepath.Join(o.Dir, "run", "winbindd"),
		"--option=ntp signd socket directory="+filepath.Join(o.Dir, "run", "ntp_signd"),
		"--option=log file="+filepath.Join(o.Dir, "log.%m"),
		"--option=prefork children=2",
		"--option=tls enabled=yes",
		"--option=tls keyfile="+filepath.Join(o.Dir, "tls", "key.pem"),
		"--option=tls certfile="+filepath.Join(o.Dir, "tls", "cert.pem"),
		"--option=tls cafile="+filepath.Join(o.Dir, "tls", "ca.pem"),
	)
	if err != nil {
		return fmt.Errorf("samba: provision: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "run"), 0o700); err != nil {
		return err
	}
	if err := writeTLS(filepath.Join(o.Dir, "tls"), o.Addr, strings.ToLower(o.Hostname+"."+o.Realm)); err != nil {
		return fmt.Errorf("samba: tls: %w", err)
	}
	if err := dc.extendSchema(ctx); err != nil {
		return fmt.Errorf("samba: schema: %w", err)
	}
	// Passwords used by tests are not rotated; keep AD from expiring them
	// or rejecting re-use while a test resets one.
	if _, err := dc.tool(ctx, "domain", "passwordsettings", "set",
		"--max-pwd-age=0", "--min-pwd-age=0", "--history-length=0"); err != nil {
		return fmt.Errorf("samba: password settings: %w", err)
	}
	return nil
}

// extendSchema adds the OpenSSH-LPK sshPublicKey attribute and the auxiliary
// class ldapPublicKey, and makes ldapPublicKey an auxiliary class of user so
// sshPublicKey can be set on any user. Each step is its own ldbmodify run:
// the schema is reloaded between runs, and the class cannot reference the
// attribute in the same transaction that creates it.
func (dc *DC) extendSchema(ctx context.Context) error {
	schema := "CN=Schema,CN=Configuration," + dc.baseDN
	steps := []string{
		`dn: CN=sshPublicKey,` + schema + `
changetype: add
objectClass: top
objectClass: attributeSchema
attributeID: 1.3.6.1.4.1.24552.500.1.1.1.13
cn: sshPublicKey
name: sshPublicKey
lDAPDisplayName: sshPublicKey
description: OpenSSH public key
attributeSyntax: 2.5.5.10
oMSyntax: 4
isSingleValued: FALSE
`,
		`dn: CN=ldapPublicKey,` + schema + `
changetype: add
objectClass: top
objectClass: classSchema
governsID: 1.3.6.1.4.1.24552.500.1.1.2.0
cn: ldapPublicKey
name: ldapPublicKey
lDAPDisplayName: ldapPublicKey
description: OpenSSH LPK object class
subClassOf: top
objectClassCategory: 3
mayContain: sshPublicKey
defaultObjectCategory: CN=ldapPublicKey,` + schema + `
`,
		`dn: CN=User,` + schema + `
changetype: modify
add: auxiliaryClass
auxiliaryClass: ldapPublicKey
`,
	}
	for _, ldif := range steps {
		if err := dc.ldbModify(ctx, ldif, "--option=dsdb:schema update allowed=true"); err != nil {
			return err
		}
	}
	return nil
}

// Restart starts samba if it is not running (after Kill or Stop) and waits
// until it answers. It is a no-op on a running DC.
func (dc *DC) Restart(ctx context.Context) error {
	dc.mu.Lock()
	if dc.cmd != nil {
		dc.mu.Unlock()
		return nil
	}
	cmd := exec.Command("samba", "-i", "-M", "prefork", "-s", dc.conf, "--debug-stdout", "-d1")
	cmd.Stdout, cmd.Stderr = dc.log, dc.log
	// Own process group: Pause/Kill signal samba and every worker it forks.
	// Pdeathsig and the stdin pipe (samba -i exits on EOF) make sure no DC
	// outlives a crashed test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		dc.mu.Unlock()
		return err
	}
	if err := cmd.Start(); err != nil {
		dc.mu.Unlock()
		return fmt.Errorf("samba: start: %w", err)
	}
	done := make(chan struct{})
	dc.cmd, dc.stdin, dc.done, dc.paused = cmd, stdin, done, false
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	dc.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, dc.opts.ReadyTimeout)
	defer cancel()
	var lastErr error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if lastErr = dc.ping(ctx); lastErr == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("samba: exited during start-up (see %s): %v", dc.logHint(), lastErr)
		case <-ctx.Done():
			dc.Kill()
			return fmt.Errorf("samba: not ready: %v", lastErr)
		case <-tick.C:
		}
	}
}

func (dc *DC) logHint() string {
	if f, ok := dc.log.(*os.File); ok {
		return f.Name()
	}
	return "the log"
}

// ping binds as Administrator over LDAPS.
func (dc *DC) ping(ctx context.Context) error {
	conn, err := dc.Dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Bind(dc.AdminDN(), dc.opts.AdminPassword)
}

// TLSConfig returns a client TLS configuration trusting the DC's CA.
func (dc *DC) TLSConfig() (*tls.Config, error) {
	pem, err := os.ReadFile(dc.caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("samba: no certificate in CA file")
	}
	return &tls.Config{RootCAs: pool, ServerName: dc.opts.Addr, MinVersion: tls.VersionTLS12}, nil
}

// Dial opens an LDAPS connection to the DC (not bound). Handy for tests that
// want to look at the directory directly.
func (dc *DC) Dial(ctx context.Context) (*ldap.Conn, error) {
	cfg, err := dc.TLSConfig()
	if err != nil {
		return nil, err
	}
	// Generous: connect plus TLS handshake, and samba answers slowly while
	// other test packages provision their DCs on the same two cores.
	d := &net.Dialer{Timeout: 15 * time.Second}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d.Timeout {
		d.Timeout = time.Until(dl)
	}
	conn, err := ldap.DialURL(dc.URL(), ldap.DialWithDialer(d), ldap.DialWithTLSConfig(cfg))
	if err != nil {
		return nil, err
	}
	conn.SetTimeout(5 * time.Second)
	return conn, nil
}

// URL is the LDAPS URL of the DC, e.g. ldaps://127.0.2.1:636.
func (dc *DC) URL() string {
	return "ldaps://" + net.JoinHostPort(dc.opts.Addr, strconv.Itoa(LDAPSPort))
}

// LDAPURL is the plain LDAP URL (for StartTLS).
func (dc *DC) LDAPURL() string {
	return "ldap://" + net.JoinHostPort(dc.opts.Addr, strconv.Itoa(LDAPPort))
}

// Addr is the loopback address the DC listens on.
func (dc *DC) Addr() string { return dc.opts.Addr }

// CAFile is the PEM file of the CA that signed the DC's certificate.
func (dc *DC) CAFile() string { return dc.caFile }

// BaseDN is the domain's naming context, e.g. DC=hpc,DC=example,DC=edu.
func (dc *DC) BaseDN() string { return dc.baseDN }

// Realm is the upper-case realm, e.g. HPC.EXAMPLE.EDU.
func (dc *DC) Realm() string { return dc.opts.Realm }

// Domain is the NetBIOS domain, e.g. HPC.
func (dc *DC) Domain() string { return dc.opts.Domain }

// UPNSuffix is the lower-case DNS domain users' UPNs end with.
func (dc *DC) UPNSuffix() string { return strings.ToLower(dc.opts.Realm) }

// AdminUser is the administrator's sAMAccountName.
func (dc *DC) AdminUser() string { return "Administrator" }

// AdminPrincipal is the administrator as samba-tool's -U wants it, with
// the domain ("HPC\Administrator"): without it samba-tool takes the domain
// from the machine's own smb.conf and the DC answers 52e/51f.
func (dc *DC) AdminPrincipal() string { return dc.opts.Domain + `\` + dc.AdminUser() }

// AdminURL is a URL `samba-tool … -H URL -U AdminPrincipal --password=…`
// accepts as it stands: plain LDAP, which samba-tool signs and seals with
// SASL. (Its LDAPS client insists on a CA file under /var/lib/samba.)
func (dc *DC) AdminURL() string { return "ldap://" + dc.opts.Addr }

// AdminDN is the administrator's DN (usable as a service bind DN in tests).
func (dc *DC) AdminDN() string { return "CN=Administrator,CN=Users," + dc.baseDN }

// AdminPassword is the administrator's password.
func (dc *DC) AdminPassword() string { return dc.opts.AdminPassword }

// Dir is the DC's state directory.
func (dc *DC) Dir() string { return dc.opts.Dir }

// SMBConf is the DC's smb.conf, for running samba-tool by hand:
// samba-tool user list -s SMBConf -H Dir/private/sam.ldb.
func (dc *DC) SMBConf() string { return dc.conf }

// SamLDB is the DC's database, for samba-tool -H or ldbsearch -H.
func (dc *DC) SamLDB() string { return dc.samLDB }

// PID is the process id of the samba root process, 0 when not running.
func (dc *DC) PID() int {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if dc.cmd == nil {
		return 0
	}
	return dc.cmd.Process.Pid
}

// Pause stops every samba process with SIGSTOP: the DC keeps its sockets
// (connections are still accepted by the kernel) but never answers, which is
// how a hung DC looks to a client.
func (dc *DC) Pause() error { return dc.signal(syscall.SIGSTOP, true) }

// Resume continues a paused DC.
func (dc *DC) Resume() error { return dc.signal(syscall.SIGCONT, false) }

func (dc *DC) signal(sig syscall.Signal, paused bool) error {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if dc.cmd == nil {
		return errors.New("samba: not running")
	}
	if err := syscall.Kill(-dc.cmd.Process.Pid, sig); err != nil {
		return err
	}
	dc.paused = paused
	return nil
}

// Kill kills every samba process with SIGKILL (a crashed DC: connections are
// reset, the port refuses) and waits for the root process to be reaped.
func (dc *DC) Kill() {
	dc.stop(syscall.SIGKILL, 0)
}

// Stop shuts the DC down (SIGTERM, then SIGKILL after 10 s) and closes its
// log. Restart may start it again. Safe to call more than once.
func (dc *DC) Stop() {
	dc.stop(syscall.SIGTERM, 10*time.Second)
}

func (dc *DC) stop(sig syscall.Signal, grace time.Duration) {
	dc.mu.Lock()
	cmd, stdin, done, paused := dc.cmd, dc.stdin, dc.done, dc.paused
	dc.cmd, dc.stdin, dc.done, dc.paused = nil, nil, nil, false
	dc.mu.Unlock()
	if cmd == nil {
		return
	}
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, sig)
	if paused {
		_ = syscall.Kill(-pgid, syscall.SIGCONT) // a stopped process cannot act on SIGTERM
	}
	_ = stdin.Close()
	if grace > 0 {
		select {
		case <-done:
		case <-time.After(grace):
		}
	}
	// The workers may outlive the root process for a moment; make sure the
	// whole group is gone.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && syscall.Kill(-pgid, 0) == nil {
		time.Sleep(20 * time.Millisecond) // polling the kernel, not synchronising with samba
	}
}

// Close stops the DC and releases the log file.
func (dc *DC) Close() error {
	dc.Stop()
	dc.closeLog()
	return nil
}

func (dc *DC) closeLog() {
	if dc.logClose != nil {
		_ = dc.logClose.Close()
		dc.logClose = nil
	}
}

// Tool runs samba-tool against this DC's database, e.g.
// dc.Tool(ctx, "user", "list").
func (dc *DC) Tool(ctx context.Context, args ...string) ([]byte, error) {
	return dc.tool(ctx, args...)
}

func (dc *DC) tool(ctx context.Context, args ...string) ([]byte, error) {
	args = append(args, "-s", dc.conf, "-H", dc.samLDB)
	return dc.run(ctx, "samba-tool", args...)
}

func (dc *DC) ldbModify(ctx context.Context, ldif string, extra ...string) error {
	args := append([]string{"-H", dc.samLDB}, extra...)
	cmd := exec.CommandContext(ctx, "ldbmodify", args...)
	cmd.Stdin = strings.NewReader(ldif)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ldbmodify: %w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

func (dc *DC) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// samba-tool must not pick up the host's Kerberos or smb.conf.
	cmd.Env = append(os.Environ(), "KRB5_CONFIG="+filepath.Join(dc.opts.Dir, "private", "krb5.conf"))
	err := cmd.Run()
	if dc.log != nil && name != "ldbsearch" {
		fmt.Fprintf(dc.log, "+ %s %s\n%s", name, redact(args), out.String())
	}
	if err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %w: %s", name, firstWords(args), err, lastLine(out.String()))
	}
	return out.Bytes(), nil
}

// redact keeps passwords out of the log.
func redact(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--adminpass="), strings.HasPrefix(a, "--newpassword="):
			out[i] = a[:strings.IndexByte(a, '=')+1] + "***"
		case i == 3 && len(args) > 3 && args[0] == "user" && args[1] == "create":
			out[i] = "***"
		default:
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

func firstWords(args []string) string {
	if len(args) > 2 {
		args = args[:2]
	}
	return strings.Join(args, " ")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

package harness

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FreeRADIUSPath is the RADIUS server the second-factor tests and the
// local stack run (Debian package freeradius, 3.2 with its totp module).
const FreeRADIUSPath = "/usr/sbin/freeradius"

// RADIUSOptions describe one FreeRADIUS server checking TOTP codes.
type RADIUSOptions struct {
	// Dir holds its configuration, users file and log; created if missing.
	Dir string
	// Addr is the loopback host:port it listens on (UDP).
	Addr string
	// Secret is the shared secret of every client on loopback.
	Secret string
	// TOTP maps user names to their base32 TOTP secrets (NewTOTPSecret).
	TOTP map[string]string
	// StartTimeout bounds the wait for it to answer (default 15s).
	StartTimeout time.Duration
}

// RADIUS is a running FreeRADIUS.
//
// Its policy is the one a privacyIDEA-style server follows: an
// Access-Request whose User-Password is six digits is checked as a TOTP
// code at once; any other answer gets an Access-Challenge ("Verification
// code: ") with a State, and the next request carrying that State is
// checked as a code. Every response carries a Message-Authenticator
// (added in post-auth: FreeRADIUS 3.2.1 does not by itself), and every
// client must send one (require_message_authenticator).
type RADIUS struct {
	Addr    string
	Secret  string
	dir     string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	once    sync.Once
}

// NewTOTPSecret returns a random 160-bit TOTP secret, base32 as oathtool
// (`oathtool --totp -b SECRET`) and authenticator apps take it.
func NewTOTPSecret() string {
	var b [20]byte
	rand.Read(b[:])
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}

// StartRADIUS writes the configuration and starts FreeRADIUS in the
// foreground; it returns once the server answers a request.
func StartRADIUS(ctx context.Context, o RADIUSOptions) (*RADIUS, error) {
	if o.Dir == "" || o.Addr == "" || o.Secret == "" {
		return nil, errors.New("harness: RADIUSOptions needs Dir, Addr and Secret")
	}
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("harness: radius addr: %w", err)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := writeRADIUSConfig(o, host, port); err != nil {
		return nil, err
	}
	r := &RADIUS{Addr: o.Addr, Secret: o.Secret, dir: o.Dir, logPath: filepath.Join(o.Dir, "radius.log"), done: make(chan struct{})}
	logf, err := os.Create(r.logPath)
	if err != nil {
		return nil, err
	}
	// -f: foreground; no -X, which would log every User-Password.
	r.cmd = exec.Command(FreeRADIUSPath, "-f", "-d", o.Dir, "-n", "radiusd", "-l", "stdout")
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("harness: start freeradius: %w", err)
	}
	go func() {
		r.cmd.Wait()
		logf.Close()
		close(r.done)
	}()
	timeout := o.StartTimeout
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	err = WaitFor(ctx, timeout, func() error {
		select {
		case <-r.done:
			return fmt.Errorf("freeradius exited: %s", r.LogTail())
		default:
		}
		b, _ := os.ReadFile(r.logPath)
		if !strings.Contains(string(b), "Ready to process requests") {
			return errors.New("freeradius not ready yet")
		}
		return nil
	})
	if err != nil {
		r.Stop()
		return nil, fmt.Errorf("harness: freeradius on %s: %w (log: %s)", o.Addr, err, r.LogTail())
	}
	return r, nil
}

// Stop ends the server and waits for it.
func (r *RADIUS) Stop() {
	r.once.Do(func() { terminate(r.cmd.Process, r.done, 10*time.Second) })
}

// Running reports whether the server process is up.
func (r *RADIUS) Running() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// LogTail is the end of the server's log, for failure messages.
func (r *RADIUS) LogTail() string {
	b, _ := os.ReadFile(r.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// TOTPCode computes the current code for a base32 secret with the real
// oathtool (Debian package oathtool), at now plus offset.
func TOTPCode(ctx context.Context, secret string, offset time.Duration) (string, error) {
	at := time.Now().Add(offset).UTC().Format("2006-01-02 15:04:05")
	out, err := exec.CommandContext(ctx, "oathtool", "--totp", "-b", "--now", at+" UTC", secret).Output()
	if err != nil {
		return "", fmt.Errorf("oathtool: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func writeRADIUSConfig(o RADIUSOptions, host, port string) error {
	var users strings.Builder
	names := make([]string, 0, len(o.TOTP))
	for n := range o.TOTP {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&users, "%s\tTOTP-Secret := \"%s\"\n\n", n, o.TOTP[n])
	}
	if err := os.WriteFile(filepath.Join(o.Dir, "users"), []byte(users.String()), 0o600); err != nil {
		return err
	}
	conf := strings.NewReplacer("@DIR@", o.Dir, "@HOST@", host, "@PORT@", port, "@SECRET@", o.Secret).Replace(radiusdConf)
	return os.WriteFile(filepath.Join(o.Dir, "radiusd.conf"), []byte(conf), 0o600)
}

// radiusdConf is a whole FreeRADIUS 3.2 configuration: one virtual server
// doing TOTP (rlm_totp) with a challenge round, nothing under /etc.
const radiusdConf = `prefix = /usr
exec_prefix = /usr
sysconfdir = /etc
localstatedir = /var
sbindir = ${exec_prefix}/sbin
logdir = @DIR@
raddbdir = @DIR@
radacctdir = @DIR@
name = freeradius
confdir = ${raddbdir}
modconfdir = ${confdir}
run_dir = @DIR@
db_dir = ${raddbdir}
libdir = /usr/lib/freeradius
pidfile = @DIR@/radiusd.pid
max_request_time = 30
cleanup_delay = 5
max_requests = 1024
hostname_lookups = no
log {
	destination = stdout
	auth = yes
	auth_badpass = no
	auth_goodpass = no
}
security {
	allow_core_dumps = no
	max_attributes = 200
	reject_delay = 0
	status_server = yes
}
thread pool {
	start_servers = 2
	max_servers = 4
	min_spare_servers = 1
	max_spare_servers = 3
	max_requests_per_server = 0
}
client loopback {
	ipaddr = 127.0.0.0/8
	secret = @SECRET@
	require_message_authenticator = yes
}
modules {
	always handled {
		rcode = handled
	}
	always reject {
		rcode = reject
	}
	expr {
	}
	totp {
	}
	files {
		filename = @DIR@/users
	}
}
server mfa {
	listen {
		type = auth
		ipaddr = @HOST@
		port = @PORT@
	}
	authorize {
		if (!&State) {
			if (&User-Password !~ /^[0-9]{6}$/) {
				update reply {
					&Reply-Message := "Verification code: "
					&State := "%{randstr:aaaaaaaaaaaaaaaa}"
					&Message-Authenticator := 0x00
				}
				update control {
					&Response-Packet-Type := Access-Challenge
				}
				handled
			}
		}
		files
		if (!&control:TOTP-Secret) {
			reject
		}
		update request {
			&TOTP-Password := &User-Password
		}
		update control {
			&Auth-Type := totp
		}
	}
	authenticate {
		Auth-Type totp {
			totp
		}
	}
	post-auth {
		update reply {
			&Message-Authenticator := 0x00
		}
		Post-Auth-Type REJECT {
			update reply {
				&Message-Authenticator := 0x00
			}
		}
	}
}
`

// terminate sends p SIGTERM, SIGKILL after grace, and waits until done.
func terminate(p *os.Process, done <-chan struct{}, grace time.Duration) {
	p.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		p.Kill()
		<-done
	}
}

package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHDPath is the OpenSSH server every login node runs.
const SSHDPath = "/usr/sbin/sshd"

// NodeOptions describe one login node.
type NodeOptions struct {
	// Name is the node's name in the gateway configuration ("login1").
	Name string
	// Addr is the loopback address sshd listens on, "127.0.1.N". Each node
	// gets its own so that "which node am I on" shows in SSH_CONNECTION.
	Addr string
	// Port is the TCP port; 0 picks a free one.
	Port int
	// Dir holds the node's host key, sshd_config, authorized_keys and log.
	// It is created if missing.
	Dir string
	// UserCAPub is the file of the gateways' user CA public keys, trusted
	// through TrustedUserCAKeys (ClusterKeys.UserCAPub). Required.
	UserCAPub string
	// RevokedKeys, if set, is sshd's RevokedKeys file, a KRL
	// (ClusterKeys.RevokedKeys). It must exist: sshd refuses every key
	// while it cannot read it.
	RevokedKeys string
	// Gateways, if set with Frontdoor, is the gateways file the
	// principals command binds each CA to its gateway's addresses with
	// (--gateways FILE %u %F; see GatewaysLine).
	Gateways string
	// ExtraConfig lines are appended to sshd_config.
	ExtraConfig []string
	// Frontdoor, if set, is a frontdoor binary: sshd then checks every
	// certificate principal with `frontdoor authorized-principals` as the
	// deploy/ drop-in does (the node's own refusal of root and system
	// accounts). It and its directories must be root-owned and readable by
	// nobody.
	Frontdoor string
	// StartTimeout bounds the wait for sshd's banner (default 15s).
	StartTimeout time.Duration
}

// Node is a running OpenSSH sshd login node.
type Node struct {
	name    string
	host    string
	port    int
	dir     string
	logPath string
	hostKey ssh.PublicKey

	cmd  *exec.Cmd
	done chan struct{} // closed when sshd has exited
	err  error         // sshd's exit status, valid after done

	stopOnce sync.Once
}

// StartNode starts sshd and returns once it answers with an SSH banner.
// ctx bounds the start only; the node runs until Stop or Kill.
func StartNode(ctx context.Context, o NodeOptions) (*Node, error) {
	if o.Name == "" || o.Addr == "" || o.Dir == "" || o.UserCAPub == "" {
		return nil, errors.New("harness: NodeOptions needs Name, Addr, Dir and UserCAPub")
	}
	if _, err := os.Stat(SSHDPath); err != nil {
		return nil, fmt.Errorf("harness: %s missing (install openssh-server): %w", SSHDPath, err)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 15 * time.Second
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	for _, d := range []string{o.Dir, filepath.Join(o.Dir, "authorized_keys")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
	}
	keyPath := filepath.Join(o.Dir, "ssh_host_ed25519_key")
	if _, err := os.Stat(keyPath); errors.Is(err, os.ErrNotExist) {
		out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", o.Name, "-f", keyPath).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("harness: ssh-keygen for node %s: %v: %s", o.Name, err, out)
		}
	}
	pub, err := os.ReadFile(keyPath + ".pub")
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey(pub)
	if err != nil {
		return nil, fmt.Errorf("harness: node %s host key: %w", o.Name, err)
	}

	// A free port can be taken by someone else between our probe and
	// sshd's bind; try a few times when we picked the port ourselves.
	attempts := 1
	if o.Port == 0 {
		attempts = 5
	}
	var lastErr error
	for range attempts {
		port := o.Port
		if port == 0 {
			if port, err = FreePort(o.Addr); err != nil {
				return nil, err
			}
		}
		n := &Node{name: o.Name, host: o.Addr, port: port, dir: o.Dir, hostKey: hostKey,
			logPath: filepath.Join(o.Dir, "sshd.log")}
		if err := n.writeConfig(o, keyPath); err != nil {
			return nil, err
		}
		err := n.start(ctx, o.StartTimeout)
		if err == nil {
			return n, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	return nil, lastErr
}

func (n *Node) writeConfig(o NodeOptions, keyPath string) error {
	caPub, err := filepath.Abs(o.UserCAPub)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	lines := []string{
		"# Written by frontdoor's test harness for login node " + o.Name,
		"ListenAddress " + net.JoinHostPort(n.host, strconv.Itoa(n.port)),
		"HostKey " + keyPath,
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"TrustedUserCAKeys " + caPub,
		// The user's own key also works directly, for benchmarks that
		// compare the gateway with a direct login.
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys", "%u"),
		"AcceptEnv LANG LC_* VSCODE_* FRONTDOOR_* SBATCH_ACCOUNT SBATCH_PARTITION SBATCH_QOS SALLOC_ACCOUNT SALLOC_PARTITION SALLOC_QOS SLURM_ACCOUNT SLURM_PARTITION SLURM_QOS",
		"AllowTcpForwarding yes",
		"AllowStreamLocalForwarding yes",
		"AllowAgentForwarding yes",
		"StreamLocalBindUnlink yes",
		"X11Forwarding no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"UseDNS no",
		"PrintMotd no",
		"PrintLastLog no",
		"MaxStartups 1000:30:2000",
		"MaxSessions 100",
		"Subsystem sftp internal-sftp",
		"LogLevel VERBOSE",
	}
	if o.RevokedKeys != "" {
		krl, err := filepath.Abs(o.RevokedKeys)
		if err != nil {
			return err
		}
		lines = append(lines, "RevokedKeys "+krl)
	}
	if o.Frontdoor != "" {
		cmd := "AuthorizedPrincipalsCommand " + o.Frontdoor + " authorized-principals --min-uid 1000 %u"
		if o.Gateways != "" {
			gws, err := filepath.Abs(o.Gateways)
			if err != nil {
				return err
			}
			cmd = "AuthorizedPrincipalsCommand " + o.Frontdoor + " authorized-principals --min-uid 1000 --gateways " + gws + " %u %F"
		}
		lines = append(lines, cmd, "AuthorizedPrincipalsCommandUser nobody", "PermitRootLogin no")
	}
	lines = append(lines, o.ExtraConfig...)
	return os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

func (n *Node) start(ctx context.Context, timeout time.Duration) error {
	logf, err := os.OpenFile(n.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	defer logf.Close() // the child holds its own copy
	cfgPath := filepath.Join(n.dir, "sshd_config")
	if out, err := exec.CommandContext(ctx, SSHDPath, "-t", "-f", cfgPath).CombinedOutput(); err != nil {
		return fmt.Errorf("harness: node %s: sshd -t: %v: %s", n.name, err, out)
	}
	n.cmd = exec.Command(SSHDPath, "-D", "-e", "-f", cfgPath)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	// Own process group (a terminal's ^C goes to the stack, which stops
	// nodes in order), and never outlive the process that started us.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("harness: node %s: start sshd: %w", n.name, err)
	}
	n.done = make(chan struct{})
	go func() {
		n.err = n.cmd.Wait()
		close(n.done)
	}()
	err = WaitFor(ctx, timeout, func() error {
		select {
		case <-n.done:
			return nil // reported below
		default:
		}
		return probeBanner(n.Addr())
	})
	select {
	case <-n.done:
		return fmt.Errorf("harness: node %s: sshd exited (%v): %s", n.name, n.err, n.logTail())
	default:
	}
	if err != nil {
		n.Kill()
		return fmt.Errorf("harness: node %s did not answer on %s: %w; log: %s", n.name, n.Addr(), err, n.logTail())
	}
	return nil
}

// probeBanner connects to addr and checks it speaks SSH.
func probeBanner(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("%s: reading banner: %w", addr, err)
	}
	if !strings.HasPrefix(line, "SSH-2.0-") {
		return fmt.Errorf("%s: not an SSH banner: %q", addr, line)
	}
	return nil
}

func (n *Node) logTail() string {
	b, _ := os.ReadFile(n.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// Host is the node's loopback address (127.0.1.N).
func (n *Node) Host() string { return n.host }

// Port is sshd's TCP port.
func (n *Node) Port() int { return n.port }

// Addr is sshd's host:port.
func (n *Node) Addr() string { return net.JoinHostPort(n.host, strconv.Itoa(n.port)) }

// Dir is the node's state directory.
func (n *Node) Dir() string { return n.dir }

// LogPath is sshd's log file (LogLevel VERBOSE).
func (n *Node) LogPath() string { return n.logPath }

// HostKey is the node's public host key.
func (n *Node) HostKey() ssh.PublicKey { return n.hostKey }

// KnownHostsLine is the node's known_hosts entry by address,
// "[127.0.1.N]:PORT ssh-ed25519 AAAA…", for a client dialling it directly.
func (n *Node) KnownHostsLine() string {
	return KnownHostsLine(n.Addr(), n.hostKey)
}

// HostKeyPath is the node's host private key (an agent signs with it).
func (n *Node) HostKeyPath() string { return filepath.Join(n.dir, "ssh_host_ed25519_key") }

// NodeKnownHostsLine is a gateway's known_hosts entry for a login node:
// by node NAME ("login1 ssh-ed25519 AAAA…"), which is how gateways bind a
// node's host key whatever address it is reached at.
func NodeKnownHostsLine(name string, key ssh.PublicKey) string {
	return name + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
}

// KnownHostsLine formats a known_hosts entry for a host:port and key.
func KnownHostsLine(addr string, key ssh.PublicKey) string {
	host, port, _ := net.SplitHostPort(addr)
	if port != "22" {
		host = "[" + host + "]:" + port
	}
	return host + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
}

// PID is sshd's listener process ID.
func (n *Node) PID() int { return n.cmd.Process.Pid }

// Done is closed when sshd has exited.
func (n *Node) Done() <-chan struct{} { return n.done }

// Authorize lets user log in to this node directly with the given
// authorized_keys line (the gateway does not need this: it uses
// certificates).
func (n *Node) Authorize(user, authorizedKey string) error {
	p := filepath.Join(n.dir, "authorized_keys", user)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, strings.TrimSpace(authorizedKey)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Stop ends sshd with SIGTERM (SIGKILL after 5 s) and waits for it. Open
// sessions are separate processes and end with their connections.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() { terminate(n.cmd.Process, n.done, 5*time.Second) })
	return nil
}

// Kill ends sshd with SIGKILL at once (a node that dies) and waits for it.
func (n *Node) Kill() error {
	n.stopOnce.Do(func() {
		n.cmd.Process.Kill()
		<-n.done
	})
	return nil
}

// FreePort returns a TCP port that was free on host a moment ago.
func FreePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("harness: free port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

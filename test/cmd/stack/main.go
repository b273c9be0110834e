// Command stack runs frontdoor's local stack (test/stack) in the
// foreground: real OpenSSH login nodes on 127.0.1.x, local Unix users, a
// Samba AD DC, Slurm, and gateways as separate processes (bin/frontdoor).
// Once every part answers it writes STATE_DIR/stack.json (its format: the
// stack.Info type; docs/ARCHITECTURE.md) and prints how to connect. While
// it runs it holds STATE_DIR/stack.pid: a second stack is refused at once,
// naming this one. SIGINT/SIGTERM stops every process it started; nothing
// outside the state directory is removed (the Unix users stay, as the next
// run reuses them).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/frontdoor-hpc/frontdoor/test/stack"
)

func main() {
	def := os.Getenv("STATE_DIR")
	if def == "" {
		def = ".stack"
	}
	stateDir := flag.String("state-dir", def, "state directory (env STATE_DIR)")
	nodes := flag.Int("nodes", 3, "login nodes")
	gateways := flag.Int("gateways", 2, "gateways")
	sshPort := flag.Int("ssh-port", 2222, "first gateway SSH port (next gateways: +1, ...)")
	adminPort := flag.Int("admin-port", 9101, "first gateway admin port")
	bin := flag.String("bin", "bin/frontdoor", "frontdoor binary")
	dirKind := flag.String("directory", "ad", "identity source: ad (a Samba AD DC) or static (a users file)")
	adAddr := flag.String("ad-addr", "127.0.2.1", "loopback address for the Samba AD DC")
	noSlurm := flag.Bool("no-slurm", false, "run without Slurm (no accounting, no GPU use in banners)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = withParent(ctx)
	o := stack.Options{StateDir: *stateDir, Bin: *bin, Nodes: *nodes, Gateways: *gateways, SSHPort: *sshPort,
		AdminPort: *adminPort, Directory: *dirKind, ADAddr: *adAddr, NoSlurm: *noSlurm, Log: log}
	if err := run(ctx, log, o); err != nil {
		log.Error("stack failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, o stack.Options) error {
	s, err := stack.Start(ctx, o)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Info.WriteJSON(filepath.Join(s.Dir, "stack.json")); err != nil {
		return err
	}
	printHowTo(s.Info)
	<-ctx.Done()
	log.Info("stopping the stack")
	return nil
}

// withParent ends ctx when this process's parent goes away: a SIGINT or
// SIGTERM sent only to `make run` (or the shell it started) must still stop
// the stack, and make does not pass SIGINT on to its children.
func withParent(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	parent := os.Getppid()
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != parent {
					cancel()
					return
				}
			}
		}
	}()
	return ctx
}

func printHowTo(st stack.Info) {
	gw := st.Gateways[0]
	host, port, _ := net.SplitHostPort(gw.SSH)
	u := st.Users[0]
	fmt.Printf(`
frontdoor local stack is up (%d gateways, %d login nodes). State: stack.json in the state directory.

  ssh -o UserKnownHostsFile=%s -i %s -p %s %s@%s
  ssh ... -p %s %s+%s@%s            # a named node
  password logins: the passwords are in stack.json

Users: `, len(st.Gateways), len(st.Nodes), st.KnownHosts, u.PrivateKey, port, u.Name, host, port, u.Name, st.Nodes[len(st.Nodes)-1].Name, host)
	for _, u := range st.Users {
		fmt.Printf("%s %v  ", u.Name, u.Groups)
	}
	fmt.Printf(`

Admin API (the socket: you are who the kernel says; TCP: the bearer token):
  bin/frontdoor nodes --admin %s
  bin/frontdoor drain --admin %s %s
  curl --unix-socket %s http://localhost/v1/sessions
  bin/frontdoor sessions --admin %s --admin-token-file %s
  curl -H "Authorization: Bearer $(cat %s)" %s/metrics
`, gw.AdminSocket, gw.AdminSocket, st.Nodes[0].Name, gw.AdminSocket, gw.AdminURL, gw.AdminTokenFile, gw.AdminTokenFile, gw.AdminURL)
	fmt.Printf(`
User CAs (one per gateway; the nodes trust %s and read the KRL %s at every login):
`, st.TrustedUserCAKeys, st.RevokedKeys)
	for _, g := range st.Gateways {
		fmt.Printf("  %s %s\n", g.Name, g.UserCAFingerprint)
	}
	fmt.Printf("  ssh-keygen -k -u -f %s %s    # drop %s: its logins are refused from the next one\n",
		st.RevokedKeys, gw.UserCAPub, gw.Name)
	if sl := st.Slurm; sl != nil {
		fmt.Printf(`
Slurm (accounts %s, partitions %s; every user above is a Unix user here):
  %s sinfo
  %s sacctmgr show assoc format=account,user,partition,qos,grptres
  %s runuser -u alice -- sbatch --chdir=/tmp --gres=gpu:1 --wrap='sleep 60'
  bin/frontdoor slurm plan --config %s
`, strings.Join(sl.Accounts, ","), strings.Join(sl.Partitions, ","), sl.Env, sl.Env, sl.Env, gw.Config)
		if st.AWS != nil {
			fmt.Printf("  env %s bin/frontdoor usage --config %s --by account --actual\n", st.AWS.Env, gw.Config)
		}
	}
	if st.AWS != nil {
		fmt.Printf(`
AWS Budgets (a fake at %s):
  env %s bin/frontdoor budgets plan --config %s
`, st.AWS.Endpoint, st.AWS.Env, gw.Config)
	}
	if m := st.MFA; m != nil && len(m.Users) > 0 {
		fmt.Printf(`
Second factor (rule %s: %s; FreeRADIUS at %s checks TOTP codes):
  ssh -t -i %s -p %s %s@%s    # answer with: oathtool --totp -b "$(jq -r '.users[] | select(.name=="%s") | .totp_secret' stack.json)"
`, m.Rule, strings.Join(m.Users, ","), m.RADIUS, userKey(st, m.Users[0]), port, m.Users[0], host, m.Users[0])
	}
	fmt.Println("Ctrl-C stops everything.")
}

// userKey is the private key file of the stack user name.
func userKey(st stack.Info, name string) string {
	for _, u := range st.Users {
		if u.Name == name {
			return u.PrivateKey
		}
	}
	return ""
}

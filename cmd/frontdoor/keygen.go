package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/term"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/static"
)

func init() {
	register("keygen", "create the cluster host key and this gateway's own user CA (0600)", runKeygen)
	register("hash-password", "print an argon2id hash for a static users file", runHashPassword)
}

// runKeygen makes the keys a gateway needs that are not there yet: the
// cluster's host key (made once, then copied to every gateway: clients
// see one host) and this gateway's user CA (made on each gateway and
// never copied: the nodes trust every gateway's key and can drop one).
// On the second gateway, copy the host key first; keygen keeps it.
func runKeygen(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	dir := fs.String("dir", "/etc/frontdoor", "directory to write the keys to")
	host, _ := os.Hostname()
	name := fs.String("name", host, "this gateway's name (gateway.name), put in the user CA key's comment")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	for _, k := range []struct {
		file, comment, what string
		gen                 func(path, comment string) (ssh.PublicKey, error)
	}{
		{"ssh_host_ed25519_key", "frontdoor host key", "cluster host key: the same on every gateway, copy it to the others",
			ca.GenerateKeyFile},
		{"user_ca", "frontdoor user CA " + *name, "user CA of this gateway only, never copy it: add user_ca.pub to the " +
			"login nodes' TrustedUserCAKeys file next to the other gateways' keys", ca.GenerateCAKeyFile},
	} {
		path := filepath.Join(*dir, k.file)
		if _, err := os.Stat(path); err == nil {
			fmt.Printf("%s: exists, kept\n", path)
			continue
		}
		pub, err := k.gen(path, k.comment)
		if err != nil {
			return err
		}
		fmt.Printf("%s: new %s\n  %s %s\n", path, k.what, ssh.FingerprintSHA256(pub), strings.TrimSpace(string(pubLine(pub))))
	}
	return nil
}

func runHashPassword(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("hash-password", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var pw string
	if term.IsTerminal(int(os.Stdin.Fd())) {
		fmt.Fprint(os.Stderr, "Password: ")
		b, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return err
		}
		pw = string(b)
	} else {
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && line == "" {
			return fmt.Errorf("read password: %w", err)
		}
		pw = strings.TrimRight(line, "\r\n")
	}
	if pw == "" {
		return fmt.Errorf("empty password")
	}
	h, err := static.HashPassword(pw)
	if err != nil {
		return err
	}
	fmt.Println(h)
	return nil
}

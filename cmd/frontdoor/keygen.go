package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/term"

	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/static"
)

func init() {
	register("keygen", "create the cluster host key and the user CA (0600)", runKeygen)
	register("hash-password", "print an argon2id hash for a static users file", runHashPassword)
}

func runKeygen(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	dir := fs.String("dir", "/etc/frontdoor", "directory to write the keys to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	for _, k := range []struct{ file, comment, what string }{
		{"ssh_host_ed25519_key", "frontdoor host key", "host key (copy to every gateway)"},
		{"user_ca", "frontdoor user CA", "user CA (put user_ca.pub in the login nodes' TrustedUserCAKeys)"},
	} {
		path := filepath.Join(*dir, k.file)
		if _, err := os.Stat(path); err == nil {
			fmt.Printf("%s: exists, kept\n", path)
			continue
		}
		pub, err := ca.GenerateKeyFile(path, k.comment)
		if err != nil {
			return err
		}
		fmt.Printf("%s: new %s, %s\n", path, k.what, strings.TrimSpace(string(pubLine(pub))))
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

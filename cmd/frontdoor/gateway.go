package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/assembly"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/lifecycle"
)

func init() {
	registerOwnSignals("gateway", "run the SSH gateway (SIGHUP reloads, SIGUSR2 upgrades, SIGTERM drains)", runGateway)
	register("config check", "validate a gateway config file (errors with file:line)", runConfigCheck)
}

func runGateway(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	o := lifecycle.Options{}
	fs.StringVar(&o.ConfigPath, "config", config.DefaultPath, "configuration file")
	fs.StringVar(&o.PIDFile, "pid-file", "", "write the pid of the process serving the gateway here (it changes with each upgrade)")
	fs.DurationVar(&o.UpgradeTimeout, "upgrade-timeout", lifecycle.DefaultUpgradeTimeout, "how long a new binary has to become ready before the upgrade is given up")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return lifecycle.Run(ctx, o)
}

func runConfigCheck(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("config check", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: frontdoor config check FILE", errUsage)
	}
	// The same check a gateway makes when it starts or reloads.
	cfg, err := assembly.Check(fs.Arg(0))
	if err != nil {
		// One problem per line, each "file:line: key: problem", so an
		// editor can jump to it.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, line)
		}
		return errReported
	}
	fmt.Printf("%s: ok (%d nodes, %d policy rules, directory %s)\n", fs.Arg(0), len(cfg.Nodes), len(cfg.Policy.Rules), cfg.Directory.Kind)
	return nil
}

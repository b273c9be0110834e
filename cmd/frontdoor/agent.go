package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/agent"
)

func init() {
	register("agent", "run the login-node agent (health, sshd check, drain)", runAgent)
	register("agent drain", "mark this login node draining: no new sessions", func(ctx context.Context, args []string) error {
		return runAgentDrain(args, true)
	})
	register("agent undrain", "take this login node out of draining", func(ctx context.Context, args []string) error {
		return runAgentDrain(args, false)
	})
}

func runAgent(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	path := fs.String("config", agent.DefaultConfigPath, "agent configuration file")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level: %w: %w", err, errUsage)
	}
	cfg, err := agent.LoadConfig(*path)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	slog.SetDefault(log)
	return agent.Run(ctx, cfg, log)
}

// runAgentDrain only touches the drain file; the running agent notices
// within its probe interval and tells the gateways.
func runAgentDrain(args []string, drain bool) error {
	name := "agent undrain"
	if drain {
		name = "agent drain"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	path := fs.String("config", agent.DefaultConfigPath, "agent configuration file")
	reason := fs.String("reason", "", "why (kept in the drain file)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := agent.LoadConfig(*path)
	if err != nil {
		return err
	}
	if !drain {
		if err := agent.Undrain(cfg.DrainFile); err != nil {
			return err
		}
		fmt.Printf("%s: undrained\n", cfg.Node)
		return nil
	}
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	note := strings.TrimSpace(who + " " + *reason)
	if err := agent.Drain(cfg.DrainFile, note); err != nil {
		return err
	}
	fmt.Printf("%s: draining (existing sessions continue)\n", cfg.Node)
	return nil
}

package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/assembly"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/directory/static"
)

func init() {
	register("gateway", "run the SSH gateway", runGateway)
	register("config check", "validate a gateway config file (errors with file:line)", runConfigCheck)
}

func newLogger(c config.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}

func runGateway(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	path := fs.String("config", config.DefaultPath, "configuration file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log)
	slog.SetDefault(log)
	gw, err := assembly.Build(ctx, cfg, log)
	if err != nil {
		return err
	}
	if err := gw.Listen(); err != nil {
		gw.Close()
		return err
	}
	return gw.Run(ctx)
}

func runConfigCheck(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("config check", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: frontdoor config check FILE", errUsage)
	}
	cfg, err := config.Load(fs.Arg(0))
	if err == nil && cfg.Directory.Kind == "static" {
		_, err = static.New(cfg.Directory.Static.File)
	}
	// The admin API's credentials are files: a token file others may read,
	// or TLS files that do not load, would stop the gateway at start.
	if err == nil && cfg.Gateway.AdminListen != "" && cfg.Gateway.AdminTokenFile != "" {
		_, err = admin.LoadTokenFile(cfg.Gateway.AdminTokenFile)
	}
	if err == nil && cfg.Gateway.AdminListen != "" && cfg.Gateway.AdminTLSCert != "" {
		_, err = admin.TLSConfig(admin.TLSFiles{Cert: cfg.Gateway.AdminTLSCert, Key: cfg.Gateway.AdminTLSKey,
			ClientCA: cfg.Gateway.AdminClientCA}, false)
	}
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

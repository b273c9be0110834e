package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
)

func init() {
	register("discover", "show what HyperPod discovery finds now (name, instance, address, status, eligible or why not)", func(ctx context.Context, args []string) error {
		return runDiscover(ctx, args, os.Stdout)
	})
}

func runDiscover(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("discover", flag.ContinueOnError)
	path := fs.String("config", config.DefaultPath, "gateway configuration file (its discovery section)")
	format := outputFlag(fs, tableJSON...)
	const usage = "frontdoor discover [--config FILE] [-o table|json]"
	if err := parseFlags(fs, args, usage, format, tableJSON...); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	if cfg.Discovery == nil {
		return fmt.Errorf("%s has no discovery section", cfg.Path())
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	src, err := discovery.New(ctx, *cfg.Discovery, discovery.Options{Logger: log})
	if err != nil {
		return err
	}
	defer src.Close()
	if err := src.Refresh(ctx); err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	nodes := src.Nodes()
	if *format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if nodes == nil {
			nodes = []discovery.Node{}
		}
		return enc.Encode(nodes)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tINSTANCE\tADDRESS\tPOOL\tTYPE\tSTATUS\tELIGIBLE")
	for _, n := range nodes {
		el := "yes"
		if !n.Eligible {
			el = "no: " + n.Reason
		}
		addr := n.Addr
		if addr == "" {
			addr = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.InstanceID, addr, n.Pool, n.InstanceType, n.Status, el)
	}
	return tw.Flush()
}

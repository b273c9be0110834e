// Command frontdoor is the single binary of the project: gateway, agent and
// the admin tools are subcommands. This file only dispatches; each subcommand
// lives in its own file and registers itself in init.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand. run gets the arguments after the subcommand
// name and a context cancelled on SIGINT/SIGTERM, unless the command
// handles signals itself (ownSignals: the gateway, whose SIGTERM drains).
type command struct {
	summary    string
	run        func(ctx context.Context, args []string) error
	ownSignals bool
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string) error) {
	if _, dup := commands[name]; dup {
		panic("frontdoor: duplicate subcommand " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

// registerOwnSignals registers a command that handles signals itself.
func registerOwnSignals(name, summary string, run func(ctx context.Context, args []string) error) {
	register(name, summary, run)
	c := commands[name]
	c.ownSignals = true
	commands[name] = c
}

// errUsage marks errors that should be followed by the usage text and exit 2.
var errUsage = errors.New("usage")

// errReported is returned by a command that already printed its errors:
// main only exits 1.
var errReported = errors.New("errors reported")

func usage() {
	fmt.Fprintln(os.Stderr, "usage: frontdoor <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-16s %s\n", n, commands[n].summary)
	}
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	name, args := os.Args[1], os.Args[2:]
	// Two-word commands ("config check", "slurm plan") register as "config check".
	if len(args) > 0 {
		if _, ok := commands[name+" "+args[0]]; ok {
			name, args = name+" "+args[0], args[1:]
		}
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "frontdoor: unknown command %q\n\n", name)
		usage()
		os.Exit(2)
	}
	ctx, stop := context.Background(), func() {}
	if !cmd.ownSignals {
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	}
	err := cmd.run(ctx, args)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case errors.Is(err, errReported):
		os.Exit(1)
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "frontdoor %s: %v\n", name, err)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "frontdoor %s: %v\n", name, err)
		os.Exit(1)
	}
}

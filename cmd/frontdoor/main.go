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
// name and a context cancelled on SIGINT/SIGTERM.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string) error) {
	if _, dup := commands[name]; dup {
		panic("frontdoor: duplicate subcommand " + name)
	}
	commands[name] = command{summary: summary, run: run}
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

func main() { os.Exit(run(os.Args[1:])) }

// run runs the command args name and returns the exit code: 0, 1 for a
// failure, 2 for a usage mistake. A failure is one line on stderr (a
// command that printed its own errors returns errReported).
func run(args []string) int {
	if len(args) < 1 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage()
		return 2
	}
	name, args := args[0], args[1:]
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
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cmd.run(ctx, args)
	stop()
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 2
	case errors.Is(err, errReported):
		return 1
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "frontdoor %s: %s\n", name, oneLine(err.Error()))
		return 2
	default:
		fmt.Fprintf(os.Stderr, "frontdoor %s: %s\n", name, oneLine(err.Error()))
		return 1
	}
}

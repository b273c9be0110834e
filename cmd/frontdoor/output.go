package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Every command that prints data takes -o: "table" for people (the
// default), "json" for programs (the admin API's own JSON, as it is);
// some add formats of their own (usage: csv). The older -json of nodes
// and sessions still works, as -o json.

// outputFlag adds -o to fs with the formats given (the first is the
// default) and the deprecated -json alias.
func outputFlag(fs *flag.FlagSet, formats ...string) *string {
	o := fs.String("o", formats[0], "output: "+strings.Join(formats, " or "))
	if slices.Contains(formats, "json") {
		fs.BoolFunc("json", "deprecated: -o json", func(string) error { *o = "json"; return nil })
	}
	return o
}

// parseFlags parses args into fs, flags before or after the arguments
// ("explain alice -o json"), and checks -o against its formats. A mistake
// is one line (errUsage: exit 2), ending with the command's usage; -h
// prints the flags.
func parseFlags(fs *flag.FlagSet, args []string, usage string, o *string, formats ...string) error {
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(os.Stderr, "usage: "+usage)
				fs.SetOutput(os.Stderr)
				fs.PrintDefaults()
				return err
			}
			return fmt.Errorf("%w: %v; usage: %s", errUsage, err, usage)
		}
		if fs.NArg() == 0 {
			break
		}
		positional, args = append(positional, fs.Arg(0)), fs.Args()[1:]
	}
	fs.Parse(append([]string{"--"}, positional...)) // fs.Args() are the arguments now
	if o != nil && !slices.Contains(formats, *o) {
		return fmt.Errorf("%w: -o %q: want %s; usage: %s", errUsage, *o, strings.Join(formats, " or "), usage)
	}
	return nil
}

// oneLine makes an error message one line: the command's failure is one
// clear line on stderr.
func oneLine(s string) string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return l == "" }), "; ")
}

// Command gen writes docs/configuration.md (see package confdoc). Run it
// from the module's root: `make docs`.
package main

import (
	"fmt"
	"os"

	"github.com/frontdoor-hpc/frontdoor/internal/confdoc"
)

func main() {
	b, err := confdoc.Reference(".")
	if err == nil {
		err = os.WriteFile(confdoc.Path, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "confdoc:", err)
		os.Exit(1)
	}
}

package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// Suite is a test package's shared world: the programs it needs, a state
// directory, what to start once in TestMain and how to stop it. Run is
// TestMain's body: it fails loudly (never skips) on a missing program,
// keeps the state directory when setup or a test fails (or with
// FRONTDOOR_E2E_KEEP set) and says where it is.
type Suite struct {
	Name     string   // in messages and the state directory's name
	Programs []string // must be on $PATH
	// Timeout bounds Setup (default 8m: provisioning a DC can take two
	// minutes on a loaded 2-core machine).
	Timeout time.Duration
	// Setup starts the world in base (world-readable: node-side users
	// reach their directories below it), appending what stops it to
	// stops (run in reverse order). It returns a line saying what is
	// ready, for the log.
	Setup func(ctx context.Context, base string, stops *[]func()) (string, error)
}

// Run runs the suite around m.Run and returns the exit code.
func (s Suite) Run(m *testing.M) int {
	if err := Prerequisites(s.Programs...); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s: %v\n", s.Name, err)
		return 1
	}
	base, err := os.MkdirTemp("", "frontdoor-"+s.Name+"-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s: %v\n", s.Name, err)
		return 1
	}
	os.Chmod(base, 0o755)
	var stops []func()
	keep := false
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		if keep || os.Getenv("FRONTDOOR_E2E_KEEP") != "" {
			fmt.Fprintf(os.Stderr, "%s state kept in %s\n", s.Name, base)
		} else {
			os.RemoveAll(base)
		}
	}()
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 8 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	ready, err := s.Setup(ctx, base, &stops)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s setup: %v\n", s.Name, err)
		keep = true
		return 1
	}
	fmt.Fprintf(os.Stderr, "%s: %s ready in %v\n", s.Name, ready, time.Since(start).Round(time.Millisecond))
	code := m.Run()
	keep = code != 0
	return code
}

// AddrsFree fails if something already answers on host at one of ports:
// another run of the package (a second `go test`, `make test` in another
// checkout) owns the address. It says so instead of a confusing TLS or
// bind error later.
func AddrsFree(host string, ports ...int) error {
	for _, port := range ports {
		addr := net.JoinHostPort(host, fmt.Sprint(port))
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return fmt.Errorf("%s is already in use: is another run of this package (or another server) using %s?", addr, host)
		}
	}
	return nil
}
